"""What a self-hosted server says about itself (its context window, the models it serves), asked
once per server and remembered.

llama.cpp's server answers ``GET /props`` with ``default_generation_settings.n_ctx`` (the
``--ctx-size`` it was started with); vLLM lists ``max_model_len`` for each model in
``GET /v1/models``. Other servers report nothing, and then the setting applies (see
``settings.context_window``).

``served_models`` asks ``GET {base_url}/models`` (what a server answering for a base URL with no
model name configured serves): an answer is remembered for the process, no answer for
``RETRY_SECONDS``, each request bounded by ``MODELS_TIMEOUT_SECONDS``.

Guarantees: at most one short request per server per ``REMEMBER_SECONDS`` (an answer) or
``RETRY_SECONDS`` (no answer), each bounded by ``TIMEOUT_SECONDS``; never an exception.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

TIMEOUT_SECONDS = 1.0
MODELS_TIMEOUT_SECONDS = 1.5
REMEMBER_SECONDS = 300.0
RETRY_SECONDS = 60.0

_lock = threading.Lock()
_known: dict[tuple[str, str], tuple[float, int | None]] = {}
_served: dict[str, tuple[float, tuple[str, ...] | None]] = {}


def reported_context_window(base_url: str | None, model: str = "") -> int | None:
    """The window the server at ``base_url`` (an OpenAI-compatible ``.../v1`` URL) reports for
    ``model``, or None when it reports none or cannot be reached in time."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        return None
    key = (base_url.rstrip("/"), model)
    now = time.monotonic()
    with _lock:
        found = _known.get(key)
        if found is not None and found[0] > now:
            return found[1]
    window = _ask(key[0], model)
    with _lock:
        _known[key] = (now + (REMEMBER_SECONDS if window else RETRY_SECONDS), window)
    return window


def served_models(base_url: str | None) -> tuple[str, ...] | None:
    """The model ids the server at ``base_url`` lists (``GET {base_url}/models``), in its order;
    None when it cannot be reached in time or lists none. Asked once per process per server (an
    unanswered question again after ``RETRY_SECONDS``)."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        return None
    key = base_url.rstrip("/")
    now = time.monotonic()
    with _lock:
        found = _served.get(key)
        if found is not None and found[0] > now:
            return found[1]
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
        _served[key] = (now + RETRY_SECONDS if ids is None else float("inf"), ids)
    return ids


def forget_reported_windows() -> None:
    """Ask every server again next time (after a server was restarted with another window or
    other models)."""
    with _lock:
        _known.clear()
        _served.clear()


def _ask(base_url: str, model: str) -> int | None:
    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    props = _get_json(f"{root}/props")
    if isinstance(props, dict):
        settings = props.get("default_generation_settings") or {}
        window = _positive(settings.get("n_ctx") if isinstance(settings, dict) else None)
        if window is None:
            window = _positive(props.get("n_ctx"))
        if window is not None:
            return window
    listed = _get_json(f"{base_url}/models")
    if isinstance(listed, dict) and isinstance(listed.get("data"), list):
        for item in listed["data"]:
            if isinstance(item, dict) and (not model or item.get("id") == model):
                window = _positive(item.get("max_model_len"))
                if window is not None:
                    return window
    return None


def _get_json(url: str, timeout: float = TIMEOUT_SECONDS) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the room's own server URL
            if response.status != 200:
                return None
            return json.loads(response.read(1_000_000))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


__all__ = ["forget_reported_windows", "reported_context_window", "served_models"]
