"""A tiny OpenAI-compatible HTTP server for end-to-end tests (stdlib only, 127.0.0.1, port 0).

It implements ``POST /v1/chat/completions`` and ``GET /v1/models``, and with ``n_ctx`` llama.cpp's
``GET /props`` (its context window). Each chat request takes the
next scripted ``Reply`` (status, body or text, delay, headers); when the script is empty it answers
200 with ``default_text``. Every request is recorded (path, JSON body, headers) so a test can count
attempts and read exactly what the client sent.

A request with ``"stream": true`` is answered with server-sent events, as OpenAI and llama.cpp's
server send them: one ``chat.completion.chunk`` per piece of ``Reply.chunks`` (default: the text's
words), ``chunk_delay`` seconds apart, then a usage chunk when the client asked for one
(``stream_options.include_usage``) and ``stream_usage`` is true (llama.cpp's server never sends
it), then ``data: [DONE]`` (``Reply.cut``: nothing after the headers). ``streams`` records each stream: the pieces sent, and whether the
client went away before the end (``abandoned``, set when a write fails).

    with OpenAICompatibleServer() as server:
        server.script(Reply(status=503), Reply(text="hello"))
        ... base_url=server.base_url ...
        assert len(server.requests) == 2
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a chat completion with ``text``, or ``status`` with an error body."""

    text: str = "ok"
    status: int = 200
    body: dict[str, Any] | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 11
    completion_tokens: int = 7
    chunks: tuple[str, ...] | None = None
    chunk_delay: float = 0.0
    stream_usage: bool = True
    #: A stream closed right after its headers, no chunk sent (a server going down or coming up).
    cut: bool = False

    def pieces(self) -> list[str]:
        """What a streamed answer sends: ``chunks``, else the text's words (spaces kept)."""
        if self.chunks is not None:
            return list(self.chunks)
        words = self.text.split(" ")
        return [word if i == 0 else " " + word for i, word in enumerate(words)]


@dataclass
class Stream:
    """One streamed answer as the server saw it."""

    sent: list[str] = field(default_factory=list)
    finished: bool = False
    abandoned: bool = False
    gone: threading.Event = field(default_factory=threading.Event)  # set when it ends either way


@dataclass(frozen=True)
class Request:
    """What the server received."""

    method: str
    path: str
    body: Any
    headers: dict[str, str]


