"""What storage checks whoever calls it (private to storage): vocabularies, display names,
strict and bounded JSON, paging values, and the marker of a keyword argument not given.

Each check raises :class:`~storage.errors.StorageValueError` naming the field and the fix; the
secret guard (:mod:`storage.secret_guard`) is applied to every configuration document here
(:func:`json_object`). The stricter limits of ``conversation.text.limits`` are the door's;
these are storage's own backstop (storage knows nothing above it).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Collection
from typing import Any, Final

from storage.errors import StorageValueError
from storage.secret_guard import check_no_secrets


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset.UNSET
"""Marks a keyword argument that was not given (``None`` is a real value: "set to NULL")."""


def require_in(value: Any, allowed: Collection[str], field: str) -> None:
    """Raise :class:`StorageValueError` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise StorageValueError(
            f"{field}={value!r} is not valid; use one of: {', '.join(sorted(allowed))}"
        )


def as_set(value: str | Collection[str] | None) -> set[str] | None:
    """A single word or a collection of words as a set (None stays None)."""
    if value is None:
        return None
    return {value} if isinstance(value, str) else set(value)


def check_limit(limit: int | None, offset: int = 0) -> None:
    """Refuse negative paging values (a negative LIMIT means 'no limit' in SQLite)."""
    if limit is not None and limit < 0:
        raise StorageValueError(f"limit={limit} must be >= 0 (or None for no limit)")
    if offset < 0:
        raise StorageValueError(f"offset={offset} must be >= 0")


#: What any JSON column accepts at most, whoever writes it: a backstop below the stricter
#: limits of ``conversation.text.limits`` (storage knows nothing above it).
JSON_MAX_DEPTH = 64


def bounded_json(
    value: Any, field: str, *, max_chars: int, max_depth: int = JSON_MAX_DEPTH
) -> None:
    """Refuse ``value`` when it nests deeper than ``max_depth`` or holds more than about
    ``max_chars`` characters of text, measured in one walk before anything serialises it."""
    total = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise StorageValueError(f"{field} is nested more than {max_depth} levels deep")
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + sum(len(str(k)) + 4 for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            total += 2 + len(item)
            stack.extend((v, depth + 1) for v in item)
        else:
            total += 8
        if total > max_chars:
            raise StorageValueError(
                f"{field} is more than {max_chars:,} characters as JSON; the limit is {max_chars:,}"
            )


#: The strict encoder (no NaN or infinities), made once: ``json.dumps(value, allow_nan=False)``
#: builds a new encoder per call. Otherwise as ``json.dumps`` (and a JSON column) writes.
_STRICT_JSON = json.JSONEncoder(allow_nan=False)


def json_text(value: Any, field: str) -> str:
    """``value`` as the JSON text a column stores, refusing what is not strict JSON (NaN,
    infinities, sets, objects) with :class:`StorageValueError` naming ``field``: one encoding
    that is both the check and what is written (``database.statements.DriverStatement``)."""
    try:
        return _STRICT_JSON.encode(value)
    except RecursionError:
        raise StorageValueError(f"{field} is nested too deeply to store; flatten it") from None
    except (TypeError, ValueError) as exc:
        raise StorageValueError(
            f"{field} must be plain JSON (dicts, lists, strings, finite numbers, booleans, null): "
            f"{exc}"
        ) from None


def check_json(value: Any, field: str) -> None:
    """Refuse values that are not strict JSON (NaN, infinities, sets, objects) before storing."""
    json_text(value, field)


def json_object(
    value: Any, field: str, *, optional: bool = False, max_chars: int | None = None
) -> Any:
    """A strict, secret-free JSON object (a dict) for a JSON column, or StorageValueError;
    with ``max_chars``, of bounded size and depth (measured before it is serialised)."""
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise StorageValueError(
            f"{field} must be a dict (a JSON object), not {type(value).__name__}"
        )
    if max_chars is not None:
        bounded_json(value, field, max_chars=max_chars)
    check_json(value, field)
    check_no_secrets(value, field=field)
    return value


def check_name(name: Any, field: str, *, max_length: int = 200) -> str:
    """A display name: a non-empty string without control characters, at most ``max_length``."""
    if not isinstance(name, str) or not name.strip():
        raise StorageValueError(f"{field}={name!r} must be a non-empty string")
    if name != name.strip():
        raise StorageValueError(f"{field}={name!r} has leading or trailing spaces; strip them")
    if len(name) > max_length:
        raise StorageValueError(
            f"{field} is {len(name)} characters long; the limit is {max_length}"
        )
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise StorageValueError(
            f"{field}={name!r} contains a control character (newline, tab...); remove it"
        )
    return name
