"""Partial drafts: the text of a running turn while its reply streams, and a person's request to
stop it (table ``turn_drafts``, revision 0012; docs/streaming.md).

A partial draft is never a message. The log (``events``) holds committed turns only, so what an
agent's prompt and an export read never contains one; the draft lives beside the log, one row per
running turn, and goes away when the turn commits (:func:`~storage.rooms.turns.commit_on` deletes it in
the same transaction, a stop request with it).

The writer is the room's lease holder, fenced by its lease ``token`` like every turn write:

- :func:`start_draft` for the first write of each streamed call: any text left by an earlier call
  of the turn (a dead process's, a lost lease's, or a failed try's) is discarded and the discard
  recorded on the turn (``data["discarded_drafts"]``: chars, writes, why, when); a stop request
  is kept.
- :func:`write_draft` with the text so far (the caller throttles; text past ``MAX_DRAFT_CHARS``
  is cut), or ``None`` to check only. Both answer whether the write applied (the turn is still
  running and the lease still the writer's) and who asked to stop.

Readers (the Room page, a participant's "... is typing"): :func:`partial_draft` (one turn) and
:func:`room_draft` (a room's running turn). Each returns a draft only while its turn is running
and its writer still holds the room's lease: a dead writer's text reads as no draft at once,
before anyone cleans it up.

People: :func:`request_stop` (no lease needed) marks the running turn's draft to be stopped; the
writer sees it at its next write (a few times a second) and ends the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from storage.database import Database
from storage.database.statements import by_dialect, in_list
from storage.errors import EventNotFound, StorageValueError
from storage.rooms.rows import EVENTS, LEASES, holds_lease, lease_ok, lock_room
from storage.tables import TurnDraft
from vocabulary import TurnState

DRAFTS = TurnDraft.__table__  # type: ignore[attr-defined]

#: The longest partial text stored (a longer reply's draft shows its first part).
MAX_DRAFT_CHARS = 20_000
#: The longest name recorded as who asked to stop.
MAX_BY_CHARS = 200
#: How many discarded drafts a turn keeps a record of (the most recent).
MAX_DISCARDS_KEPT = 20


@dataclass(frozen=True, slots=True)
class DraftWrite:
    """What a writer learns from a draft write: whether it applied (the turn is running and the
    lease is the writer's; ``False``: stop the call, the turn is no longer ours) and who asked to
    stop the draft (``None``: nobody)."""

    applied: bool
    stop_by: str | None = None


@dataclass(frozen=True, slots=True)
class PartialDraft:
    """A running turn's partial text as last written, for display only."""

    event_id: int
    room_id: int
    speaker: str
    text: str
    writes: int
    started_at: datetime
    updated_at: datetime
    stop_by: str | None


def _checked(text: Any) -> str:
    if not isinstance(text, str):
        raise StorageValueError(f"a draft's text must be a string, not {type(text).__name__}")
    return text[:MAX_DRAFT_CHARS]


def _insert(conn: Connection) -> Any:
    return (postgresql if conn.dialect.name == "postgresql" else sqlite).insert(DRAFTS)


def _turn_of(conn: Connection, event_id: int) -> tuple[int, str | None, dict[str, Any] | None]:
    row = conn.execute(
        select(EVENTS.c.room_id, EVENTS.c.state, EVENTS.c.data).where(EVENTS.c.id == event_id)
    ).first()
    if row is None:
        raise EventNotFound(f"event {event_id} does not exist")
    return int(row[0]), row[1], row[2]


def start_draft(db: Database, event_id: int, token: int, text: str = "") -> DraftWrite:
    """The first write of a streamed call of the running turn ``event_id`` (lease ``token``):
    discard any partial text left by an earlier call, recording it on the turn, and store
    ``text``; a stop request is kept."""
    text = _checked(text)
    now = db.now()
    with db.write_connection() as conn:
        room_id = _turn_of(conn, event_id)[0]
        lock_room(conn, room_id)
        _, state, data = _turn_of(conn, event_id)
        if state != TurnState.RUNNING or not holds_lease(conn, room_id, token, now):
            return DraftWrite(False)
        old = conn.execute(
            select(DRAFTS.c.token, DRAFTS.c.text, DRAFTS.c.writes, DRAFTS.c.stop_by).where(
                DRAFTS.c.event_id == event_id
            )
        ).first()
        if old is None:
            conn.execute(
                _insert(conn).values(
                    event_id=event_id,
                    room_id=room_id,
                    token=token,
                    text=text,
                    writes=1 if text else 0,
                    started_at=now,
                    updated_at=now,
                )
            )
            return DraftWrite(True)
        if old[1]:
            why = "retried" if old[0] == token else "crash or lost lease"
            record = {"chars": len(old[1]), "writes": old[2], "why": why, "at": now.isoformat()}
            kept = [*((data or {}).get("discarded_drafts") or []), record][-MAX_DISCARDS_KEPT:]
            conn.execute(
                update(EVENTS)
                .where(EVENTS.c.id == event_id)
                .values(data={**(data or {}), "discarded_drafts": kept})
            )
        conn.execute(
            update(DRAFTS)
            .where(DRAFTS.c.event_id == event_id)
            .values(token=token, text=text, writes=1 if text else 0, started_at=now, updated_at=now)
        )
        return DraftWrite(True, old[3])


_FENCE = select(
    EVENTS.c.room_id, EVENTS.c.state, LEASES.c.owner, LEASES.c.token, LEASES.c.expires_at
).select_from(EVENTS.outerjoin(LEASES, LEASES.c.room_id == EVENTS.c.room_id))


def _ours(row: Any, token: int, now: datetime) -> bool:
    """The turn is running and ``token`` is its room's current lease."""
    return (
        row is not None
        and row[1] == TurnState.RUNNING
        and lease_ok(row[2], row[3], row[4], token, now)
    )


def write_draft(db: Database, event_id: int, token: int, text: str | None) -> DraftWrite:
    """Store ``text`` (cut to ``MAX_DRAFT_CHARS``; ``None``: only check, reading) as the running
    turn's partial draft, fenced by the lease ``token``. Not durable (a draft can be written
    again): a fraction of a committed turn's cost."""
    if text is not None:
        text = _checked(text)
    now = db.now()
    if text is None:  # a check only: no write lock taken
        with db.read_connection() as conn:
            row = conn.execute(_FENCE.where(EVENTS.c.id == event_id)).first()
            if not _ours(row, token, now):
                return DraftWrite(False)
            stop = select(DRAFTS.c.stop_by).where(DRAFTS.c.event_id == event_id)
            return DraftWrite(True, conn.execute(stop).scalar())
    with db.write_connection(durable=False) as conn:
        row = conn.execute(_FENCE.where(EVENTS.c.id == event_id)).first()
        if not _ours(row, token, now):
            return DraftWrite(False)
        assert row is not None
        insert = _insert(conn).values(
            event_id=event_id,
            room_id=row[0],
            token=token,
            text=text,
            writes=1,
            started_at=now,
            updated_at=now,
        )
        upsert = insert.on_conflict_do_update(
            index_elements=["event_id"],
            set_={
                "token": token,
                "text": text,
                "writes": DRAFTS.c.writes + 1,
                "updated_at": now,
            },
        ).returning(DRAFTS.c.stop_by)
        return DraftWrite(True, conn.execute(upsert).scalar())


def request_stop(db: Database, event_id: int, by: str) -> bool:
    """Ask the writer of the running turn ``event_id`` to stop its draft (recorded: who, when);
    ``False`` when the turn is not running (committed, stopped, or waiting meanwhile). A second
    request keeps the first one's name. The writer sees it at its next write."""
    if not isinstance(by, str) or not by.strip() or len(by) > MAX_BY_CHARS:
        raise StorageValueError(f"who stops a draft must be a name of 1-{MAX_BY_CHARS} characters")
    now = db.now()
    with db.write_connection() as conn:
        room_id = _turn_of(conn, event_id)[0]
        lock_room(conn, room_id)
        if _turn_of(conn, event_id)[1] != TurnState.RUNNING:
            return False
        insert = _insert(conn).values(
            event_id=event_id,
            room_id=room_id,
            token=None,
            text="",
            writes=0,
            started_at=now,
            updated_at=now,
            stop_by=by,
            stop_at=now,
        )
        conn.execute(
            insert.on_conflict_do_update(
                index_elements=["event_id"],
                set_={"stop_by": by, "stop_at": now},
                where=DRAFTS.c.stop_by.is_(None),
            )
        )
        return True


_READ = (
    select(
        DRAFTS.c.event_id,
        DRAFTS.c.room_id,
        EVENTS.c.speaker,
        DRAFTS.c.text,
        DRAFTS.c.writes,
        DRAFTS.c.started_at,
        DRAFTS.c.updated_at,
        DRAFTS.c.stop_by,
        DRAFTS.c.token,
        LEASES.c.owner,
        LEASES.c.token,
        LEASES.c.expires_at,
    )
    .select_from(
        DRAFTS.join(EVENTS, EVENTS.c.id == DRAFTS.c.event_id).outerjoin(
            LEASES, LEASES.c.room_id == DRAFTS.c.room_id
        )
    )
    .where(EVENTS.c.state == TurnState.RUNNING)
)


def _live(rows: Sequence[Any], now: datetime) -> PartialDraft | None:
    for row in rows:
        if row[3] and lease_ok(row[9], row[10], row[11], row[8], now):
            return PartialDraft(*row[:8])
    return None


def partial_draft(db: Database, event_id: int) -> PartialDraft | None:
    """The partial text of the running turn ``event_id`` (issue 21's "... is typing" reads
    this), or ``None``: no text yet, the turn is not running, or its writer lost the lease."""
    with db.read_connection() as conn:
        rows = conn.execute(_READ.where(DRAFTS.c.event_id == event_id)).all()
    return _live(rows, db.now())


def room_draft(db: Database, room_id: int) -> PartialDraft | None:
    """The partial draft of ``room_id``'s running turn (see :func:`partial_draft`), or ``None``."""
    with db.read_connection() as conn:
        rows = conn.execute(_READ.where(DRAFTS.c.room_id == room_id)).all()
    return _live(rows, db.now())


def stop_requested(db: Database, event_id: int) -> str | None:
    """Who asked to stop the draft of turn ``event_id`` (``None``: nobody, or no such row)."""
    with db.read_connection() as conn:
        return conn.execute(select(DRAFTS.c.stop_by).where(DRAFTS.c.event_id == event_id)).scalar()


_DROP = by_dialect(
    lambda server: delete(DRAFTS).where(in_list(DRAFTS.c.event_id, "ids", server=server))
)


def drop_drafts(conn: Connection, event_ids: Sequence[int]) -> None:
    """Inside the caller's write transaction: remove the drafts (and stop requests) of turns
    just committed."""
    if event_ids:
        conn.execute(_DROP(conn), {"ids": sorted(set(event_ids))})


__all__ = [
    "MAX_DRAFT_CHARS",
    "DraftWrite",
    "PartialDraft",
    "drop_drafts",
    "partial_draft",
    "request_stop",
    "room_draft",
    "start_draft",
    "stop_requested",
    "write_draft",
]
