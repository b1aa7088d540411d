"""The cluster-wide rate limiter: requests and tokens per minute per provider (or per model),
shared by every worker process and the app through the database (``storage.models.rate_limits``).

Beside the per-process in-flight limit (:mod:`conversation.models.limits`), which bounds how many
calls one process has open, this bounds how fast all of them together send: a hosted provider's
limits are per key, whatever the number of machines. Before a call, the caller takes a request and
its estimated tokens from the provider's bucket (waiting, without blocking its event loop, until
the bucket holds them); after it, the estimate is corrected with the reported usage (a cached
answer gives everything back). A 429 seen by any process pauses the bucket for all of them
(``Retry-After`` when the provider sent one) and the call is asked again: while a limit is
configured, "too many requests" costs time, not a try of the turn's retry budget, for up to
``outage_seconds()`` (``ROOMS_MODEL_OUTAGE_SECONDS``), after which the 429 goes to the usual
retry rules.

Configuration: ``ROOMS_RATE_LIMITS``, entries separated by ``;``, each ``PATTERN=LIMITS``:

- ``PATTERN``: an EDSL service (``openai``: one bucket for every model of the provider; a server
  at its own ``base_url`` is its own provider) or ``service/model`` (``openai/gpt-4o``: that model's
  own bucket). The most specific pattern wins.
- ``LIMITS``: comma-separated ``<n>rpm`` (requests per minute), ``<n>tpm`` (tokens per minute) and
  optionally ``<n>s``, the burst: how many seconds of rate a full bucket holds (default 1 s, so a
  per-minute limit is also respected over any second, as providers enforce it).

Read at each call, like the in-flight limits: a changed setting applies to the next call.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_delay

import storage
from conversation.boundary import storage_errors
from conversation.exceptions import ConversationValueError
from conversation.models.limits import provider_key
from conversation.models.retries import RATE_PAUSE, http_status, outage_seconds
from settings import SETTINGS, env_name

log = logging.getLogger(__name__)

RATE_LIMITS_ENV = env_name("rate_limits")
_ITEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(rpm|tpm|s)\s*$", re.I)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Usage:
    """What a call actually used, for correcting the estimate taken before it."""

    requests: float
    tokens: float


def parse_rate_limits(text: str) -> dict[str, storage.RateLimit]:
    """``PATTERN=LIMITS; ...`` (see the module docstring) as ``{pattern: RateLimit}``."""
    limits: dict[str, storage.RateLimit] = {}
    for entry in filter(str.strip, text.split(";")):
        pattern, sep, spec = entry.partition("=")
        pattern = pattern.strip()
        if not sep or not pattern or not spec.strip():
            raise ConversationValueError(
                f"{RATE_LIMITS_ENV}: {entry.strip()!r} must be PATTERN=LIMITS, "
                "e.g. 'openai/gpt-4o=500rpm,30000tpm'"
            )
        values: dict[str, float] = {}
        for item in spec.split(","):
            match = _ITEM.match(item)
            if match is None:
                raise ConversationValueError(
                    f"{RATE_LIMITS_ENV}: {item.strip()!r} in {pattern!r} is not a rate; use "
                    "'<n>rpm', '<n>tpm' or '<n>s' (the burst), e.g. '500rpm,30000tpm'"
                )
            values[match.group(2).lower()] = float(match.group(1))
        if not values.get("rpm") and not values.get("tpm"):
            raise ConversationValueError(
                f"{RATE_LIMITS_ENV}: {pattern!r} needs a positive rpm or tpm, e.g. '60rpm'"
            )
        try:
            limits[pattern] = storage_errors(
                storage.RateLimit,
                rpm=values.get("rpm"),
                tpm=values.get("tpm"),
                burst_seconds=values.get("s", 1.0),
            )
        except ConversationValueError as exc:
            raise ConversationValueError(f"{RATE_LIMITS_ENV}: {pattern!r}: {exc}") from None
    return limits


@functools.lru_cache(maxsize=8)
def _parsed(raw: str) -> dict[str, storage.RateLimit]:
    # read on every call (a changed setting applies at once), parsed once per distinct value
    return parse_rate_limits(raw)


def bucket_for(model: Any) -> tuple[str, storage.RateLimit] | None:
    """The bucket key and limit ``model``'s calls count against, or None (no limit set)."""
    provider = provider_key(model)
    raw = SETTINGS.rate_limits if provider is not None else None
    if not raw or provider is None:
        return None
    limits = _parsed(raw)
    service = getattr(model, "_inference_service_", None)
    name = getattr(model, "model", None)
    if isinstance(name, str) and f"{service}/{name}" in limits:
        return f"{provider}/{name}", limits[f"{service}/{name}"]
    if service in limits:
        return provider, limits[str(service)]
    return None


async def within_rate(
    db: storage.Database,
    model: Any,
    ask: Callable[[], Awaitable[T]],
    *,
    requests: float = 1.0,
    tokens: float = 0.0,
    used: Callable[[T], Usage | None] | None = None,
) -> T:
    """``await ask()`` once ``model``'s bucket holds ``requests`` and ``tokens`` (an estimate),
    then correct the bucket by ``used(result)``; a 429 pauses the bucket for every process and
    asks again (see the module docstring). Without a configured limit: just ``await ask()``."""
    bucket = bucket_for(model)
    if bucket is None:
        return await ask()
    key, limit = bucket

    async def admitted() -> T:
        await _admitted(db, key, limit, requests, tokens)
        return await ask()

    def pause(state: RetryCallState) -> None:
        # The wait is the bucket's, shared: every process waits for it in ``_admitted``.
        seconds = RATE_PAUSE.wait(state)
        storage.pause_rate(db, key, limit, seconds)
        log.info("%s: 429 from the provider; every process pauses %.1f s", key, seconds)

    retrying = AsyncRetrying(
        retry=retry_if_exception(lambda exc: http_status(exc) == 429),
        stop=stop_after_delay(outage_seconds()),
        before_sleep=pause,
        reraise=True,
    )
    result: T = await retrying(admitted)
    actual = used(result) if used is not None else None
    if actual is not None and (actual.requests != requests or actual.tokens != tokens):
        storage.give_back_rate(
            db, key, limit, requests=requests - actual.requests, tokens=tokens - actual.tokens
        )
    return result


async def _admitted(
    db: storage.Database, key: str, limit: storage.RateLimit, requests: float, tokens: float
) -> None:
    """Wait until the bucket gave ``requests`` and ``tokens`` (never blocking the event loop
    between tries; a little jitter so processes woken together do not collide again)."""
    while True:
        wait = storage.take_rate(db, key, limit, requests=requests, tokens=tokens)
        if wait <= 0:
            return
        await asyncio.sleep(wait * (1.0 + 0.1 * random.random()) + 0.002)


__all__ = [
    "RATE_LIMITS_ENV",
    "Usage",
    "bucket_for",
    "parse_rate_limits",
    "within_rate",
]
