"""The append-only event log of a room: appending messages, reading the log, polling its end."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy import select as sa_select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from storage.checks import as_set, check_json, check_limit, require_in
from storage.database import Database
from storage.database.statements import get_row
from storage.errors import EventNotFound, RequestIdConflict, StorageValueError
from storage.rooms.rows import (
    EVENTS,
    ROOMS,
    RoomProbe,
    event_from_row,
    event_row,
    event_snapshot,
    insert_event,
    open_turn_clause,
    probe_room,
    touch_room,
)
from storage.tables import Event
from vocabulary import EVENT_KINDS, TURN_KINDS, TURN_STATES, EventKind, TurnState

log = logging.getLogger(__name__)
_KEEP = object()


def check_event_fields(
    *,
    speaker: Any,
    content: Any,
    request_id: Any = None,
    visible_to: Any = None,
    data: Any = None,
    saw: Any = None,
) -> None:
    """Validate the common event fields (raises :class:`StorageValueError`)."""
    if not isinstance(speaker, str) or not speaker.strip():
        raise StorageValueError(f"speaker={speaker!r} must be a non-empty string")
    if not isinstance(content, str):
        raise StorageValueError(f"content must be a string, not {type(content).__name__}")
    if request_id is not None and (not isinstance(request_id, str) or not request_id):
        raise StorageValueError(f"request_id={request_id!r} must be a non-empty string or None")
    if visible_to is not None and (
        not isinstance(visible_to, (list, tuple)) or not all(isinstance(v, str) for v in visible_to)
    ):
        raise StorageValueError(
            f"visible_to={visible_to!r} must be a list of speaker names or None"
        )
    if saw is not None and (
        # set(map(type, ...)): a C-speed check (a turn's saw lists every seq it was shown)
        not isinstance(saw, (list, tuple)) or not set(map(type, saw)) <= {int}
    ):
        raise StorageValueError(f"saw={saw!r} must be a list of seqs (integers) or None")
    if data is not None:
        if not isinstance(data, dict):
            raise StorageValueError(f"data must be a dict or None, not {type(data).__name__}")
        check_json(data, "data")


def check_error(error: Any, field: str = "error") -> None:
    """A turn's error: a strict JSON dict with at least ``type`` and ``message``."""
    if not isinstance(error, dict) or not {"type", "message"} <= set(error):
        raise StorageValueError(
            f"{field}={error!r} must be a dict with at least 'type' and 'message' (and 'code')"
        )
    check_json(error, field)


def check_state(kind: str, state: Any, field: str, *, required: bool) -> None:
    """``human``/``system`` events have no turn state; an ``agent``/``pass`` event's state is a
    turn state (with ``required=False``, ``None`` is allowed too)."""
    if kind not in TURN_KINDS and state is not None:
        raise StorageValueError(f"{field}={state!r}: {kind} events have no turn state; pass None")
    if kind in TURN_KINDS and (required or state is not None):
        require_in(state, TURN_STATES, field)


