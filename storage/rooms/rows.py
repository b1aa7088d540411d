"""A room's rows as every write path sees them (private to storage): the room probe and locks,
the one builder of an events row, and detached snapshots.

The write-path helpers take a Core ``Connection`` inside a write transaction (ORM sessions pass
``session.connection()``), and use statements built once at import time: a durable turn append
must stay well under 2 ms, and statement construction would otherwise be a large share of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final, NamedTuple

from sqlalchemy import bindparam, func, insert, select, text, update
from sqlalchemy.engine import Connection

from storage.database.statements import DriverStatement, by_dialect, in_list
from storage.errors import RoomNotFound
from storage.tables import OPEN_TURN_WHERE, Event, Lease, Room

ROOMS = Room.__table__  # type: ignore[attr-defined]
EVENTS = Event.__table__  # type: ignore[attr-defined]
LEASES = Lease.__table__  # type: ignore[attr-defined]


def open_turn_clause(alias: str | None = None) -> Any:
    """``state IN ('running', 'waiting', 'interrupted')`` as literal SQL.

    Literal, not bound parameters: SQLite only uses the partial index ``ix_events_open_turns``
    when the query's WHERE clause visibly implies the index's own predicate.
    """
    return text(f"{alias}.{OPEN_TURN_WHERE}" if alias else OPEN_TURN_WHERE)


class RoomProbe(NamedTuple):
    """What a write needs to know about a room, read in one statement under the room lock."""

    status: str
    owner: str | None
    token: int | None
    expires_at: datetime | None
    last_seq: int
    last_activity: int
    last_round: int
    open_seq: int | None
    request_seq: int | None
    #: ``rooms.edits``: changes to existing events made without the lease (see ``note_edit``).
    edits: int = 0

    def holds(self, token: int, now: datetime) -> bool:
        """Whether ``token`` is the current, unexpired lease."""
        return lease_ok(self.owner, self.token, self.expires_at, token, now)


def lease_ok(
    owner: str | None, current: int | None, expires_at: datetime | None, token: int, now: datetime
) -> bool:
    """The fence: a holder, the same token, and not expired."""
    return owner is not None and current == token and expires_at is not None and expires_at > now


def probe_columns() -> list[Any]:
    """What a write needs to know about a room (status, lease, log end, open turn), as columns
    correlated with ``ROOMS``: shared by the single-room and the batch probes."""
    last = EVENTS.alias("e_last")
    opened = EVENTS.alias("e_open")
    last_of = select(last.c.seq, last.c.activity, last.c.round)
    newest = last_of.where(last.c.room_id == ROOMS.c.id).order_by(last.c.seq.desc()).limit(1)
    return [
        ROOMS.c.status,
        LEASES.c.owner,
        LEASES.c.token,
        LEASES.c.expires_at,
        select(func.max(last.c.seq)).where(last.c.room_id == ROOMS.c.id).scalar_subquery(),
        newest.with_only_columns(last.c.activity).scalar_subquery(),
        newest.with_only_columns(last.c.round).scalar_subquery(),
        select(opened.c.seq)
        .where(opened.c.room_id == ROOMS.c.id, open_turn_clause("e_open"))
        .limit(1)
        .scalar_subquery(),
        ROOMS.c.edits,
    ]


ROOM_AND_LEASE = ROOMS.outerjoin(LEASES, LEASES.c.room_id == ROOMS.c.id)


def _build_probe() -> Any:
    requested = EVENTS.alias("e_req")
    return (
        select(
            *probe_columns(),
            select(requested.c.seq)
            .where(
                requested.c.room_id == ROOMS.c.id,
                requested.c.request_id == bindparam("request_id"),
            )
            .scalar_subquery(),
        )
        .select_from(ROOM_AND_LEASE)
        .where(ROOMS.c.id == bindparam("room_id"))
    )


_PROBE = _build_probe()
_LOCK_ROOMS = by_dialect(
    lambda server: (
        select(ROOMS.c.id)
        .where(in_list(ROOMS.c.id, "ids", server=server))
        .order_by(ROOMS.c.id)
        .with_for_update()
    )
)
_LOCK_ROOM = select(ROOMS.c.status).where(ROOMS.c.id == bindparam("room_id")).with_for_update()
_TOUCH_ROOM = (
    update(ROOMS).where(ROOMS.c.id == bindparam("room_id")).values(updated_at=bindparam("now"))
)
_NOTE_EDIT = (
    update(ROOMS)
    .where(ROOMS.c.id == bindparam("room_id"))
    .values(edits=ROOMS.c.edits + 1, updated_at=bindparam("now"))
)
INSERT_EVENT = insert(EVENTS)
"""Execute with a dict of column values (compiled once per column set, then cached)."""
UPDATE_EVENT = update(EVENTS).where(EVENTS.c.id == bindparam("b_event_id"))
"""Execute with ``{"b_event_id": id, **column_values}``: the SET clause follows the keys."""
EVENT_INSERTS = DriverStatement(INSERT_EVENT)
"""The turn protocol's inserts (claims): rows of :func:`event_row`, bound once each."""
EVENT_UPDATES = DriverStatement(UPDATE_EVENT)
"""The turn protocol's updates (commits, decisions): ``UPDATE_EVENT``'s rows, bound once each."""
_LAST_SEQ = select(func.max(EVENTS.c.seq)).where(EVENTS.c.room_id == bindparam("room_id"))
_LEASE = select(LEASES.c.owner, LEASES.c.token, LEASES.c.expires_at).where(
    LEASES.c.room_id == bindparam("room_id")
)


