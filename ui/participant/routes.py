"""The participant's page as routes of the app's own ASGI server (``st.App(routes=...)`` in
``app.py``; docs/participant-page.md): the page at ``/participate``, its script and style sheet
under ``/study/static/``, JSON endpoints and the event stream under ``/study/api/``.

Every act is one request that calls ``conversation.study`` once (in a worker thread) and answers
with JSON: ``200`` and the result, or an error status with the sentence the page shows
(``{"error": ..., "retry_after": ...}``):

- ``403`` the token (or the study code) is refused; ``409`` not at this stage (the room ended),
  or not now by the room's rules (``NotNow``: leaving before the minimum time, posting when it is
  another seat's turn, an attention check already closed: its reason is the sentence);
  ``413`` a message over the size limit; ``422`` a refused value (an empty message, a survey
  answer missing); ``429`` too fast (``retry_after`` seconds); ``503`` the database cannot be
  reached (the study's outage words).

The token is the person: it travels in the ``X-Participant-Token`` header of the acts and in the
``p`` parameter of the page's URL and of the stream (an ``EventSource`` sends no header), never
in a cookie, so another site cannot act for a person. Responses forbid caching, every page is
sent with a strict Content-Security-Policy (this host only: no font, icon or script elsewhere)
and no referrer (the exit's redirect does not carry the token away).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from settings import SETTINGS
from ui.participant.hub import Hub
from ui.participant.wire import message_json, view_json

STATIC = Path(__file__).resolve().with_name("static")
#: The files the page is made of, and their types (nothing else is served from the folder).
STATIC_FILES = {
    "page.js": "text/javascript; charset=utf-8",
    "page.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
TOKEN_HEADER = "X-Participant-Token"
#: The largest request body an act accepts (a message is at most ``MAX_MESSAGE_CHARS``; a survey
#: a few answers): a larger one is refused before it is read whole.
MAX_BODY_BYTES = 256 * 1024
#: Seconds between two keep-alive comments of an idle stream (proxies close silent connections).
KEEPALIVE_SECONDS = 15.0
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
NOT_VALID = (
    "This link is not valid. Open the study link you were given again, or contact the researcher."
)
NO_CODE = "This link is incomplete: it has no study code. Open the link you were given."
OUTAGE = "We lost contact with the server: keep this page open, your place is kept."


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


class Refusal(Exception):
    """An act refused: the status and the JSON body to answer with."""

    def __init__(self, status: int, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.status = status
        self.body = {"error": error, **extra}


def _refusal(exc: BaseException) -> Refusal | None:
    """The answer to an exception of ``conversation.study`` (None: not a refusal, a bug)."""
    from conversation.exceptions import ConversationValueError, StorageUnavailableError

    study = _study()
    if isinstance(exc, Refusal):
        return exc
    if isinstance(exc, study.NotAParticipant):
        return Refusal(403, NOT_VALID)
    if isinstance(exc, study.StudyRefused):
        return Refusal(403, str(getattr(exc, "message", None) or exc))
    if isinstance(exc, study.TooFast):
        wait = max(1, round(float(exc.retry_after)))
        return Refusal(
            429, f"You are sending messages quickly: wait {wait} s and send it again.",
            retry_after=wait,
        )  # fmt: skip
    if isinstance(exc, study.WrongStage):
        return Refusal(409, "This step is over: the page shows where you are now.")
    if isinstance(exc, study.NotNow):
        return Refusal(409, str(exc.reason))
    if isinstance(exc, StorageUnavailableError):
        return Refusal(503, OUTAGE)
    if isinstance(exc, ConversationValueError | ValueError):
        return Refusal(422, str(exc))
    return None


def _answer(status: int, body: Any) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=SECURITY_HEADERS)


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object, read up to :data:`MAX_BODY_BYTES`."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
        raise Refusal(413, "This is too long to send.")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise Refusal(413, "This is too long to send.")
        chunks.append(chunk)
    try:
        data = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        raise Refusal(400, "The request is not JSON.") from None
    if not isinstance(data, dict):
        raise Refusal(400, "The request must be a JSON object.")
    return data


def _token(request: Request) -> str:
    token = request.headers.get(TOKEN_HEADER) or request.query_params.get("p")
    if not token:
        raise Refusal(403, NOT_VALID)
    return token


def _signals(data: dict[str, Any]) -> dict[str, Any] | None:
    """An act's ``signals`` (checked by the study: a refused field is ``422`` naming it)."""
    signals = data.get("signals")
    if signals is not None and not isinstance(signals, dict):
        raise Refusal(422, "signals must be an object")
    return signals


