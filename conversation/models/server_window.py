"""What a self-hosted server says about itself (its context window, the models it serves), asked
once per server and remembered; and whether it is up again after an outage.

llama.cpp's server answers ``GET /props`` with ``default_generation_settings.n_ctx`` (the
``--ctx-size`` it was started with); vLLM lists ``max_model_len`` for each model in
``GET /v1/models``. Other servers report nothing (llama-cpp-python's answers ``/props`` with 404
and lists no window), and then the setting applies (see ``settings.context_window``).

``served_models`` asks ``GET {base_url}/models`` (what a server answering for a base URL with no
model name configured serves).

Guarantees:
- a server that answered (with its window, with nothing, or with a 404) is not asked again by
  this process (``forget_reported_windows`` asks again); one that could not be reached is asked
  again after ``RETRY_SECONDS``; each request is bounded by ``TIMEOUT_SECONDS``
  (``MODELS_TIMEOUT_SECONDS`` for the model list); never an exception;
- never while a call of this process to that server is in flight (``limits.calls_in_flight``):
  llama-cpp-python's server interrupts a running completion when another request arrives (its
  ``interrupt_requests``, on by default), which cut a room's stream and read as an outage. The
  question is then left unanswered (not remembered) and the setting applies to that call. Start
  such a server with ``--interrupt_requests False`` (docs/models.md) for other processes' sake.

``wait_until_up(base_url, seconds)``: a room waiting out an outage of its server sleeps the
backoff step, but checks every ``UP_CHECK_SECONDS`` whether the server accepts connections again
(a TCP connection opened and closed: no HTTP request, so nothing a server could take for a call
and nothing it interrupts), and ends the wait at once when it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Final
from urllib.parse import urlsplit

from conversation.models.limits import calls_in_flight

TIMEOUT_SECONDS = 1.0
MODELS_TIMEOUT_SECONDS = 1.5
RETRY_SECONDS = 60.0
#: How often a room waiting for its server checks whether it is up again.
UP_CHECK_SECONDS = 1.0

#: What ``_get_json`` returns when nothing answered at the address (refused, timed out).
_UNREACHED: Final = object()

_lock = threading.Lock()
_known: dict[tuple[str, str], tuple[float, int | None]] = {}
_served: dict[str, tuple[float, tuple[str, ...] | None]] = {}


def reported_context_window(base_url: str | None, model: str = "") -> int | None:
    """The window the server at ``base_url`` (an OpenAI-compatible ``.../v1`` URL) reports for
    ``model``, or None when it reports none, cannot be reached in time, or is busy with a call
    of this process (see the module docstring)."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        return None
    key = (base_url.rstrip("/"), model)
    now = time.monotonic()
    with _lock:
        found = _known.get(key)
        if found is not None and found[0] > now:
            return found[1]
    if calls_in_flight(key[0]):
        return None  # never probe a server that is answering us (it would cut the answer)
    answered, window = _ask(key[0], model)
    with _lock:
        _known[key] = (float("inf") if answered else now + RETRY_SECONDS, window)
    return window


def served_models(base_url: str | None) -> tuple[str, ...] | None:
    """The model ids the server at ``base_url`` lists (``GET {base_url}/models``), in its order;
    None when it cannot be reached in time, lists none, or is busy with a call of this process.
    Asked once per process per server (one that could not be reached again after
    ``RETRY_SECONDS``)."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        return None
    key = base_url.rstrip("/")
    now = time.monotonic()
    with _lock:
        found = _served.get(key)
        if found is not None and found[0] > now:
            return found[1]
    if calls_in_flight(key):
        return None
    listed = _get_json(f"{key}/models", MODELS_TIMEOUT_SECONDS)
    ids: tuple[str, ...] | None = None
    if isinstance(listed, dict) and isinstance(listed.get("data"), list):
        ids = (
            tuple(
                item["id"]
                for item in listed["data"]
                if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"].strip()
            )
            or None
        )
    with _lock:
        _served[key] = (now + RETRY_SECONDS if listed is _UNREACHED else float("inf"), ids)
    return ids


async def accepts_connections(base_url: str | None, timeout: float = TIMEOUT_SECONDS) -> bool:
    """Whether something accepts a TCP connection at ``base_url``'s host and port (no request
    is sent). False for a URL without a host."""
    if not isinstance(base_url, str):
        return False
    parts = urlsplit(base_url)
    if not parts.hostname:
        return False
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(parts.hostname, port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def wait_until_up(base_url: str | None, seconds: float) -> bool:
    """Sleep ``seconds``, or less: until the server at ``base_url`` accepts connections again
    (checked every ``UP_CHECK_SECONDS``). True when it ended early because the server is up."""
    if not isinstance(base_url, str) or not base_url:
        await asyncio.sleep(seconds)
        return False
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        await asyncio.sleep(min(UP_CHECK_SECONDS, left))
        if time.monotonic() < deadline and await accepts_connections(base_url):
            return True
    return False


def forget_reported_windows() -> None:
    """Ask every server again next time (after a server was restarted with another window or
    other models)."""
    with _lock:
        _known.clear()
        _served.clear()


def _ask(base_url: str, model: str) -> tuple[bool, int | None]:
    """``(answered, window)``: whether the server answered at all (a 404 is an answer), and the
    window it reports."""
    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    props = _get_json(f"{root}/props")
    if isinstance(props, dict):
        settings = props.get("default_generation_settings") or {}
        window = _positive(settings.get("n_ctx") if isinstance(settings, dict) else None)
        if window is None:
            window = _positive(props.get("n_ctx"))
        if window is not None:
            return True, window
    if props is _UNREACHED:
        return False, None  # nothing answers there: no second request now
    listed = _get_json(f"{base_url}/models")
    if isinstance(listed, dict) and isinstance(listed.get("data"), list):
        for item in listed["data"]:
            if isinstance(item, dict) and (not model or item.get("id") == model):
                window = _positive(item.get("max_model_len"))
                if window is not None:
                    return True, window
    return listed is not _UNREACHED, None


def _get_json(url: str, timeout: float = TIMEOUT_SECONDS) -> Any:
    """The JSON the server answered ``url`` with; None for any other answer (a 404, not JSON);
    ``_UNREACHED`` when nothing answered."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the room's own server URL
            if response.status != 200:
                return None
            return json.loads(response.read(1_000_000))
    except urllib.error.HTTPError:
        return None  # an answer: the server is there, it has no such page
    except ValueError:
        return None
    except (OSError, urllib.error.URLError):
        return _UNREACHED


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


__all__ = [
    "UP_CHECK_SECONDS",
    "accepts_connections",
    "forget_reported_windows",
    "reported_context_window",
    "served_models",
    "wait_until_up",
]
