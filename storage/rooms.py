"""Rooms: create, read, list, update, delete, fork, and the runnable-room scan for workers."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, func, insert, literal, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.orm import aliased
from sqlmodel import col, select

from storage._tx import (
    EVENTS,
    ROOMS,
    UNSET,
    _Unset,
    add_row,
    as_set,
    check_limit,
    check_name,
    get_row,
    holds_lease,
    last_seq,
    lock_room,
    open_turn_clause,
    probe_room,
    require_in,
    touch_room,
    word_count,
)
from storage.config_versions import check_room_config, insert_config_versions
from storage.database import Database
from storage.errors import RoomNotFound, StorageValueError
from storage.events import _insert_imported, _prepare_import, check_event_fields
from storage.tables import Event, Lease, Room
from storage.vocabulary import ROOM_STATUSES


def _check_config(config: Any) -> dict[str, Any]:
    return check_room_config(config)


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
    with db.write() as session:
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
        "config": _check_config({} if config is None else config),
        "status": status,
        "created_at": now,
        "updated_at": now,
    }


def stop_room(
    db: Database,
    room_id: int,
    *,
    reason: str,
    allowed: Collection[str],
    notice: str,
    notice_data: dict[str, Any] | None = None,
) -> bool:
    """Stop a room in one write transaction: its status becomes ``stopped`` with ``reason``, its
    open turn (if any) ``stopped``, and a system event ``notice`` goes at the end of its log.
    ``False`` (nothing written) when the room's status is not one of ``allowed``.
    A model reply still in flight is then refused by the fence on the turn's state."""
    check_event_fields(speaker="room", content=notice, data=notice_data)
    for word in allowed:
        require_in(word, ROOM_STATUSES, "allowed status")
    now = db.now()
    with db.write_connection() as conn:
        probe = probe_room(conn, room_id)
        if probe.status not in allowed:
            return False
        conn.execute(
            update(ROOMS)
            .where(ROOMS.c.id == room_id)
            .values(status="stopped", stop_reason=reason, updated_at=now)
        )
        conn.execute(
            update(EVENTS)
            .where(EVENTS.c.room_id == room_id, open_turn_clause())
            .values(state="stopped", updated_at=now)
        )
        conn.execute(
            insert(EVENTS),
            {
                "room_id": room_id,
                "seq": probe.last_seq + 1,
                "activity": probe.last_activity,
                "round": probe.last_round,
                "kind": "system",
                "speaker": "room",
                "content": notice,
                "words": word_count(notice),
                "attempts": 0,
                "data": notice_data,
                "created_at": now,
                "updated_at": now,
            },
        )
        touch_room(conn, room_id, now)
    return True


def create_room_with_log(
    db: Database,
    name: str,
    config: dict[str, Any],
    records: Sequence[dict[str, Any]],
    *,
    status: str = "idle",
    stop_reason: str | None = None,
    config_versions: Sequence[dict[str, Any]] = (),
) -> tuple[int, list[Event]]:
    """Store a new room and its whole recorded log in one write transaction: no other process
    (a worker above all) can ever see the room without its log. All or nothing: every record is
    validated first, and any failure leaves no room behind. Returns the room id and its events.
    ``config_versions``: the room's earlier configuration versions (an exported room's), restored
    in the same transaction.
    """
    prepared = [_prepare_import(index, record) for index, record in enumerate(records)]
    values = new_room_values(db, name, config, status=status)
    values["stop_reason"] = stop_reason
    with db.write_connection() as conn:
        room_id = int(conn.execute(insert(ROOMS).returning(ROOMS.c.id), values).scalar_one())
        imported = _insert_imported(conn, room_id, prepared, values["created_at"])
        if config_versions:
            insert_config_versions(conn, room_id, config_versions, values["created_at"])
        return room_id, imported


def get_room(db: Database, room_id: int) -> Room:
    """The room as committed now. Raises :class:`RoomNotFound`."""
    row: Room = get_row(db, Room, room_id, RoomNotFound, "room")
    return row


def list_rooms(
    db: Database,
    *,
    status: str | Collection[str] | None = None,
    experiment_id: int | None = None,
    limit: int | None = 100,
    offset: int = 0,
) -> list[Room]:
    """Rooms, newest first, optionally filtered by status (one or several) and experiment."""
    check_limit(limit, offset)
    query = select(Room).order_by(col(Room.id).desc()).offset(offset)
    statuses = as_set(status)
    if statuses is not None:
        query = query.where(col(Room.status).in_(sorted(statuses)))
    if experiment_id is not None:
        query = query.where(Room.experiment_id == experiment_id)
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        return list(session.exec(query))