class ParticipantSite:
    """The page's routes and the process's :class:`Hub` (one per process: ``app.py`` builds one).

    ``database()`` gives the process's ``storage.Database``; ``wake_runner()`` tells the
    in-process runner to look for work (after a post: the agents answer at once)."""

    def __init__(
        self,
        database: Callable[[], Any],
        *,
        wake_runner: Callable[[], None] | None = None,
        poll_seconds: float | None = None,
        presence_seconds: float | None = None,
    ) -> None:
        self.database = database
        self.wake_runner = wake_runner
        self.hub = Hub(
            database,
            poll_seconds=poll_seconds or SETTINGS.participant_poll_seconds,
            presence_seconds=presence_seconds or SETTINGS.participant_heartbeat_seconds,
        )
        self._page = (STATIC / "page.html").read_bytes()
        self._static = {name: (STATIC / name).read_bytes() for name in STATIC_FILES}
        self._etags = {n: hashlib.sha256(b).hexdigest()[:20] for n, b in self._static.items()}

    @property
    def routes(self) -> list[Route]:
        return [
            Route("/participate", self.page, methods=["GET"]),
            Route("/participate/", self.page, methods=["GET"]),
            Route("/study/static/{name}", self.static, methods=["GET"]),
            Route("/study/api/join", self.join, methods=["POST"]),
            Route("/study/api/view", self.view, methods=["GET"]),
            Route("/study/api/consent", self.consent, methods=["POST"]),
            Route("/study/api/survey", self.survey, methods=["POST"]),
            Route("/study/api/post", self.post, methods=["POST"]),
            Route("/study/api/help", self.help, methods=["POST"]),
            Route("/study/api/leave", self.leave, methods=["POST"]),
            Route("/study/api/attention", self.attention, methods=["POST"]),
            Route("/study/api/withdraw", self.withdraw, methods=["POST"]),
            Route("/study/api/events", self.events, methods=["GET"]),
        ]

    async def stop(self) -> None:
        await self.hub.stop()

    def lifespan(self, inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``inner`` (the app's own lifespan), then this site's hub stopped with the server."""

        @contextlib.asynccontextmanager
        async def both(app: Any) -> AsyncIterator[None]:
            async with inner(app):
                try:
                    yield
                finally:
                    await self.stop()

        return both

    # -- the page ---------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        return Response(self._page, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_FILES:
            return Response("not found", status_code=404, headers=SECURITY_HEADERS)
        etag = f'"{self._etags[name]}"'
        headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache", "ETag": etag}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(self._static[name], media_type=STATIC_FILES[name], headers=headers)

    # -- acts -------------------------------------------------------------------------------

    async def _act(self, call: Callable[[], Any]) -> Any:
        try:
            return await asyncio.to_thread(call)
        except Exception as exc:
            refusal = _refusal(exc)
            if refusal is None:
                raise
            raise refusal from None

    async def _handle(self, request: Request, act: Callable[[], Any]) -> Response:
        try:
            result = await act()
        except Refusal as refused:
            return _answer(refused.status, refused.body)
        return _answer(200, result)

    async def join(self, request: Request) -> Response:
        """``{study, params}`` -> ``{token}``: the person arrives by the link (the same
        ``PROLIFIC_PID`` returns to their place)."""

        async def act() -> Any:
            data = await _body(request)
            code = data.get("study")
            if not isinstance(code, str) or not code.strip():
                raise Refusal(403, NO_CODE)
            params = data.get("params") or {}
            if not isinstance(params, dict):
                raise Refusal(400, "params must be an object")
            labels = {str(k): v for k, v in params.items() if k not in ("study", "p")}
            study = _study()
            joined = await self._act(lambda: study.join(self.database(), code.strip(), labels))
            return {"token": joined.token, "resumed": joined.resumed}

        return await self._handle(request, act)

    async def view(self, request: Request) -> Response:
        async def act() -> Any:
            token = _token(request)
            study = _study()
            view = await self._act(lambda: study.participant_view(self.database(), token))
            return {
                **view_json(view),
                "messages": [message_json(m) for m in view.messages],
                "typing": list(view.typing),
            }

        return await self._handle(request, act)

    async def consent(self, request: Request) -> Response:
        async def act() -> Any:
            token, data = _token(request), await _body(request)
            agree = data.get("agree")
            if not isinstance(agree, bool):
                raise Refusal(400, "agree must be true or false")
            study = _study()
            do = study.give_consent if agree else study.decline
            await self._act(lambda: do(self.database(), token))
            self.hub.wake()
            return {"ok": True}

        return await self._handle(request, act)

    async def survey(self, request: Request) -> Response:
        async def act() -> Any:
            token, data = _token(request), await _body(request)
            answers, signals = data.get("answers"), _signals(data)
            if not isinstance(answers, dict):
                raise Refusal(400, "answers must be an object")
            study = _study()
            await self._act(
                lambda: study.answer_survey(self.database(), token, answers, signals=signals)
            )
            self.hub.wake()
            return {"ok": True}

        return await self._handle(request, act)

    async def post(self, request: Request) -> Response:
        """``{text, request_id, signals}`` -> ``{seq}``: one write; the same request id again is
        the same message (a double submit). ``signals``: how the page saw it written
        (``MessageSignalsIn``), only when the view asked for them."""
        from conversation.text.limits import MAX_MESSAGE_CHARS

        async def act() -> Any:
            token, data = _token(request), await _body(request)
            text, request_id, signals = data.get("text"), data.get("request_id"), _signals(data)
            if not isinstance(text, str):
                raise Refusal(422, "The message must be text.")
            if len(text) > MAX_MESSAGE_CHARS:
                raise Refusal(
                    413, f"This message is {len(text):,} characters long; at most "
                    f"{MAX_MESSAGE_CHARS:,} can be sent.",
                )  # fmt: skip
            if request_id is not None and not isinstance(request_id, str):
                raise Refusal(400, "request_id must be text")
            study = _study()

            def post() -> int:
                seq = study.post_as_participant(
                    self.database(), token, text, request_id=request_id, signals=signals
                )
                if self.wake_runner is not None:
                    self.wake_runner()  # the agents answer now, not at the runner's next poll
                return int(seq)

            seq = await self._act(post)
            self.hub.wake()
            return {"seq": seq}

        return await self._handle(request, act)

    async def help(self, request: Request) -> Response:
        async def act() -> Any:
            token, data = _token(request), await _body(request)
            text = data.get("text")
            if not isinstance(text, str) or not text.strip():
                raise Refusal(422, "Write your message to the researcher first.")
            study = _study()
            await self._act(lambda: study.message_researcher(self.database(), token, text.strip()))
            self.hub.wake()
            return {"ok": True}

        return await self._handle(request, act)

    async def leave(self, request: Request) -> Response:
        """The person leaves their room (``409`` with the reason before its minimums)."""

        async def act() -> Any:
            token = _token(request)
            await _body(request)
            study = _study()
            await self._act(lambda: study.leave_room(self.database(), token))
            self.hub.wake()
            return {"ok": True}

        return await self._handle(request, act)

    async def attention(self, request: Request) -> Response:
        """``{check_id, answer}``: the answer to the attention check on the page (``409`` when
        it closed or was answered; the answer's rightness is not said)."""

        async def act() -> Any:
            token, data = _token(request), await _body(request)
            check_id, answer = data.get("check_id"), data.get("answer")
            if isinstance(check_id, bool) or not isinstance(check_id, int):
                raise Refusal(400, "check_id must be a number")
            if not isinstance(answer, str):
                raise Refusal(422, "Choose one of the answers.")
            study = _study()
            call = study.answer_attention_check
            await self._act(lambda: call(self.database(), token, check_id, answer))
            self.hub.wake()
            return {"ok": True}

        return await self._handle(request, act)

    async def withdraw(self, request: Request) -> Response:
        """``{confirm: true}``: the person withdraws from the study (their data deleted); the
        page then shows the exit for withdrawn. Again after that: the same exit."""

        async def act() -> Any:
            token, data = _token(request), await _body(request)
            if data.get("confirm") is not True:
                raise Refusal(400, "confirm must be true")
            study = _study()
            await self._act(lambda: study.withdraw(self.database(), token))
            self.hub.wake()
            return {"ok": True}

        return await self._handle(request, act)

    # -- the stream -------------------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        """The page's event stream (server-sent events): the whole view first, then what
        changes (``view``, ``message``, ``typing``, ``outage``, ``gone``), a keep-alive comment
        every :data:`KEEPALIVE_SECONDS`."""
        from sse_starlette.sse import EventSourceResponse

        try:
            token = _token(request)
            stream = await self._act_open(token)
        except Refusal as refused:
            return _answer(refused.status, refused.body)

        async def items() -> Any:
            try:
                async for push in stream:
                    yield {"event": push.event, "data": json.dumps(push.data)}
            finally:
                self.hub.close(stream)

        headers = {**SECURITY_HEADERS, "X-Accel-Buffering": "no"}
        return EventSourceResponse(items(), ping=KEEPALIVE_SECONDS, headers=headers)

    async def _act_open(self, token: str) -> Any:
        try:
            return await self.hub.open(token)
        except Exception as exc:
            refusal = _refusal(exc)
            if refusal is None:
                raise
            raise refusal from None


__all__ = ["CSP", "NOT_VALID", "OUTAGE", "ParticipantSite", "Refusal", "TOKEN_HEADER"]