def probe_room(conn: Connection, room_id: int, request_id: str | None = None) -> RoomProbe:
    """Lock the room and read its status, lease, log end and open turn in one statement.

    SQLite: the ``BEGIN IMMEDIATE`` transaction already excludes every other writer, so the probe
    alone suffices. Server databases: the room row is locked by a *separate* statement first. Under
    READ COMMITTED a ``SELECT ... FOR UPDATE`` that waited for the lock re-checks only the locked
    row; its subqueries would still see the snapshot from before the wait (a stale ``max(seq)``).
    The next statement takes a fresh snapshot that includes the previous holder's commit.
    Raises :class:`RoomNotFound`.
    """
    if conn.dialect.name != "sqlite":
        lock_room(conn, room_id)
    row = conn.execute(_PROBE, {"room_id": room_id, "request_id": request_id}).first()
    if row is None:
        raise RoomNotFound(f"room {room_id} does not exist")
    status, owner, token, expires_at, last, activity, round_, open_seq, edits, request_seq = row
    return RoomProbe(
        status,
        owner,
        token,
        expires_at,
        int(last or 0),
        activity or 0,
        round_ or 0,
        open_seq,
        request_seq,
        int(edits or 0),
    )


_PROBE_MANY = by_dialect(
    lambda server: (
        select(ROOMS.c.id, *probe_columns())
        .select_from(ROOM_AND_LEASE)
        .where(in_list(ROOMS.c.id, "ids", server=server))
    )
)


def probe_rooms(conn: Connection, room_ids: Iterable[int]) -> dict[int, RoomProbe]:
    """:func:`probe_room` for many rooms in one statement: ``{room_id: probe}`` of those that
    exist, without the request-id part (``None``) and without locking: on a server database the
    caller locks them first (:func:`lock_rooms`)."""
    probes: dict[int, RoomProbe] = {}
    for row in conn.execute(_PROBE_MANY(conn), {"ids": list(room_ids)}):
        room_id, status, owner, token, expires_at, last, activity, round_, open_seq, edits = row
        probes[room_id] = RoomProbe(
            status,
            owner,
            token,
            expires_at,
            int(last or 0),
            activity or 0,
            round_ or 0,
            open_seq,
            None,
            int(edits or 0),
        )
    return probes


