"""Typed retries for model calls, and the one backoff formula every wait between tries uses.

A call is retried only when its exception says, by type or by HTTP status, that trying again can
help: a connection error, a timeout, or a status in the allowed set (502/503/504 by default, the
seed's rule; rooms add 429, honouring ``Retry-After``). The text of an error message is never
consulted.

Every wait before trying a call again is ``Backoff.delay`` (docs/design.md, "Typed retries"): the
server's ``Retry-After`` when it sent one (at most ``MAX_RETRY_AFTER_SECONDS``); else
``first * factor**(tries-1)``, at most ``cap``; and never less than a timed-out request's
``min_backoff`` (``calls.ModelTimeoutError``: a self-hosted server is still working on the
abandoned request, llama.cpp serves one at a time), growing the same way up to
``MAX_TIMEOUT_BACKOFF_SECONDS``, instead of queueing a retry behind it at once. The three waits
around a room's call are this formula with their own numbers:

- a transient failure: ``Backoff(first=<the room's retry.base_delay>)``, a try of the turn's
  retry budget counted (``rooms.engine.asking``, whose tries are stored on the turn so a restart
  keeps them);
- a refused or reset connection (``is_server_unavailable``: the server is restarting or down,
  decided by the exception's type and its causes' types) is an outage, not a failed try: the room
  waits ``OUTAGE_WAIT`` (2 s, doubling, at most 30 s) for up to ``outage_seconds()``
  (``ROOMS_MODEL_OUTAGE_SECONDS``, default 600) without spending its retry budget;
- a 429 under a configured rate limit pauses the provider's bucket for every process
  ``RATE_PAUSE`` (1 s, doubling, at most 60 s, or ``Retry-After``): ``models.rate_limit``.

The in-process loops are tenacity's (``async_call_with_retries``, the rate limit's pause): the
original exception is re-raised after the last attempt, with a note naming what was being done;
there is no sleep after the last attempt, and the sleep is ``asyncio.sleep`` (cancelling the loop
cancels the wait).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from conversation.exceptions import ConversationValueError
from settings import SETTINGS, env_name

T = TypeVar("T")

GATEWAY_STATUSES = frozenset({502, 503, 504})
#: HTTP statuses a room's model call retries (rate limited, gateway errors); not room statuses.
TRANSIENT_HTTP_STATUSES = frozenset({429, 502, 503, 504})
MAX_RETRY_AFTER_SECONDS = 60.0
MAX_TIMEOUT_BACKOFF_SECONDS = 900.0
OUTAGE_ENV = env_name("model_outage_seconds")
SERVER_UNAVAILABLE = "server_unavailable"  # the error code of a turn waiting for its server


def _transient_types() -> tuple[type[BaseException], ...]:
    """Connection and timeout exception types of the HTTP stacks EDSL uses, when installed."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError, asyncio.TimeoutError]
    try:
        import httpx

        found += [httpx.TransportError, httpx.TimeoutException]
    except ImportError:  # pragma: no cover - httpx comes with edsl
        pass
    try:
        import aiohttp

        found += [aiohttp.ClientConnectionError, aiohttp.ServerTimeoutError]
    except ImportError:  # pragma: no cover - aiohttp comes with edsl
        pass
    try:
        import openai

        found += [openai.APIConnectionError, openai.APITimeoutError]
    except ImportError:  # pragma: no cover - openai is in requirements.txt
        pass
    return tuple(found)


_TRANSIENT_TYPES = _transient_types()


def _unavailable_types() -> tuple[type[BaseException], ...]:
    """Exception types that mean nothing answers at the server's address (refused, reset,
    dropped before answering), of the HTTP stacks EDSL uses, when installed."""
    found: list[type[BaseException]] = [ConnectionRefusedError, ConnectionResetError]
    try:
        import httpx

        found += [httpx.ConnectError, httpx.RemoteProtocolError]
    except ImportError:  # pragma: no cover - httpx comes with edsl
        pass
    try:
        import aiohttp

        found += [aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError]
    except ImportError:  # pragma: no cover - aiohttp comes with edsl
        pass
    return tuple(found)


_UNAVAILABLE_TYPES = _unavailable_types()


def is_server_unavailable(exc: BaseException) -> bool:
    """True when the model server refused or reset the connection (it is down or restarting):
    the exception or one of its causes (``__cause__``/``__context__``) is of such a type, e.g.
    ``openai.APIConnectionError`` raised from ``httpx.ConnectError``. Never decided by text; a
    timeout is not an outage (the server may be busy)."""
    return unavailable_cause(exc) is not None


