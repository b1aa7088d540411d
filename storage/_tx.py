"""Small helpers shared by the repository modules (private: not part of the public API)."""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any, Final

from sqlalchemy import func, update
from sqlmodel import Session, col, select

from .errors import RoomNotFound, StorageValueError
from .tables import Event, Room


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset.UNSET
"""Marks a keyword argument that was not given (``None`` is a real value: "set to NULL")."""


def lock_room(session: Session, room_id: int) -> str:
    """Serialise writers of one room, check it exists, and return its status.

    SQLite: the ``BEGIN IMMEDIATE`` write transaction already holds the database's write lock, so
    this is a plain existence check (SQLAlchemy drops ``FOR UPDATE`` there). PostgreSQL: the row
    lock makes concurrent appends, claims and lease changes of the same room take turns, so
    ``max(seq) + 1`` and lease checks see the previous writer's committed result (READ COMMITTED).
    """
    status = session.exec(
        select(Room.status).where(Room.id == room_id).with_for_update()
    ).one_or_none()
    if status is None:
        raise RoomNotFound(f"room {room_id} does not exist")
    return status


def lock_rooms(session: Session, room_ids: Iterable[int]) -> set[int]:
    """Lock several rooms in id order (a fixed order, so two batches cannot deadlock).

    Returns the ids that exist.
    """
    ids = sorted(set(room_ids))
    if not ids:
        return set()
    rows = session.exec(
        select(Room.id).where(col(Room.id).in_(ids)).order_by(Room.id).with_for_update()
    )
    return set(rows)


def touch_room(session: Session, room_id: int, now: datetime) -> None:
    """Bump ``rooms.updated_at`` (the Results page sorts by activity; runnable scans are fair)."""
    session.exec(update(Room).where(Room.id == room_id).values(updated_at=now))


def last_seq(session: Session, room_id: int) -> int:
    """``max(seq)`` of a room's log, 0 when empty (one probe of the ``(room_id, seq)`` index)."""
    value = session.exec(select(func.max(Event.seq)).where(Event.room_id == room_id)).one()
    return int(value or 0)


def word_count(content: str) -> int:
    """Words as the summaries count them: whitespace-separated tokens."""
    return len(content.split())


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


def check_json(value: Any, field: str) -> None:
    """Refuse values that are not strict JSON (NaN, infinities, sets, objects) before storing."""
    import json

    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StorageValueError(
            f"{field} must be plain JSON (dicts, lists, strings, finite numbers, booleans, null): "
            f"{exc}"
        ) from None


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
