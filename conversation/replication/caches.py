"""The model caches a replication runs with: ``AnsweringCache`` objects (the models layer's
EDSL caches that never ask a model) deciding where an answer comes from.

- :class:`PackageCache`: the package's entries only; a call not in them is a
  :class:`CacheMiss` (the turn fails and the difference is reported), never a model call.
- :class:`SourceCache`: the source database's stored answers, looked up by key, every call
  recorded in order (what a package's cache holds); a miss is a :class:`CacheMiss`.
- :class:`TranslatingCache`: the scrubbed world's calls, answered from the recorded original
  calls in the same order, each answer's text scrubbed and stored under the key of the
  scrubbed prompts: re-running the scrubbed transcripts with it gives the scrubbed replies.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from conversation.models.answering_cache import AnsweringCache, CacheMiss, Call


class PackageCache(AnsweringCache):
    """The package's cache entries (``{key: entry}``), nothing else."""

    def __init__(self, entries: Mapping[str, Mapping[str, Any]]) -> None:
        super().__init__()
        self._entries = {k: dict(v) for k, v in entries.items()}

    def answer(self, key: str, asked: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._entries.get(key)


class SourceCache(AnsweringCache):
    """Answers looked up in the source database by key (``lookup(keys) -> {key: entry}``)."""

    def __init__(self, lookup: Callable[[list[str]], Mapping[str, Mapping[str, Any]]]) -> None:
        super().__init__()
        self._lookup = lookup

    def answer(self, key: str, asked: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self._lookup([key]).get(key)
        return None if found is None else dict(found)


class TranslatingCache(AnsweringCache):
    """Answers each call with the next of ``originals`` (the raw run's calls, in order), its
    text passed through ``translate`` and its prompts the ones asked now."""

    def __init__(self, originals: Iterable[Call], translate: Callable[[str], str]) -> None:
        super().__init__()
        self._originals = deque(originals)
        self._translate = translate

    def answer(self, key: str, asked: Mapping[str, Any]) -> dict[str, Any] | None:
        if not self._originals:
            return None
        original = dict(self._originals.popleft().entry)
        return {
            **original,
            **asked,
            "output": translated_output(original.get("output"), self._translate),
        }


#: Fields of a provider's response that describe it rather than say anything (``"object":
#: "chat.completion"`` read as a URL once): never translated.
STRUCTURAL_FIELDS = frozenset(
    {
        "id",
        "object",
        "model",
        "role",
        "type",
        "finish_reason",
        "stop_reason",
        "system_fingerprint",
        "service_tier",
    }
)


def translated_output(output: Any, translate: Callable[[str], str]) -> Any:
    """A stored answer's raw output with every string in it translated (a JSON string is read,
    each string value translated, written back), except the response's structural fields
    (:data:`STRUCTURAL_FIELDS`)."""
    if not isinstance(output, str):
        return _walk(output, translate)
    try:
        parsed = json.loads(output)
    except ValueError:
        return translate(output)
    return json.dumps(_walk(parsed, translate), ensure_ascii=False)


def _walk(value: Any, translate: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return translate(value)
    if isinstance(value, list):
        return [_walk(v, translate) for v in value]
    if isinstance(value, dict):
        return {k: v if k in STRUCTURAL_FIELDS else _walk(v, translate) for k, v in value.items()}
    return value


__all__ = [
    "Call",
    "CacheMiss",
    "PackageCache",
    "SourceCache",
    "TranslatingCache",
    "translated_output",
]