def count_rooms(
    db: Database, *, status: str | Collection[str] | None = None, experiment_id: int | None = None
) -> int:
    """How many rooms match the same filters as :func:`list_rooms` (for paging)."""
    query = select(func.count()).select_from(Room)
    statuses = as_set(status)
    if statuses is not None:
        query = query.where(col(Room.status).in_(sorted(statuses)))
    if experiment_id is not None:
        query = query.where(Room.experiment_id == experiment_id)
    with db.read() as session:
        return int(session.exec(query).one())


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
) -> Room | None:
    """Change the given fields; return the room as committed, or ``None`` when a check failed.

    Optimistic check: with ``expected_status``, the update applies only if the room's current
    status is one of them (e.g. resume only a ``paused`` room; two tabs pressing "resume" at once
    change it once). Fence: with ``token`` (a worker's lease token), it applies only while that
    lease is current and unexpired, so a zombie worker cannot mark a room settled or failed.
    Raises :class:`RoomNotFound`, :class:`StorageValueError`, :class:`ConfigContainsSecret`.
    """
    values: dict[str, Any] = {}
    if not isinstance(name, _Unset):
        values["name"] = check_name(name, "name")
    if not isinstance(status, _Unset):
        require_in(status, ROOM_STATUSES, "status")
        values["status"] = status
    if not isinstance(stop_reason, _Unset):
        values["stop_reason"] = stop_reason
    if not isinstance(config, _Unset):
        values["config"] = _check_config(config)
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
        room = session.get(Room, room_id, populate_existing=True)
        assert room is not None
        return room


def delete_room(db: Database, room_id: int) -> bool:
    """Delete a room with its events, lease and analysis answers. ``False`` if it did not exist.

    Forks of it keep their copied events (``parent_room_id`` becomes NULL).
    """
    with db.write() as session:
        result = session.exec(delete(Room).where(col(Room.id) == room_id))
        return bool(result.rowcount)


def fork_room(
    db: Database,
    room_id: int,
    at_seq: int,
    name: str | None = None,
    *,
    edit: dict[str, Any] | None = None,
    status: str = "idle",
    notice: str | None = None,
    notice_data: dict[str, Any] | None = None,
) -> int:
    """Copy a room's log up to and including ``at_seq`` into a new room; return its id.

    The fork gets the same config, records ``parent_room_id``/``parent_seq``, keeps every copied
    event's seq, request id, state and timestamps, and its ``parent_event_id`` links point at the
    fork's own copies. Experiment membership is not copied. A turn still open at the fork point is
    copied as it is, so a runtime driving the fork resumes it. ``0 <= at_seq <= latest seq`` or
    :class:`StorageValueError`; raises :class:`RoomNotFound`. One transaction: all or nothing.

    ``edit``: new values for the copy of event ``at_seq`` (``content``, ``speaker``, ``data``
    merged key by key); ``status``: the fork's status (``idle`` by default); ``notice``: a system
    event appended after the copies (with ``notice_data``).
    """
    if not isinstance(at_seq, int) or at_seq < 0:
        raise StorageValueError(f"at_seq={at_seq!r} must be an integer >= 0")
    require_in(status, ROOM_STATUSES, "status")
    unknown = sorted(set(edit or {}) - {"content", "speaker", "data"})
    if unknown:
        raise StorageValueError(f"edit has unknown field(s) {unknown}; use content, speaker, data")
    if notice is not None:
        check_event_fields(speaker="room", content=notice, data=notice_data)
    now = db.now()
    with db.write() as session:
        lock_room(session.connection(), room_id)
        source = session.get(Room, room_id)
        assert source is not None
        latest = last_seq(session.connection(), room_id)
        if at_seq > latest:
            raise StorageValueError(
                f"at_seq={at_seq} is beyond room {room_id}'s last event (seq {latest})"
            )
        fork = Room(
            name=check_name(name or f"{source.name} (fork at {at_seq})", "name"),
            config=source.config,
            status=status,
            parent_room_id=room_id,
            parent_seq=at_seq,
            created_at=now,
            updated_at=now,
        )
        session.add(fork)
        session.flush()
        assert fork.id is not None
        _copy_events(session, room_id, fork.id, at_seq)
        conn = session.connection()
        if edit:
            _edit_copy(conn, fork.id, at_seq, edit, now)
        if notice is not None:
            probe = probe_room(conn, fork.id)
            conn.execute(
                insert(EVENTS),
                {
                    "room_id": fork.id,
                    "seq": probe.last_seq + 1,
                    "activity": probe.last_activity,
                    "round": probe.last_round,
                    "kind": "system",
                    "speaker": "room",
                    "content": notice,
                    "words": word_count(notice),
                    "attempts": 0,
                    "data": notice_data,
                    "created_at": now,
                    "updated_at": now,
                },
            )
        return fork.id


