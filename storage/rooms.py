"""Rooms: create, read, list, update, delete, fork, and the runnable-room scan for workers."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Final

from sqlalchemy import and_, delete, func, insert, literal, literal_column, or_, update
from sqlalchemy import select as sa_select
from sqlalchemy.orm import aliased
from sqlmodel import col, select

from storage._tx import (
    EVENTS,
    INSERT_EVENT,
    LEASES,
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
    note_edit,
    notice_row,
    open_turn_clause,
    probe_room,
    require_in,
    word_count,
)
from storage.config_versions import check_room_config, insert_config_versions
from storage.database import Database
from storage.errors import ExperimentNotFound, RecordInUse, RoomNotFound, StorageValueError
from storage.events import _insert_imported, check_event_fields, prepare_import
from storage.tables import Event, Experiment, Lease, Room
from vocabulary import ROOM_STATUSES, RoomStatus, TurnState


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
    check_room_move(notice, notice_data, allowed)
    now = db.now()
    with db.write_connection() as conn:
        return stop_on(conn, room_id, reason, allowed, notice, notice_data, now)


def check_room_move(
    notice: str, notice_data: dict[str, Any] | None, allowed: Collection[str]
) -> None:
    """The checks of a room's move made by a person or a study (:func:`stop_on`,
    :func:`pause_on`): its notice's fields and the statuses it applies in."""
    check_event_fields(speaker="room", content=notice, data=notice_data)
    for word in allowed:
        require_in(word, ROOM_STATUSES, "allowed status")


def stop_on(
    conn: Any,
    room_id: int,
    reason: str,
    allowed: Collection[str],
    notice: str,
    notice_data: dict[str, Any] | None,
    now: datetime,
) -> bool:
    """:func:`stop_room`'s write, inside the caller's write transaction (a study's transition
    stops its group's room in the same write as the rest)."""
    probe = probe_room(conn, room_id)
    if probe.status not in allowed:
        return False
    conn.execute(
        update(ROOMS)
        .where(ROOMS.c.id == room_id)
        .values(status=RoomStatus.STOPPED, stop_reason=reason, updated_at=now)
    )
    conn.execute(
        update(EVENTS)
        .where(EVENTS.c.room_id == room_id, open_turn_clause())
        .values(state=TurnState.STOPPED, updated_at=now)
    )
    _insert_notice(conn, room_id, probe, notice, notice_data, now)
    note_edit(conn, room_id, now)  # its open turn changed: a plan made before is refused
    return True


def pause_on(
    conn: Any,
    room_id: int,
    allowed: Collection[str],
    notice: str,
    notice_data: dict[str, Any] | None,
    now: datetime,
) -> bool:
    """Pause a room inside the caller's write transaction (as ``update_room(status=paused,
    expected_status=allowed, notice=...)`` does in its own): ``False`` (nothing written) when
    its status is not one of ``allowed``."""
    if lock_room(conn, room_id) not in allowed:
        return False
    conn.execute(
        update(ROOMS).where(ROOMS.c.id == room_id).values(status=RoomStatus.PAUSED, updated_at=now)
    )
    _append_notice(conn, room_id, notice, notice_data, now)
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
    prepared = [prepare_import(index, record) for index, record in enumerate(records)]
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
        if notice is not None:
            _append_notice(conn, room_id, notice, notice_data, now)
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


def _append_notice(
    conn: Any, room_id: int, notice: str, data: dict[str, Any] | None, now: datetime
) -> None:
    """A system event at the end of a room's log, inside the caller's write transaction."""
    _insert_notice(conn, room_id, probe_room(conn, room_id), notice, data, now)


def _insert_notice(
    conn: Any, room_id: int, probe: Any, notice: str, data: dict[str, Any] | None, now: datetime
) -> None:
    """The system event ``notice`` after the log end ``probe`` read (in this transaction)."""
    conn.execute(INSERT_EVENT, notice_row(room_id, probe, notice, data, now))


def fork_room(
    db: Database,
    room_id: int,
    at_seq: int,
    name: str | None = None,
    *,
    config: dict[str, Any] | None = None,
    edit: dict[str, Any] | None = None,
    status: str = "idle",
    notice: str | None = None,
    notice_data: dict[str, Any] | None = None,
) -> int:
    """Copy a room's log up to and including ``at_seq`` into a new room; return its id.

    The fork gets ``config`` (by default the room's current config), records
    ``parent_room_id``/``parent_seq``, keeps every copied event's seq, request id, state and
    timestamps, and its ``parent_event_id`` links point at the fork's own copies. Experiment
    membership is not copied. A turn still open at the fork point is copied as it is, so a runtime
    driving the fork resumes it. ``0 <= at_seq <= latest seq`` or :class:`StorageValueError`;
    raises :class:`RoomNotFound`. One transaction: all or nothing.

    ``edit``: new values for the copy of event ``at_seq`` (``content``, ``speaker``, ``data``
    merged key by key); ``status``: the fork's status (``idle`` by default). With ``notice``, a
    system event (``notice_data``: who forked it) follows the copied log.
    """
    _check_fork(at_seq, edit, status, notice, notice_data)
    now = db.now()
    with db.write() as session:
        conn = session.connection()
        lock_room(conn, room_id)
        source = session.get(Room, room_id)
        assert source is not None
        latest = last_seq(conn, room_id)
        if at_seq > latest:
            raise StorageValueError(
                f"at_seq={at_seq} is beyond room {room_id}'s last event (seq {latest})"
            )
        fork = Room(
            name=check_name(name or f"{source.name} (fork at {at_seq})", "name"),
            config=source.config if config is None else check_room_config(config),
            status=status,
            parent_room_id=room_id,
            parent_seq=at_seq,
            created_at=now,
            updated_at=now,
        )
        fork_id = add_row(session, fork)
        _copy_events(session, room_id, fork_id, at_seq)
        if edit:
            _edit_copy(conn, fork_id, at_seq, edit, now)
        if notice is not None:
            _append_notice(conn, fork_id, notice, notice_data, now)
        return fork_id


def _check_fork(
    at_seq: Any, edit: dict[str, Any] | None, status: str, notice: Any, notice_data: Any
) -> None:
    """:func:`fork_room`'s arguments, checked before anything is read."""
    if notice is not None:
        check_event_fields(speaker="room", content=notice, data=notice_data)
    if not isinstance(at_seq, int) or at_seq < 0:
        raise StorageValueError(f"at_seq={at_seq!r} must be an integer >= 0")
    require_in(status, ROOM_STATUSES, "status")
    unknown = sorted(set(edit or {}) - {"content", "speaker", "data"})
    if unknown:
        raise StorageValueError(f"edit has unknown field(s) {unknown}; use content, speaker, data")


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
    "create_room",
    "delete_room",
    "fork_room",
    "get_room",
    "list_rooms",
    "list_runnable_rooms",
    "create_room_with_log",
    "room_family",
    "live_leases",
    "new_room_values",
    "room_conditions",
    "room_order",
    "set_room_archived",
    "stop_room",
    "update_room",
]
