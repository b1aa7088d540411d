"""Read-only JSON for a config shared by every reader of the same stored document.

A stored config is validated once and the one object is handed to every caller
(``RoomConfig.from_dict`` caches it): the model is frozen (no attribute can be set), and the
JSON it carries (the planner, model, termination, context and breakpoints dicts, an agent's
traits) is made of these read-only containers, so no caller can change it for the others. They
stay a ``dict`` / ``list`` (``json.dumps``, ``dict(...)`` and strict schemas take them as they
are); ``plain`` gives a caller its own copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class FrozenDict(dict[str, Any]):
    """A dict that refuses changes (still a dict: ``json.dumps``, ``dict(...)``, isinstance)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "this part of a room config is shared and read-only; copy it first (dict(...))"
        )

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = pop = popitem = clear = setdefault = _refuse  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        import copy

        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


class FrozenList(list[Any]):
    """A list that refuses changes (still a list for ``json.dumps`` and isinstance checks)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "this part of a room config is shared and read-only; copy it first (list(...))"
        )

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        import copy

        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self) -> Any:
        return (list, (list(self),))


def plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists (what ``to_dict`` hands out: the caller's own)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple) and not isinstance(value, str):
        return [plain(v) for v in value]
    return value


def frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return FrozenDict({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(frozen(v) for v in value)
    return value


__all__ = ["FrozenDict", "FrozenList", "frozen", "plain"]