def append_message(
    db: Database,
    room_id: int,
    kind: str,
    speaker: str,
    content: str,
    *,
    request_id: str | None = None,
    activity: int | None = None,
    round: int | None = None,  # noqa: A002 - the column's name
    state: str | None | object = _KEEP,
    visible_to: Sequence[str] | None = None,
    data: dict[str, Any] | None = None,
    parent_event_id: int | None = None,
    model: str | None = None,
    reopen: Collection[str] = (),
    charge: Callable[[Connection], None] | None = None,
) -> Event:
    """Append one event at the end of the room's log and return it (committed, durable).

    Guarantees:
    - ``seq`` is ``max(seq) + 1`` computed inside the write transaction, so concurrent appenders
      (threads, processes, machines) get contiguous, unique seqs and never a lock error;
    - idempotent on ``request_id``: the same id with the same ``kind``, ``speaker`` and ``content``
      returns the existing event and writes nothing (a double click, a retried request); the same
      id with anything different raises :class:`RequestIdConflict`;
    - ``activity``/``round`` default from the log: a ``human`` message opens a new activity at
      round 0; any other kind continues the last event's (0 and 0 in an empty room);
    - ``state``: none for ``human``/``system`` events, ``"done"`` by default for ``agent``/``pass``
      (turns still to run are claimed: :func:`~storage.rooms.batch.claim_turn`);
    - with ``reopen`` (statuses), a new event moves a room in one of them to ``running`` (stop
      reason cleared) in the same transaction; an event sent again changes nothing;
    - ``charge`` (a rate count, ``studies.PostRate``) runs first in the same transaction.
    Raises :class:`RoomNotFound` and :class:`StorageValueError`.
    """
    values = message_values(
        kind,
        speaker,
        content,
        request_id=request_id,
        activity=activity,
        round=round,
        state=state,
        visible_to=visible_to,
        data=data,
        parent_event_id=parent_event_id,
        model=model,
    )
    now = db.now()
    try:
        with db.write_connection() as conn:
            if charge is not None:
                charge(conn)
            return append_on(conn, room_id, values, reopen, now)
    except IntegrityError:
        # Two writers past the room lock (another isolation level?): the unique keys held.
        existing = find_event(db, room_id, request_id) if request_id is not None else None
        if existing is None:
            raise
        return same_or_conflict(existing, kind, speaker, content)


