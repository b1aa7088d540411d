"""A room's row: create, read, update, archive, delete and stop (one room or many).

Listing rooms is :mod:`storage.rooms.listing`, forking them :mod:`storage.rooms.forks`, a room
restored with its whole log :mod:`storage.rooms.imports`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, update
from sqlalchemy import select as sa_select
from sqlmodel import col

from storage.checks import UNSET, _Unset, as_set, check_name, require_in
from storage.database import Database
from storage.database.statements import add_row, by_dialect, get_row, in_list
from storage.errors import ExperimentNotFound, RecordInUse, RoomNotFound, StorageValueError
from storage.rooms.config_versions import check_room_config
from storage.rooms.log import check_event_fields
from storage.rooms.rows import (
    EVENTS,
    INSERT_EVENT,
    LEASES,
    ROOMS,
    append_notice,
    holds_lease,
    lock_room,
    lock_rooms,
    notice_row,
    open_turn_clause,
    probe_rooms,
)
from storage.tables import Experiment, Room
from vocabulary import ROOM_STATUSES, RoomStatus, TurnState


def create_room(
    db: Database,
    name: str,
    config: dict[str, Any] | None = None,
    *,
    status: str = "idle",
    experiment_id: int | None = None,
    condition: str | None = None,
    replicate: int | None = None,
    parent_room_id: int | None = None,
    parent_seq: int | None = None,
) -> int:
    """Store a new room and return its id.

    ``config`` is an opaque JSON object for the runtime (roster of agent specs, planner and
    settings, termination, prompt template, context policy, model binding spec, seed, moderated
    flag). It must be strict JSON and pass the secret guard (:class:`ConfigContainsSecret`).
    ``experiment_id``/``condition``/``replicate`` place the room in an experiment's design.
    """
    values = new_room_values(db, name, config, status=status)
    now = values["created_at"]
    if experiment_id is not None and (
        not isinstance(experiment_id, int) or isinstance(experiment_id, bool)
    ):
        raise StorageValueError(f"experiment_id={experiment_id!r} must be an integer or None")
    with db.write() as session:
        if experiment_id is not None and session.get(Experiment, experiment_id) is None:
            # Checked here, in the same transaction, so the caller gets a typed error rather
            # than the database's foreign-key failure.
            raise ExperimentNotFound(
                f"experiment_id={experiment_id}: no such experiment; create it first"
            )
        room = Room(
            name=values["name"],
            config=values["config"],
            status=status,
            experiment_id=experiment_id,
            condition=condition,
            replicate=replicate,
            parent_room_id=parent_room_id,
            parent_seq=parent_seq,
            created_at=now,
            updated_at=now,
        )
        return add_row(session, room)


def new_room_values(
    db: Database, name: str, config: dict[str, Any] | None, *, status: str = "idle"
) -> dict[str, Any]:
    """The checked column values of a new room (name, config through the secret guard, status,
    timestamps): what every way of creating a room validates before it writes."""
    check_name(name, "name")
    require_in(status, ROOM_STATUSES, "status")
    now = db.now()
    return {
        "name": name,
        "config": check_room_config({} if config is None else config),
        "status": status,
        "created_at": now,
        "updated_at": now,
    }


def get_room(db: Database, room_id: int) -> Room:
    """The room as committed now. Raises :class:`RoomNotFound`."""
    row: Room = get_row(db, Room, room_id, RoomNotFound, "room")
    return row


def update_room(
    db: Database,
    room_id: int,
    *,
    name: str | _Unset = UNSET,
    status: str | _Unset = UNSET,
    stop_reason: str | None | _Unset = UNSET,
    config: dict[str, Any] | _Unset = UNSET,
    expected_status: str | Collection[str] | None = None,
    token: int | None = None,
    notice: str | None = None,
    notice_data: dict[str, Any] | None = None,
) -> Room | None:
    """Change the given fields; return the room as committed, or ``None`` when a check failed.

    Optimistic check: with ``expected_status``, the update applies only if the room's current
    status is one of them (e.g. resume only a ``paused`` room; two tabs pressing "resume" at once
    change it once). Fence: with ``token`` (a worker's lease token), it applies only while that
    lease is current and unexpired, so a zombie worker cannot mark a room settled or failed.
    With ``notice``, a system event (``notice_data`` its data: who paused or resumed the room)
    goes at the end of the log in the same transaction, only when the update applies.
    Raises :class:`RoomNotFound`, :class:`StorageValueError`, :class:`ConfigContainsSecret`.
    """
    if notice is not None:
        check_event_fields(speaker="room", content=notice, data=notice_data)
    values: dict[str, Any] = {}
    if not isinstance(name, _Unset):
        values["name"] = check_name(name, "name")
    if not isinstance(status, _Unset):
        require_in(status, ROOM_STATUSES, "status")
        values["status"] = status
    if not isinstance(stop_reason, _Unset):
        values["stop_reason"] = stop_reason
    if not isinstance(config, _Unset):
        values["config"] = check_room_config(config)
    expected = as_set(expected_status)
    if expected is not None:
        for word in expected:
            require_in(word, ROOM_STATUSES, "expected_status")
    now = db.now()
    with db.write() as session:
        conn = session.connection()
        current_status = lock_room(conn, room_id)
        if expected is not None and current_status not in expected:
            return None
        if token is not None and not holds_lease(conn, room_id, token, now):
            return None
        values["updated_at"] = now
        session.exec(update(Room).where(col(Room.id) == room_id).values(**values))
        if notice is not None:
            append_notice(conn, room_id, notice, notice_data, now)
        room = session.get(Room, room_id, populate_existing=True)
        assert room is not None
        return room


def set_room_archived(db: Database, room_id: int, archived: bool = True) -> Room:
    """Archive a room (hidden from Home and the pickers unless asked for) or bring it back.

    Archiving changes nothing else: a running room goes on. Returns the room as committed;
    raises :class:`RoomNotFound`."""
    now = db.now()
    with db.write() as session:
        lock_room(session.connection(), room_id)
        session.exec(
            update(Room)
            .where(col(Room.id) == room_id)
            .values(archived_at=now if archived else None)
        )
        room = session.get(Room, room_id, populate_existing=True)
        assert room is not None
        return room


def live_leases(conn: Any, room_ids: Sequence[int], now: datetime) -> list[int]:
    """Inside a transaction: which of ``room_ids`` a worker holds now (held and unexpired)."""
    if not room_ids:
        return []
    query = (
        sa_select(LEASES.c.room_id)
        .where(
            LEASES.c.room_id.in_(list(room_ids)),
            LEASES.c.owner.is_not(None),
            LEASES.c.expires_at > now,
        )
        .order_by(LEASES.c.room_id)
    )
    return [int(r) for r in conn.execute(query).scalars()]


def delete_room(db: Database, room_id: int, *, even_if_leased: bool = False) -> bool:
    """Delete a room with its events, lease and analysis answers. ``False`` if it did not exist.

    Refused with :class:`RecordInUse` (nothing deleted) while a worker holds a live lease on it,
    so no worker is left committing turns of a room that is gone: stop the room and wait for the
    lease to be released (``even_if_leased=True`` skips the check: tests, crash simulations).
    Forks of it keep their copied events (``parent_room_id`` becomes NULL).
    """
    now = db.now()
    with db.write() as session:
        conn = session.connection()
        exists = conn.execute(sa_select(ROOMS.c.id).where(ROOMS.c.id == room_id)).scalar()
        if exists is None:
            return False
        lock_room(conn, room_id)
        if not even_if_leased and live_leases(conn, [room_id], now):
            raise RecordInUse(
                f"room {room_id} is being run by a worker (live lease): stop it first and try "
                "again once its lease is released"
            )
        result = session.exec(delete(Room).where(col(Room.id) == room_id))
        return bool(result.rowcount)


#: Rooms per write transaction of :func:`stop_rooms`.
BATCH_ROOMS = 500


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
    """Stop rooms: each one's status becomes ``stopped`` with ``reason``, its open turn (if any)
    ``stopped``, and a system event ``notice`` goes at the end of its log; a model reply still in
    flight is then refused by the fence on the turn's state. Rooms whose status is not one of
    ``allowed`` (or that are gone) are left alone.

    ``BATCH_ROOMS`` rooms per write transaction, each with a fixed number of statements (lock,
    probe, update rooms, update open turns, insert the notices): other writers wait for one
    batch, never for a whole experiment. Returns the ids stopped; ``progress(done, total)``
    after each batch.
    """
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


def stop_room(
    db: Database,
    room_id: int,
    *,
    reason: str,
    allowed: Collection[str],
    notice: str,
    notice_data: dict[str, Any] | None = None,
) -> bool:
    """:func:`stop_rooms` for one room (one write transaction): ``False`` (nothing written) when
    its status is not one of ``allowed``. Raises :class:`RoomNotFound`."""
    stopped = stop_rooms(
        db, [room_id], reason=reason, allowed=allowed, notice=notice, notice_data=notice_data
    )
    if not stopped:
        get_room(db, room_id)  # a room that is gone is an error here, not a refusal
    return bool(stopped)


_STOP_ROOMS = by_dialect(
    lambda server: (
        update(ROOMS)
        .where(in_list(ROOMS.c.id, "ids", server=server))
        .values(
            status=RoomStatus.STOPPED,
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
        .values(state=TurnState.STOPPED, updated_at=bindparam("now"))
    )
)


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
    "create_room",
    "delete_room",
    "get_room",
    "live_leases",
    "new_room_values",
    "set_room_archived",
    "stop_room",
    "stop_rooms",
    "update_room",
]
