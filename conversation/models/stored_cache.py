"""``StoredCache``: EDSL's model cache, persisted in the rooms database and shared by every process.

A call with a ``StoredCache`` (``ask(..., cache=StoredCache(db))``) is still one EDSL call with an
``edsl.Cache``: before it, the entry stored under this call's cache key (EDSL's own key: model,
parameters, both prompts, iteration) is loaded, so EDSL answers from it without calling the model
(its ``cache_used`` is true); after a new answer, EDSL's new entry is written back. So the
worker, the app and any other process share answers, and a turn asked again after a crash, a
re-run experiment or a fork up to its fork point reuses them.

Guarantees:
- only the entry of the call's own key is read (never the whole table);
- an answer is written once: storing a key already stored changes nothing (``storage.models.cache``), so
  concurrent writers are safe; it is durable before ``ask`` returns;
- calls that run at the same time on one event loop share one read and one write transaction
  (a worker asks hundreds of rooms at once);
- the database failing to read or write a cache entry never fails a call: it is logged, the
  model is asked (on a read failure), the answer is kept (on a write failure).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from edsl.caching import Cache, CacheEntry

import storage
from conversation.boundary import storage_errors
from conversation.exceptions import ConversationValueError, StorageFailure, StorageUnavailableError

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


def cache_key(model: Any, *, user_prompt: str, system_prompt: str, iteration: int = 0) -> str:
    """EDSL's cache key of one call (as ``LanguageModel._async_get_intended_model_call_outcome``
    builds it: the test model's canned response is not part of it; no files)."""
    parameters = dict(getattr(model, "parameters", None) or {})
    if getattr(model, "model", None) == "test":
        parameters.pop("canned_response", None)
    return CacheEntry.gen_key(
        model=str(getattr(model, "model", "")),
        parameters=parameters,
        system_prompt=system_prompt,
        user_prompt=user_prompt,
        iteration=iteration,
    )


@dataclass(slots=True)
class _Batch(Generic[T, R]):
    done: asyncio.Future[dict[str, R]]
    items: dict[str, T] = field(default_factory=dict)


#: What a cache read or write may meet: it is logged and the model is asked (or the answer kept).
_CACHE_TROUBLE = (StorageUnavailableError, StorageFailure, ConversationValueError)


class _Coalescer(Generic[T, R]):
    """Gathers the requests made during one turn of an event loop into one ``run`` call."""

    def __init__(self, run: Callable[[dict[str, T]], dict[str, R]]) -> None:
        self._run = run
        self._lock = threading.Lock()
        # weak: a loop closed with a batch still open (its callers cancelled) is not kept
        self._batches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Batch[T, R]] = (
            weakref.WeakKeyDictionary()
        )

    async def submit(self, items: dict[str, T]) -> dict[str, R]:
        loop = asyncio.get_running_loop()
        with self._lock:
            batch = self._batches.get(loop)
            if batch is None:
                batch = _Batch(loop.create_future())
                self._batches[loop] = batch
                loop.call_soon(self._flush, loop)
            batch.items.update(items)
        # shielded: a cancelled caller must not cancel the batch the others wait for
        return await asyncio.shield(batch.done)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            batch = self._batches.pop(loop)
        try:
            result = self._run(batch.items)
        except Exception as exc:  # noqa: BLE001 - handed to every caller waiting for the batch
            if not batch.done.done():
                batch.done.set_exception(exc)
            return
        if not batch.done.done():
            batch.done.set_result(result)


class StoredCache:
    """EDSL's ``Cache``, one entry at a time, backed by ``storage.models.cache`` (see the module doc)."""

    def __init__(self, db: storage.Database) -> None:
        self.db = db
        self._reads: _Coalescer[None, dict[str, Any]] = _Coalescer(self._read)
        self._writes: _Coalescer[dict[str, Any], None] = _Coalescer(self._write)

    async def cache_for(self, key: str) -> Cache:
        """An in-memory EDSL ``Cache`` holding the stored entry of ``key`` (empty on a miss)."""
        found = await self._reads.submit({key: None})
        entry = found.get(key)
        return Cache(data={key: CacheEntry.from_dict(entry)} if entry is not None else {})

    async def save(self, cache: Cache) -> None:
        """Write the entries EDSL added to ``cache`` during the call (none on a cache hit)."""
        entries = {key: entry.to_dict() for key, entry in cache.new_entries.items()}
        if entries:
            await self._writes.submit(entries)

    def entries(self, keys: Iterable[str]) -> dict[str, CacheEntry]:
        """The stored entries of ``keys`` as EDSL ``CacheEntry`` objects (for inspection)."""
        found = storage.cached_responses(self.db, list(keys))
        return {key: CacheEntry.from_dict(entry) for key, entry in found.items()}

    def _read(self, keys: dict[str, None]) -> dict[str, dict[str, Any]]:
        try:
            return storage_errors(storage.cached_responses, self.db, list(keys))
        except _CACHE_TROUBLE as exc:
            log.warning("model cache not read (%s); the model is asked", exc)
            return {}

    def _write(self, entries: dict[str, dict[str, Any]]) -> dict[str, None]:
        try:
            storage_errors(storage.store_cached_responses, self.db, entries)
        except _CACHE_TROUBLE as exc:
            log.warning("model cache not written (%s); the answer is kept", exc)
        return {}

    def __repr__(self) -> str:
        return f"StoredCache({self.db!r})"


__all__ = ["StoredCache", "cache_key"]
