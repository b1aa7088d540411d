"""Forks: a room's log copied up to an event into a new room (optionally with that event
edited), and the fork tree a room belongs to.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, insert, literal, update
from sqlalchemy import select as sa_select
from sqlalchemy.orm import aliased
from sqlmodel import col, select

from storage.checks import check_name, require_in
from storage.database import Database
from storage.database.statements import add_row
from storage.errors import RoomNotFound, StorageValueError
from storage.rooms.config_versions import check_room_config
from storage.rooms.log import check_event_fields
from storage.rooms.rows import EVENTS, append_notice, last_seq, lock_room, word_count
from storage.tables import Event, Room
from vocabulary import ROOM_STATUSES


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
            append_notice(conn, fork_id, notice, notice_data, now)
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


__all__ = ["fork_room", "room_family"]