def unavailable_cause(exc: BaseException) -> BaseException | None:
    """The link of ``exc``'s chain that says the server is unavailable (the true reason, which
    a client may wrap in a timeout error), or None."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < 16:
        seen.add(id(link))
        if isinstance(link, _UNAVAILABLE_TYPES):
            return link
        link = link.__cause__ or link.__context__
    return None


def outage_seconds() -> float:
    """How long a room waits for an unavailable model server before its turn fails
    (``ROOMS_MODEL_OUTAGE_SECONDS``, read at each call; default 600)."""
    return SETTINGS.model_outage_seconds


@dataclass
class Outage:
    """One call's wait for an unavailable server: when it began (monotonic) and the tries since."""

    started: float | None = None
    tries: int = 0

    def waited(self) -> float:
        """Seconds since the first refused try (0 at the first)."""
        now = time.monotonic()
        if self.started is None:
            self.started = now
        return now - self.started


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (``status_code``, ``status``, or its ``response``)."""
    for holder in (exc, getattr(exc, "response", None)):
        if holder is None:
            continue
        for attribute in ("status_code", "status"):
            value = getattr(holder, attribute, None)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def is_transient(exc: BaseException, statuses: frozenset[int] = GATEWAY_STATUSES) -> bool:
    """True when trying the call again may succeed: decided by type and status, never by text."""
    if isinstance(exc, asyncio.CancelledError):
        return False
    status = http_status(exc)
    if status is not None:
        return status in statuses
    return isinstance(exc, _TRANSIENT_TYPES)


def retry_after_seconds(exc: BaseException) -> float | None:
    """A ``Retry-After`` header in seconds, when the exception's response carries one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


def validate_retry_settings(max_retries: object, retry_delay: object) -> tuple[int, float]:
    """Check ``max_retries`` (total attempts, >= 1) and ``retry_delay`` (seconds, >= 0)."""
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 1:
        raise ConversationValueError(
            f"max_retries must be a positive integer (total attempts), got {max_retries!r}; "
            "use 1 for no retries"
        )
    if (
        not isinstance(retry_delay, int | float)
        or isinstance(retry_delay, bool)
        or retry_delay != retry_delay
        or retry_delay < 0
    ):
        raise ConversationValueError(
            f"retry_delay must be a non-negative number of seconds, got {retry_delay!r}"
        )
    return max_retries, float(retry_delay)


@dataclass(frozen=True, slots=True)
class Backoff:
    """The one backoff formula (see the module docstring): ``first`` seconds before the second
    try, times ``factor`` per try after it, at most ``cap``."""

    first: float
    cap: float = MAX_RETRY_AFTER_SECONDS
    factor: float = 2.0

    def delay(self, tries: int, exc: BaseException | None = None) -> float:
        """Seconds to wait after ``tries`` failed tries (1: the first failed), ``exc`` the last
        failure: its ``Retry-After``, else the capped growth, at least its ``min_backoff``."""
        hinted = retry_after_seconds(exc) if exc is not None else None
        if hinted is not None:
            return hinted
        growth = self.factor ** max(tries - 1, 0)
        delay = min(self.first * growth, self.cap) if self.first else 0.0
        floor = getattr(exc, "min_backoff", None)
        if isinstance(floor, int | float) and not isinstance(floor, bool) and floor > 0:
            delay = max(delay, min(floor * growth, MAX_TIMEOUT_BACKOFF_SECONDS))
        return delay

    def wait(self, state: RetryCallState) -> float:
        """The delay as tenacity asks it (``wait=backoff.wait``): after the failed attempt."""
        failed = state.outcome.exception() if state.outcome is not None else None
        return self.delay(state.attempt_number, failed)


#: Waiting for a model server that refuses or resets connections (no try counted).
OUTAGE_WAIT = Backoff(first=2.0, cap=30.0)
#: A provider's bucket paused by a 429 under a configured rate limit (every process waits).
RATE_PAUSE = Backoff(first=1.0, cap=60.0)


def _annotate(exc: BaseException, describe: str, attempts: int) -> None:
    exc.add_note(f"while {describe} (attempt {attempts})")


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)  # looked up at each call: tests replace asyncio.sleep


async def async_call_with_retries(
    fn: Callable[[], Awaitable[T]],
    *,
    max_attempts: int,
    delay: float,
    describe: str,
    statuses: frozenset[int] = GATEWAY_STATUSES,
    exponential: bool = False,
) -> T:
    """Await ``fn()`` until it succeeds, retrying transient failures (``is_transient`` with
    ``statuses``) up to ``max_attempts`` in all, ``delay`` seconds apart (growing when
    ``exponential``; ``Retry-After`` when the server sent one). The last failure is raised with
    a note naming ``describe`` and the attempt."""
    retrying = AsyncRetrying(
        retry=retry_if_exception(lambda exc: is_transient(exc, statuses)),
        stop=stop_after_attempt(max_attempts),
        wait=Backoff(first=delay, cap=float("inf"), factor=2.0 if exponential else 1.0).wait,
        sleep=_sleep,
        reraise=True,
    )
    try:
        return await retrying(fn)
    except Exception as exc:
        _annotate(exc, describe, retrying.statistics.get("attempt_number", 1))
        raise


__all__ = [
    "GATEWAY_STATUSES",
    "TRANSIENT_HTTP_STATUSES",
    "OUTAGE_ENV",
    "OUTAGE_WAIT",
    "RATE_PAUSE",
    "Backoff",
    "Outage",
    "SERVER_UNAVAILABLE",
    "http_status",
    "is_server_unavailable",
    "is_transient",
    "outage_seconds",
    "unavailable_cause",
    "retry_after_seconds",
    "validate_retry_settings",
    "async_call_with_retries",
]
