"""How many model calls may be in flight at once, per provider, in this process.

A local server has one slot (llama.cpp's server answers one request at a time: a second request
waits behind the first and may time out there), and hosted providers rate-limit. Every call that
``ask()`` makes holds a slot of its provider's limiter for as long as the request runs (not while
it waits for a retry). The limiters are shared by everything in the process: the in-app runner's
thread, workers, ``Room.run`` from any thread and any event loop.

- The key of a provider: its EDSL service and, for servers, the ``base_url`` (two servers are two
  providers); for hosted services, the service alone (one account, one rate limit).
- Limits: ``ROOMS_MAX_CALLS_PER_LOCAL_SERVER`` (default 1) for a server on localhost / 127.0.0.1 /
  ::1; ``ROOMS_MAX_CALLS_PER_PROVIDER`` (default 8) for any other provider. The offline and EDSL
  test models are not limited (they run in this process and cost nothing). Read at each call, so
  a changed setting applies to the next call.
- Waiting never blocks an event loop, and a waiter cancelled (a stopped worker, a timeout) gives
  its place, or the slot it was just handed, back.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from conversation.models.providers.families import family_of
from settings import SETTINGS, default, env_name

PROVIDER_ENV = env_name("max_calls_per_provider")
LOCAL_SERVER_ENV = env_name("max_calls_per_local_server")
DEFAULT_PROVIDER_LIMIT: int = default("max_calls_per_provider")
DEFAULT_LOCAL_SERVER_LIMIT: int = default("max_calls_per_local_server")
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


class Slots:
    """A counting limit shared across threads and event loops (a semaphore whose waiters may be
    on different loops: each waits on a future of its own loop, handed the slot thread-safely)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._busy = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._busy

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._busy < self.limit and not self._waiters:
                self._busy += 1
                return
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            # Not found: already handed a slot, given back below or by _grant.
            with self._lock, contextlib.suppress(ValueError):
                self._waiters.remove((loop, waiter))
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot arrived just as the waiter was cancelled
            raise

    def release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                if loop.is_closed():
                    continue
                # The slot passes to the waiter (busy stays the same).
                loop.call_soon_threadsafe(self._grant, waiter)
                return
            self._busy -= 1

    def _grant(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():  # cancelled before the slot reached it: pass it on
            self.release()
        else:
            waiter.set_result(None)

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        await self.acquire()
        try:
            yield
        finally:
            self.release()


_registry: dict[tuple[str, int], Slots] = {}
_registry_lock = threading.Lock()


def provider_key(model: Any) -> str | None:
    """The provider a model's calls count against, or None for a model that is not limited."""
    service = getattr(model, "_inference_service_", None)
    if not isinstance(service, str) or family_of(service).in_process:
        return None
    base_url = getattr(model, "base_url", None)
    if isinstance(base_url, str) and base_url:
        return f"{service} at {base_url.rstrip('/')}"
    return service


def is_local(model: Any) -> bool:
    """True for a model served from this machine (its base_url's host is a loopback name)."""
    base_url = getattr(model, "base_url", None)
    if not isinstance(base_url, str) or not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.")


def limit_for(model: Any) -> int | None:
    """The number of calls of ``model``'s provider allowed in flight at once (None: no limit)."""
    if provider_key(model) is None:
        return None
    if is_local(model):
        return SETTINGS.max_calls_per_local_server
    return SETTINGS.max_calls_per_provider


def slots_for(model: Any) -> Slots | None:
    """This process's limiter for ``model``'s provider (None: not limited)."""
    key = provider_key(model)
    limit = limit_for(model)
    if key is None or limit is None:
        return None
    with _registry_lock:
        slots = _registry.get((key, limit))
        if slots is None:
            slots = _registry[(key, limit)] = Slots(limit)
        return slots


def calls_in_flight(base_url: str) -> int:
    """How many calls of this process to the server at ``base_url`` are running now (holding a
    slot): a server busy answering one is not probed (``server_window``)."""
    suffix = f" at {base_url.rstrip('/')}"
    with _registry_lock:
        found = [slots for (key, _), slots in _registry.items() if key.endswith(suffix)]
    return sum(slots.in_flight for slots in found)


@contextlib.asynccontextmanager
async def call_slot(model: Any) -> AsyncIterator[None]:
    """Hold a slot of ``model``'s provider for the duration of the block."""
    slots = slots_for(model)
    if slots is None:
        yield
        return
    async with slots.held():
        yield


__all__ = [
    "DEFAULT_LOCAL_SERVER_LIMIT",
    "DEFAULT_PROVIDER_LIMIT",
    "LOCAL_SERVER_ENV",
    "PROVIDER_ENV",
    "Slots",
    "call_slot",
    "calls_in_flight",
    "is_local",
    "limit_for",
    "provider_key",
    "slots_for",
]