def lock_room(conn: Connection, room_id: int) -> str:
    """Serialise writers of one room, check it exists, and return its status.

    SQLite: the ``BEGIN IMMEDIATE`` write transaction already holds the database's write lock, so
    this is a plain existence check (SQLAlchemy drops ``FOR UPDATE`` there). PostgreSQL: the row
    lock makes concurrent appends, claims and lease changes of the same room take turns, so
    ``max(seq) + 1`` and lease checks see the previous writer's committed result (READ COMMITTED).
    """
    status = conn.execute(_LOCK_ROOM, {"room_id": room_id}).scalar()
    if status is None:
        raise RoomNotFound(f"room {room_id} does not exist")
    return str(status)


def lock_rooms(conn: Connection, room_ids: Iterable[int]) -> set[int]:
    """Lock several rooms in id order (a fixed order, so two batches cannot deadlock).

    Returns the ids that exist. Only needed on server databases (SQLite holds the write lock).
    """
    ids = sorted(set(room_ids))
    if not ids:
        return set()
    return set(conn.execute(_LOCK_ROOMS(conn), {"ids": ids}).scalars())


def holds_lease(conn: Connection, room_id: int, token: int, now: datetime) -> bool:
    """Inside a write transaction: whether ``token`` is the room's current, unexpired lease."""
    row = conn.execute(_LEASE, {"room_id": room_id}).first()
    return row is not None and lease_ok(row[0], row[1], row[2], token, now)


def note_edit(conn: Connection, room_id: int, now: datetime) -> None:
    """Count a change to an event already in the room's log made without the room's lease (a
    person's decision on a turn, a stop) and bump ``updated_at``: a write planned from a view
    of the log before it is refused (``expected_edits``), as one planned before an append is
    (``expected_last_seq``)."""
    conn.execute(_NOTE_EDIT, {"room_id": room_id, "now": now})


def touch_room(conn: Connection, room_id: int, now: datetime) -> None:
    """Bump ``rooms.updated_at`` (the Results page sorts by activity; runnable scans are fair)."""
    conn.execute(_TOUCH_ROOM, {"room_id": room_id, "now": now})


def last_seq(conn: Connection, room_id: int) -> int:
    """``max(seq)`` of a room's log, 0 when empty (one probe of the ``(room_id, seq)`` index)."""
    return int(conn.execute(_LAST_SEQ, {"room_id": room_id}).scalar() or 0)


def insert_event(conn: Connection, values: dict[str, Any]) -> int:
    """Insert one event row; return its new id."""
    key = conn.execute(INSERT_EVENT, values).inserted_primary_key
    assert key is not None
    return int(key[0])


def _row_template() -> dict[str, Any]:
    """Every events column but ``id``, in the table's order, with the table model's plain default
    (``None`` for the required columns and the times: every write gives them)."""
    return {
        name: None if field.default_factory is not None or field.is_required() else field.default
        for name, field in Event.model_fields.items()
        if name != "id"
    }


_ROW_TEMPLATE: Final = _row_template()
EVENT_COLUMNS: Final = tuple(_ROW_TEMPLATE)
"""The columns :func:`event_row` fills: every events column but ``id``, in the table's order."""


def event_row(
    room_id: int,
    seq: int,
    *,
    kind: str,
    speaker: str,
    now: datetime,
    content: str = "",
    **fields: Any,
) -> dict[str, Any]:
    """The values of a new events row, every column but ``id`` (the one builder of a row: every
    insert sends the same column set, so statements compile once and batches go as one
    ``executemany``).

    ``fields`` are other columns (unknown names raise ``TypeError``). Derived here: ``words`` from
    ``content``; ``saw`` and ``visible_to`` as lists; ``created_at`` defaults to ``now`` and
    ``updated_at`` to ``created_at``. Values are not checked: callers check them first.
    """
    row = {**_ROW_TEMPLATE, **fields}
    if len(row) != len(_ROW_TEMPLATE):
        raise TypeError(f"unknown event column(s): {sorted(row.keys() - _ROW_TEMPLATE.keys())}")
    row.update(room_id=room_id, seq=seq, kind=kind, speaker=speaker, content=content)
    row["words"] = word_count(content)
    for name in ("saw", "visible_to"):
        if row[name] is not None:
            row[name] = list(row[name])
    row["created_at"] = row["created_at"] or now
    row["updated_at"] = row["updated_at"] or row["created_at"]
    return row


