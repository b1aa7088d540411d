"""Whole experiments at once, in bounded batches (issue 23): stopping many rooms with a few
statements per batch, and counting an experiment's rooms by status in one query.

A batch is one write transaction of at most ``BATCH_ROOMS`` rooms: other writers (workers, the
app) wait for one batch, never for the whole experiment, and the statements per batch do not
depend on its size (lists go as one parameter: ``storage._tx.in_list``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from sqlalchemy import bindparam, func, select, update

from storage._tx import (
    EVENTS,
    INSERT_EVENT,
    ROOMS,
    by_dialect,
    in_list,
    lock_rooms,
    notice_row,
    open_turn_clause,
    probe_rooms,
    require_in,
)
from storage.database import Database
from storage.events import check_event_fields
from vocabulary import ROOM_STATUSES

#: Rooms per write transaction of a batched operation.
BATCH_ROOMS = 500


def experiment_room_ids(
    db: Database, experiment_id: int, *, statuses: Collection[str] | None = None
) -> list[int]:
    """Ids of the experiment's rooms (only those in ``statuses`` when given), in id order."""
    query = select(ROOMS.c.id).where(ROOMS.c.experiment_id == experiment_id).order_by(ROOMS.c.id)
    if statuses is not None:
        query = query.where(ROOMS.c.status.in_(sorted(statuses)))
    with db.read_connection() as conn:
        return [int(room_id) for room_id in conn.execute(query).scalars()]


def experiment_status_counts(db: Database, experiment_id: int) -> dict[str, int]:
    """``{status: rooms}`` of the experiment's rooms (statuses no room has are left out): one
    grouped count over the experiment's rooms (``ix_rooms_experiment``)."""
    query = (
        select(ROOMS.c.status, func.count())
        .where(ROOMS.c.experiment_id == experiment_id)
        .group_by(ROOMS.c.status)
    )
    with db.read_connection() as conn:
        return {str(status): int(n) for status, n in conn.execute(query)}


_STOP_ROOMS = by_dialect(
    lambda server: (
        update(ROOMS)
        .where(in_list(ROOMS.c.id, "ids", server=server))
        .values(
            status="stopped",
            stop_reason=bindparam("reason"),
            edits=ROOMS.c.edits + 1,  # its open turn changed: a plan made before is refused
            updated_at=bindparam("now"),
        )
    )
)
_STOP_TURNS = by_dialect(
    lambda server: (
        update(EVENTS)
        .where(in_list(EVENTS.c.room_id, "ids", server=server), open_turn_clause())
        .values(state="stopped", updated_at=bindparam("now"))
    )
)


def stop_rooms(
    db: Database,
    room_ids: Sequence[int],
    *,
    reason: str,
    allowed: Collection[str],
    notice: str,
    notice_data: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[int]:
    """:func:`~storage.rooms.stop_room` for many rooms, ``BATCH_ROOMS`` per transaction with a
    fixed number of statements each (lock, probe, update rooms, update open turns, insert the
    notices). Rooms whose status is not in ``allowed`` (or that are gone) are left alone.
    Returns the ids stopped; ``progress(done, total)`` after each batch."""
    check_event_fields(speaker="room", content=notice, data=notice_data)
    for word in allowed:
        require_in(word, ROOM_STATUSES, "allowed status")
    ids = sorted(set(room_ids))
    stopped: list[int] = []
    for start in range(0, len(ids), BATCH_ROOMS):
        chunk = ids[start : start + BATCH_ROOMS]
        stopped += _stop_batch(db, chunk, reason, set(allowed), notice, notice_data)
        if progress is not None:
            progress(min(start + BATCH_ROOMS, len(ids)), len(ids))
    return stopped


def _stop_batch(
    db: Database,
    ids: list[int],
    reason: str,
    allowed: set[str],
    notice: str,
    notice_data: dict[str, Any] | None,
) -> list[int]:
    now = db.now()
    with db.write_connection() as conn:
        if conn.dialect.name == "postgresql":
            lock_rooms(conn, ids)
        probes = probe_rooms(conn, ids)
        chosen = sorted(room_id for room_id, p in probes.items() if p.status in allowed)
        if not chosen:
            return []
        conn.execute(_STOP_ROOMS(conn), {"ids": chosen, "reason": reason, "now": now})
        conn.execute(_STOP_TURNS(conn), {"ids": chosen, "now": now})
        rows = [notice_row(i, probes[i], notice, notice_data, now) for i in chosen]
        conn.execute(INSERT_EVENT, rows)
    return chosen


__all__ = [
    "BATCH_ROOMS",
    "experiment_room_ids",
    "experiment_status_counts",
    "stop_rooms",
]