def _edit_copy(conn: Any, fork_id: int, seq: int, edit: dict[str, Any], now: datetime) -> None:
    """Apply ``edit`` to the fork's copy of event ``seq`` (inside the fork's transaction)."""
    where = and_(EVENTS.c.room_id == fork_id, EVENTS.c.seq == seq)
    row = conn.execute(sa_select(EVENTS.c.data).where(where)).first()
    if row is None:
        raise StorageValueError(f"there is no event at seq {seq} to edit")
    values: dict[str, Any] = {"updated_at": now}
    if "content" in edit:
        if not isinstance(edit["content"], str):
            raise StorageValueError("edit content must be a string")
        values["content"] = edit["content"]
        values["words"] = word_count(edit["content"])
    if "speaker" in edit:
        check_event_fields(speaker=edit["speaker"], content="")
        values["speaker"] = edit["speaker"]
    if edit.get("data") is not None:
        check_event_fields(speaker="-", content="", data=edit["data"])
        values["data"] = {**(row[0] or {}), **edit["data"]}
    conn.execute(update(EVENTS).where(where).values(**values))


def _copy_events(session: Any, source_id: int, fork_id: int, at_seq: int) -> None:
    # INSERT ... SELECT keeps the copy inside the database (fast for long logs, portable SQL).
    events = Event.__table__  # type: ignore[attr-defined]
    columns = [c for c in events.columns if c.name not in ("id", "room_id")]
    chosen = sa_select(literal(fork_id).label("room_id"), *columns).where(
        events.c.room_id == source_id, events.c.seq <= at_seq
    )
    session.exec(insert(events).from_select(["room_id", *[c.name for c in columns]], chosen))
    # Re-point parent links from the source's event ids to the fork's copies (matched by seq).
    original = aliased(Event)
    copy = aliased(Event)
    parent_seq = (
        select(original.seq)
        .where(original.id == events.c.parent_event_id)
        .correlate(events)  # two levels down: SQLAlchemy would not correlate it by itself
        .scalar_subquery()
    )
    new_parent = (
        select(copy.id).where(copy.room_id == fork_id, copy.seq == parent_seq).scalar_subquery()
    )
    session.exec(
        update(events)
        .where(events.c.room_id == fork_id, events.c.parent_event_id.is_not(None))
        .values(parent_event_id=new_parent)
    )


def room_family(db: Database, room_id: int, limit: int = 500) -> list[Room]:
    """The fork tree ``room_id`` belongs to: its root (followed up ``parent_room_id``) and every
    room forked from it, directly or not, in id order (at most ``limit`` rooms). Raises
    :class:`RoomNotFound`."""
    with db.read() as session:
        room = session.get(Room, room_id)
        if room is None:
            raise RoomNotFound(f"room {room_id} does not exist")
        seen = {room_id}
        while room.parent_room_id is not None and room.parent_room_id not in seen:
            parent = session.get(Room, room.parent_room_id)
            if parent is None:
                break
            seen.add(parent.id)  # type: ignore[arg-type]
            room = parent
        family = {room.id: room}
        frontier = [room.id]
        while frontier and len(family) < limit:
            children = session.exec(
                select(Room).where(col(Room.parent_room_id).in_(frontier)).limit(limit)
            ).all()
            frontier = [c.id for c in children if c.id not in family]
            family.update({c.id: c for c in children})
        return [family[key] for key in sorted(family)][:limit]  # type: ignore[type-var]


def list_runnable_rooms(db: Database, now: datetime | None = None, limit: int = 100) -> list[int]:
    """Ids of rooms a worker may pick up: status ``running`` and lease free, released or expired.

    Least recently touched first (``updated_at``), so busy rooms do not starve quiet ones. A
    snapshot: acquire the lease (:func:`~storage.leases.acquire_lease`) before driving a room.
    """
    check_limit(limit)
    when = now or db.now()
    query = (
        select(Room.id)
        .outerjoin(Lease, and_(col(Lease.room_id) == Room.id))
        .where(
            Room.status == "running",
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
    "count_rooms",
    "create_room",
    "delete_room",
    "fork_room",
    "get_room",
    "list_rooms",
    "list_runnable_rooms",
    "create_room_with_log",
    "room_family",
    "new_room_values",
    "stop_room",
    "update_room",
]