class OpenAICompatibleServer:
    """Start with ``start()`` or a ``with`` block; ``base_url`` ends in ``/v1``."""

    def __init__(
        self,
        default_text: str = "ok",
        model_ids: tuple[str, ...] = ("tiny",),
        n_ctx: int | None = None,
        default_delay: float = 0.0,
        rate_limit: tuple[int, float] | None = None,
        retry_after: float = 1.0,
    ) -> None:
        """``rate_limit=(n, seconds)``: a chat request beyond ``n`` in any ``seconds`` (sliding
        window) is answered 429 with ``Retry-After: retry_after``, as a hosted provider does; the
        times of the requests it served are in ``served_at`` and the refused ones counted in
        ``throttled``."""
        self.default_text = default_text
        self.rate_limit = rate_limit
        self.retry_after = retry_after
        self.served_at: list[float] = []  # time.monotonic() of each chat request let through
        self.throttled = 0
        self.default_delay = default_delay
        self.model_ids = model_ids
        self.n_ctx = n_ctx
        self._script: deque[Reply] = deque()
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._in_flight = 0
        self.max_in_flight = 0  # the most chat requests it was answering at once
        self._streams: list[Stream] = []
        self._thread: threading.Thread | None = None

    # -- control ------------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next chat requests, in order."""
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    @property
    def streams(self) -> list[Stream]:
        with self._lock:
            return list(self._streams)

    def _new_stream(self) -> Stream:
        stream = Stream()
        with self._lock:
            self._streams.append(stream)
        return stream

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    @property
    def chat_requests(self) -> list[Request]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the server is not running; call start() first")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self, port: int = 0) -> OpenAICompatibleServer:
        """Listen on ``port`` (0: any free port; a stopped server's port to restart it there)."""
        handler = _handler_for(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAICompatibleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- behaviour ----------------------------------------------------------------------------

    def _log(self, request: Request) -> None:
        """Record a request that takes no scripted reply (GETs: models, props)."""
        with self._lock:
            self._requests.append(request)

    def _record(self, request: Request) -> Reply:
        with self._lock:
            self._requests.append(request)
            if self.rate_limit is not None and request.path.endswith("/chat/completions"):
                limit, window = self.rate_limit
                now = time.monotonic()
                if sum(1 for t in self.served_at if t > now - window) >= limit:
                    self.throttled += 1
                    return Reply(status=429, headers={"Retry-After": f"{self.retry_after:g}"})
                self.served_at.append(now)
            if self._script:
                return self._script.popleft()
            return Reply(text=self.default_text, delay=self.default_delay)

    def _completion(self, reply: Reply, body: Any) -> dict[str, Any]:
        model = body.get("model", "tiny") if isinstance(body, dict) else "tiny"
        return {
            "id": f"chatcmpl-{len(self._requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            },
        }


def _handler_for(server: OpenAICompatibleServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            return

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            server._log(Request("GET", self.path, None, dict(self.headers)))
            if self.path.rstrip("/") == "/v1/models":
                data = [{"id": m, "object": "model", "owned_by": "tests"} for m in server.model_ids]
                self._send(200, {"object": "list", "data": data})
            elif self.path.rstrip("/") == "/props" and server.n_ctx is not None:
                self._send(200, {"default_generation_settings": {"n_ctx": server.n_ctx}})
            else:
                self._send(
                    404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
                )

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            if self.path.rstrip("/") != "/v1/chat/completions":
                server._record(Request("POST", self.path, body, dict(self.headers)))
                self._send(
                    404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
                )
                return
            reply = server._record(Request("POST", self.path, body, dict(self.headers)))
            server._enter()
            try:
                if reply.delay:
                    time.sleep(reply.delay)
            finally:
                server._leave()
            if reply.status == 200 and reply.body is None:
                if isinstance(body, dict) and body.get("stream"):
                    server._enter()  # a stream is in flight until its last chunk
                    try:
                        self._stream(reply, body)
                    finally:
                        server._leave()
                else:
                    self._send(200, server._completion(reply, body), reply.headers)
                return
            payload = reply.body or {
                "error": {
                    "message": f"scripted status {reply.status}",
                    "type": "server_error" if reply.status >= 500 else "invalid_request_error",
                    "code": None,
                }
            }
            self._send(reply.status, payload, reply.headers)

        def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
            stream = server._new_stream()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            base = {
                "id": f"chatcmpl-{len(server.requests)}",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model", "tiny"),
            }

            def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
                return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

            def event(payload: Any) -> None:
                data = (
                    b"data: "
                    + (payload if isinstance(payload, bytes) else json.dumps(payload).encode())
                    + b"\n\n"
                )
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            try:
                if reply.cut:
                    self.wfile.write(b"0\r\n\r\n")  # the end of the body: nothing in it
                    self.wfile.flush()
                    self.close_connection = True
                    return
                event(choice({"role": "assistant", "content": ""}))
                for piece in reply.pieces():
                    if reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                    event(choice({"content": piece}))
                    stream.sent.append(piece)
                event(choice({}, "stop"))
                options = body.get("stream_options") or {}
                if reply.stream_usage and options.get("include_usage"):
                    usage = {
                        "prompt_tokens": reply.prompt_tokens,
                        "completion_tokens": reply.completion_tokens,
                        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                    }
                    event({**base, "choices": [], "usage": usage})
                event(b"[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                stream.finished = True
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                stream.abandoned = True
                self.close_connection = True
            finally:
                stream.gone.set()

    return Handler


__all__ = ["OpenAICompatibleServer", "Reply", "Request", "Stream"]