def notice_row(
    room_id: int, probe: RoomProbe, notice: str, data: dict[str, Any] | None, now: datetime
) -> dict[str, Any]:
    """A system event by ``room`` right after the log end ``probe`` read, in its last activity
    and round (a pause, a stop, a settlement, a fork...)."""
    return event_row(
        room_id,
        probe.last_seq + 1,
        kind="system",
        speaker="room",
        content=notice,
        data=data,
        activity=probe.last_activity,
        round=probe.last_round,
        now=now,
    )


def append_notice(
    conn: Connection, room_id: int, notice: str, data: dict[str, Any] | None, now: datetime
) -> None:
    """A system event at the end of a room's log, inside the caller's write transaction."""
    conn.execute(INSERT_EVENT, notice_row(room_id, probe_room(conn, room_id), notice, data, now))


def _snapshot_template() -> tuple[dict[str, Any], tuple[str, ...], dict[str, Any]]:
    """Every events column in field order with its plain default (the required ones and those
    with a default factory hold ``_MISSING``), the required names, and the factories."""
    template: dict[str, Any] = {}
    required: list[str] = []
    factories: dict[str, Any] = {}
    for name, field in Event.model_fields.items():
        template[name] = _MISSING
        if field.default_factory is not None:
            factories[name] = field.default_factory
        elif field.is_required():
            required.append(name)
        else:
            # Every plain default of the events table is immutable (None, 0, ""): shared safely.
            assert field.default is None or isinstance(field.default, int | str), name
            template[name] = field.default
    return template, tuple(required), factories


_MISSING: Final = object()
_EVENT_TEMPLATE, _EVENT_REQUIRED, _EVENT_FACTORIES = _snapshot_template()


def event_snapshot(**values: Any) -> Event:
    """A detached :class:`Event` snapshot from known column values.

    Skips validation (values come from the database or were just written with these exact
    values), as ``Event.model_construct`` does, and builds the same object (fields in the same
    order, defaults for the columns not given, unknown names ignored, the same
    ``model_fields_set``) several times faster: a worker makes a few per turn (~40 us each
    through ``model_construct``). Snapshots are for reading; never ``session.add`` one.
    """
    fields = {**_EVENT_TEMPLATE, **values}  # the template's order; given values win
    if len(fields) != len(_EVENT_TEMPLATE):
        fields = {name: fields[name] for name in _EVENT_TEMPLATE}
    for name, factory in _EVENT_FACTORIES.items():
        if fields[name] is _MISSING:
            fields[name] = factory()
    for name in _EVENT_REQUIRED:
        if fields[name] is _MISSING:
            del fields[name]  # as model_construct: a required value not given is left unset
    event = Event.__new__(Event)  # SQLModel's __new__ prepares the private attributes
    object.__setattr__(event, "__dict__", fields)
    object.__setattr__(event, "__pydantic_fields_set__", values.keys() & _EVENT_TEMPLATE.keys())
    object.__setattr__(event, "__pydantic_extra__", None)
    object.__setattr__(event, "__pydantic_private__", None)
    return event


def event_from_row(row: Any) -> Event:
    """A detached :class:`Event` snapshot from a Core row of the events table."""
    return event_snapshot(**row._mapping)


def word_count(content: str) -> int:
    """Words as the summaries count them: whitespace-separated tokens."""
    return len(content.split())
