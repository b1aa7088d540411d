"""EDSL caches that never ask a model (the port replication packages use, issue 34).

:class:`AnsweringCache` is an EDSL ``Cache`` whose ``fetch`` computes the call's key as EDSL does
and hands it, with what was asked, to :meth:`AnsweringCache.answer`; the entry that comes back
answers the call, and none is a :class:`CacheMiss` (the turn fails; nothing is sent to a model).
Every call answered is kept in ``calls`` (in order), every key missed in ``misses``.
:func:`empty_cache` is a fresh in-memory cache, :func:`cache_entries` a cache's entries as plain
JSON. Only the models layer imports EDSL's cache machinery; callers subclass or call these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edsl.caching import Cache, CacheEntry

from conversation.exceptions import ConversationError


class CacheMiss(ConversationError):
    """A call whose answer is not in the cache it may use (never asked of a model)."""

    def __init__(self, key: str, model: str) -> None:
        self.key = key
        super().__init__(f"{model}: call {key} is not in the package's model cache")


@dataclass(frozen=True, slots=True)
class Call:
    """One call answered: its cache key and the entry that answered it (``to_dict`` form)."""

    key: str
    entry: dict[str, Any]


class AnsweringCache(Cache):  # type: ignore[misc]
    """A ``Cache`` whose fetch is :meth:`answer` (see the module doc)."""

    def __init__(self) -> None:
        super().__init__(data={})
        self.calls: list[Call] = []
        self.misses: list[str] = []

    def fetch(  # type: ignore[override]
        self,
        *,
        model: str,
        parameters: dict[str, Any],
        system_prompt: str,
        user_prompt: str,
        iteration: int,
        validated: bool = False,
        remote_fetch: bool = False,
    ) -> tuple[str | None, str]:
        key = CacheEntry.gen_key(
            model=model,
            parameters=parameters,
            system_prompt=system_prompt,
            user_prompt=user_prompt,
            iteration=iteration,
        )
        asked = {
            "model": model,
            "parameters": parameters,
            "system_prompt": system_prompt,
            "user_prompt": user_prompt,
            "iteration": iteration,
        }
        entry = self.answer(key, asked)
        if entry is None:
            self.misses.append(key)
            raise CacheMiss(key, model)
        self.calls.append(Call(key, entry))
        found = CacheEntry.from_dict(entry)
        self.fetched_data[key] = found
        return found.output, key

    def store(self, *args: Any, **kwargs: Any) -> str:  # pragma: no cover - fetch never misses
        raise CacheMiss("(store)", str(kwargs.get("model")))

    def answer(self, key: str, asked: Mapping[str, Any]) -> dict[str, Any] | None:
        """The entry (``CacheEntry.to_dict`` form) answering the call ``key``; None: a miss."""
        raise NotImplementedError


def empty_cache() -> Any:
    """A fresh, empty in-memory EDSL cache (what a run's new calls are stored in)."""
    return Cache(data={})


def cache_entries(cache: Any) -> dict[str, dict[str, Any]]:
    """A cache's entries, ``{key: entry}`` in ``CacheEntry.to_dict`` form."""
    return {key: entry.to_dict() for key, entry in cache.data.items()}


__all__ = ["AnsweringCache", "CacheMiss", "Call", "cache_entries", "empty_cache"]