def message_values(
    kind: str,
    speaker: str,
    content: str,
    *,
    request_id: str | None = None,
    activity: int | None = None,
    round: int | None = None,  # noqa: A002 - the column's name
    state: str | None | object = _KEEP,
    visible_to: Sequence[str] | None = None,
    data: dict[str, Any] | None = None,
    parent_event_id: int | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """:func:`append_message`'s fields, checked, as the values its write takes."""
    state = _message_state(kind, state)
    check_event_fields(
        speaker=speaker, content=content, request_id=request_id, visible_to=visible_to, data=data
    )
    return {
        "kind": kind,
        "speaker": speaker,
        "content": content,
        "state": state,
        "activity": activity,
        "round": round,
        "request_id": request_id,
        "parent_event_id": parent_event_id,
        "model": model,
        "visible_to": visible_to,
        "data": data,
    }


def _message_state(kind: str, state: Any) -> str | None:
    """:func:`append_message`'s ``state``, checked against its ``kind`` (and the kind checked)."""
    require_in(kind, EVENT_KINDS, "kind")
    if state is _KEEP:
        state = TurnState.DONE if kind in TURN_KINDS else None
    check_state(kind, state, "state", required=False)
    return state  # type: ignore[no-any-return]


def append_on(
    conn: Connection,
    room_id: int,
    values: dict[str, Any],
    reopen: Collection[str],
    now: datetime,
) -> Event:
    """:func:`append_message`'s write, inside the caller's write transaction (``values`` from
    :func:`message_values`)."""
    probe = probe_room(conn, room_id, values["request_id"])
    if probe.request_seq is not None:
        existing = event_at(conn, room_id, probe.request_seq)
        return same_or_conflict(existing, values["kind"], values["speaker"], values["content"])
    row = next_row(room_id, probe, values, now)
    event_id = insert_event(conn, row)
    touch_room(conn, room_id, now)
    if reopen and probe.status in reopen:
        conn.execute(_REOPEN, {"room_id": room_id, "now": now})
    return event_snapshot(id=event_id, **row)


_REOPEN = (
    update(ROOMS)
    .where(ROOMS.c.id == bindparam("room_id"))
    .values(status="running", stop_reason=None, updated_at=bindparam("now"))
)


def next_row(
    room_id: int, probe: RoomProbe, values: dict[str, Any], now: datetime
) -> dict[str, Any]:
    """The row of ``values`` (kind, speaker, content, other columns) right after the log end
    ``probe`` read. ``activity``/``round`` given as ``None`` come from the log: a ``human``
    message opens a new activity at round 0; any other kind continues the last event's."""
    human = values["kind"] == EventKind.HUMAN
    activity, round_ = values["activity"], values["round"]
    if activity is None:
        activity = probe.last_activity + 1 if human else probe.last_activity
    if round_ is None:
        round_ = 0 if human else probe.last_round
    fields = {**values, "activity": activity, "round": round_}
    return event_row(room_id, probe.last_seq + 1, now=now, **fields)


_EVENT_AT = sa_select(EVENTS).where(
    EVENTS.c.room_id == bindparam("room_id"), EVENTS.c.seq == bindparam("seq")
)


def event_at(conn: Connection, room_id: int, seq: int) -> Event:
    return event_from_row(conn.execute(_EVENT_AT, {"room_id": room_id, "seq": seq}).one())


def _by_request_id(session: Session, room_id: int, request_id: str) -> Event | None:
    return session.exec(
        select(Event).where(Event.room_id == room_id, Event.request_id == request_id)
    ).first()


def same_or_conflict(existing: Event, kind: str, speaker: str, content: str) -> Event:
    if (existing.kind, existing.speaker, existing.content) == (kind, speaker, content):
        return existing
    raise RequestIdConflict(
        f"room {existing.room_id}: request_id {existing.request_id!r} already names event seq "
        f"{existing.seq} ({existing.kind} by {existing.speaker!r}); it was sent again with a "
        f"different {'speaker' if existing.speaker != speaker else 'kind' if existing.kind != kind else 'content'}. "
        "Use a new request id for a new message.",
        room_id=existing.room_id,
        request_id=existing.request_id or "",
    )


def events(
    db: Database,
    room_id: int,
    *,
    after_seq: int | None = None,
    limit: int | None = None,
    kinds: str | Collection[str] | None = None,
) -> list[Event]:
    """The room's events with ``seq > after_seq`` (all when ``None``), in seq order.

    Served by the ``(room_id, seq)`` index: a page costs the same with a million stored events.
    An unknown room gives an empty list (use :func:`~storage.rooms.room.get_room` to tell apart).
    """
    check_limit(limit)
    query = select(Event).where(Event.room_id == room_id).order_by(col(Event.seq))
    if after_seq is not None:
        query = query.where(Event.seq > after_seq)
    wanted = as_set(kinds)
    if wanted is not None:
        query = query.where(col(Event.kind).in_(sorted(wanted)))
    if limit is not None:
        query = query.limit(limit)
    with db.read() as session:
        return list(session.exec(query))


def latest_seq(db: Database, room_id: int) -> int:
    """The seq of the room's last event (0 when empty): one index probe, cheap to poll."""
    with db.read() as session:
        value = session.exec(select(func.max(Event.seq)).where(Event.room_id == room_id)).one()
    return int(value or 0)


def get_event(db: Database, event_id: int) -> Event:
    """One event by id. Raises :class:`EventNotFound`."""
    row: Event = get_row(db, Event, event_id, EventNotFound, "event")
    return row


def find_event(db: Database, room_id: int, request_id: str) -> Event | None:
    """The room's event sent with ``request_id``, or ``None``."""
    with db.read() as session:
        return _by_request_id(session, room_id, request_id)


def open_turn(db: Database, room_id: int) -> Event | None:
    """The room's open turn (``running``, ``waiting`` or ``interrupted``), or ``None``.

    :func:`~storage.rooms.turns.claim_turn` guarantees there is at most one. A worker that takes
    over a room resumes this turn before planning a new one.
    """
    with db.read() as session:
        return session.exec(
            select(Event)
            .where(Event.room_id == room_id, open_turn_clause())
            .order_by(col(Event.seq))
            .limit(1)
        ).first()


__all__ = [
    "append_message",
    "append_on",
    "check_error",
    "check_event_fields",
    "check_state",
    "events",
    "find_event",
    "get_event",
    "latest_seq",
    "message_values",
    "open_turn",
]
