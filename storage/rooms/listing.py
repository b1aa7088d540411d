"""Finding rooms: the filters and orders of a room list, pages of rooms, their ids and count,
and the scan a worker picks runnable rooms from.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any, Final

from sqlalchemy import and_, func, literal_column, or_
from sqlmodel import col, select

from storage.checks import as_set, check_limit, require_in
from storage.database import Database
from storage.rooms.rows import ROOMS
from storage.tables import Lease, Room

#: How a room list may be ordered (a key of this table), each with a unique tie-breaker.
ROOM_SORTS: Final[dict[str, tuple[Any, ...]]] = {
    "newest": (ROOMS.c.id.desc(),),
    "oldest": (ROOMS.c.id.asc(),),
    "recent activity": (ROOMS.c.updated_at.desc(), ROOMS.c.id.desc()),
    "name": (ROOMS.c.name.asc(), ROOMS.c.id.desc()),
    "status": (ROOMS.c.status.asc(), ROOMS.c.id.desc()),
}


def room_conditions(
    *,
    status: str | Collection[str] | None = None,
    experiment_id: int | None = None,
    search: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    archived: bool | None = None,
    in_experiment: bool | None = None,
) -> list[Any]:
    """The WHERE clauses of a room list (every filter is optional; all must hold).

    ``search``: a case-insensitive part of the name or condition, or a room id (``42``/``#42``).
    ``created_after`` is inclusive, ``created_before`` exclusive. ``archived``: ``False`` only
    rooms not archived, ``True`` only archived ones, ``None`` both. ``in_experiment``: ``False``
    only rooms of no experiment, ``True`` only experiment rooms, ``None`` both.
    """
    clauses: list[Any] = []
    statuses = as_set(status)
    if statuses is not None:
        clauses.append(ROOMS.c.status.in_(sorted(statuses)))
    if experiment_id is not None:
        clauses.append(ROOMS.c.experiment_id == experiment_id)
    needle = (search or "").strip().lower()
    if needle:
        matches = [
            func.lower(ROOMS.c.name).contains(needle, autoescape=True),
            func.lower(func.coalesce(ROOMS.c.condition, "")).contains(needle, autoescape=True),
        ]
        digits = needle.removeprefix("#")
        if digits.isdigit() and len(digits) < 19:
            matches.append(ROOMS.c.id == int(digits))
        clauses.append(or_(*matches))
    if created_after is not None:
        clauses.append(ROOMS.c.created_at >= created_after)
    if created_before is not None:
        clauses.append(ROOMS.c.created_at < created_before)
    if archived is not None:
        column = ROOMS.c.archived_at
        clauses.append(column.is_not(None) if archived else column.is_(None))
    if in_experiment is not None:
        column = ROOMS.c.experiment_id
        clauses.append(column.is_not(None) if in_experiment else column.is_(None))
    return clauses


def room_order(sort: str) -> tuple[Any, ...]:
    """The ORDER BY of :data:`ROOM_SORTS` ``[sort]``; an unknown key is a StorageValueError."""
    require_in(sort, ROOM_SORTS, "sort")
    return ROOM_SORTS[sort]


def list_rooms(
    db: Database,
    *,
    limit: int | None = 100,
    offset: int = 0,
    sort: str = "newest",
    **filters: Any,
) -> list[Room]:
    """Rooms, newest first by default (``sort``: a key of :data:`ROOM_SORTS`), filtered by the
    keywords of :func:`room_conditions` (status, experiment_id, search, created_after,
    created_before, archived, in_experiment)."""
    check_limit(limit, offset)
    query = (
        select(Room).where(*room_conditions(**filters)).order_by(*room_order(sort)).offset(offset)
    )
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        return list(session.exec(query))


def room_ids(db: Database, *, sort: str = "oldest", **filters: Any) -> list[int]:
    """The ids of every room matching the filters of :func:`room_conditions`, oldest first by
    default: what an export of many rooms needs (100,000 ids are a few MB; their records with
    configs, :func:`list_rooms`, hundreds)."""
    query = select(Room.id).where(*room_conditions(**filters)).order_by(*room_order(sort))
    with db.read() as session:
        return [int(rid or 0) for rid in session.exec(query)]  # a stored id is never NULL


def count_rooms(db: Database, **filters: Any) -> int:
    """How many rooms match the filters of :func:`room_conditions` (for paging)."""
    query = select(func.count()).select_from(Room).where(*room_conditions(**filters))
    with db.read() as session:
        return int(session.exec(query).one())


def list_runnable_rooms(db: Database, now: datetime | None = None, limit: int = 100) -> list[int]:
    """Ids of rooms a worker may pick up: status ``running`` and lease free, released or expired.

    Least recently touched first (``updated_at``), so busy rooms do not starve quiet ones. A
    snapshot: acquire the lease (:func:`~storage.rooms.leases.acquire_lease`) before driving a room.
    """
    check_limit(limit)
    when = now or db.now()
    query = (
        select(Room.id)
        .outerjoin(Lease, and_(col(Lease.room_id) == Room.id))
        .where(
            # A literal, not a parameter: the partial index ix_rooms_runnable is only used for a
            # predicate the planner can see matches its own (SQLite and PostgreSQL alike).
            col(Room.status) == literal_column("'running'"),
            or_(
                col(Lease.room_id).is_(None),
                col(Lease.owner).is_(None),
                col(Lease.expires_at) <= when,
            ),
        )
        .order_by(col(Room.updated_at), col(Room.id))
        .limit(limit)
    )
    with db.read() as session:
        return [room_id for room_id in session.exec(query) if room_id is not None]


__all__ = [
    "ROOM_SORTS",
    "count_rooms",
    "list_rooms",
    "list_runnable_rooms",
    "room_conditions",
    "room_ids",
    "room_order",
]
