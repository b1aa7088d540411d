"""The tables of a room, its log and the turn protocol: rooms, events (the append-only log),
leases, a room's configuration versions and the partial drafts of streaming turns.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from storage.coltypes import JSONDoc, UTCDateTime, utcnow
from vocabulary import OPEN_TURN_STATES

OPEN_TURN_WHERE = "state IN ({})".format(", ".join(f"'{state}'" for state in OPEN_TURN_STATES))
"""The partial-index predicate for open turns, built from ``OPEN_TURN_STATES``."""
RUNNABLE_WHERE = "status = 'running'"
"""The partial-index predicate of the runnable-rooms scan (revision 0013)."""
ARCHIVED_WHERE = "archived_at IS NOT NULL"
"""The partial-index predicate of the archived rooms (revision 0014)."""


class Room(SQLModel, table=True):
    """A persisted room. ``config`` holds everything needed to rebuild its runtime: roster of agent
    specs, planner and settings, termination, prompt template, context policy, model binding spec,
    seed and the moderated flag (storage treats it as an opaque, secret-free JSON object)."""

    __tablename__ = "rooms"
    __table_args__ = (
        # Runnable-room scan (status='running', least recently touched first) and list_rooms(status).
        sa.Index("ix_rooms_status_updated", "status", "updated_at"),
        # Rooms of one experiment (Experiments and Results pages), newest id first.
        sa.Index("ix_rooms_experiment", "experiment_id", "id"),
        # Deleting a room sets its forks' parent_room_id to NULL: without this index each
        # deleted room scans the whole table (deleting a 1,000-room experiment took 7.5 s).
        sa.Index("ix_rooms_parent", "parent_room_id"),
        # The worker's scan in its exact order, over running rooms only (revision 0013): its
        # size and cost follow the running rooms, not the finished ones.
        sa.Index(
            "ix_rooms_runnable",
            "updated_at",
            "id",
            sqlite_where=sa.text(RUNNABLE_WHERE),
            postgresql_where=sa.text(RUNNABLE_WHERE),
        ),
        # The archived rooms only (revision 0014): the results pages' data version counts them
        # on every run; without it, a scan of every room with its config (0.15-0.6 s at 100,000).
        sa.Index(
            "ix_rooms_archived",
            "id",
            sqlite_where=sa.text(ARCHIVED_WHERE),
            postgresql_where=sa.text(ARCHIVED_WHERE),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    name: str
    status: str = Field(default="idle")
    stop_reason: str | None = Field(default=None, sa_type=sa.Text)
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    # A fork records where it came from; the parent may be deleted later (then NULL).
    parent_room_id: int | None = Field(default=None, foreign_key="rooms.id", ondelete="SET NULL")
    parent_seq: int | None = None
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="SET NULL"
    )
    condition: str | None = None
    replicate: int | None = None
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    # Set when a person archives it (revision 0005): hidden from Home and pickers by default.
    archived_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    # Changes to events already in the log made without the room's lease (a person's decision on
    # a turn, a stop), revision 0009. An append moves the last seq instead, and a lease-fenced
    # write is the lease holder's own: with the last seq, this tells a writer whether any event
    # of the view it planned from changed (the fences compare both).
    edits: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class Event(SQLModel, table=True):
    """One entry of a room's append-only log: a human message, an agent turn, a pass or a system
    event. ``(room_id, seq)`` is unique and seqs are contiguous from 1; ``request_id`` is unique per
    room (the same id again is the same message or turn)."""

    __tablename__ = "events"
    __table_args__ = (
        # The log's order: events after a seq (live polling), latest seq (max), fork copies.
        sa.UniqueConstraint("room_id", "seq", name="uq_events_room_seq"),
        # Idempotency: one message or turn per request id in a room (NULLs are distinct).
        sa.UniqueConstraint("room_id", "request_id", name="uq_events_room_request_id"),
        # "Is a turn open in this room?" on every claim; partial, so it stays tiny (only open turns).
        sa.Index(
            "ix_events_open_turns",
            "room_id",
            sqlite_where=sa.text(OPEN_TURN_WHERE),
            postgresql_where=sa.text(OPEN_TURN_WHERE),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    seq: int
    activity: int = 0
    round: int = 0
    kind: str
    speaker: str
    content: str = Field(default="", sa_type=sa.Text)
    # Derived from content by storage on every write (len(content.split())): summaries stay SQL.
    words: int = 0
    state: str | None = None
    request_id: str | None = None
    # Same room by construction (forks remap it). Deliberately no foreign key: SQLite would then
    # need one more index on this hot table to delete a room's events without an O(n^2) scan.
    parent_event_id: int | None = None
    saw: list[int] | None = Field(default=None, sa_type=JSONDoc())
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    latency: float | None = None
    error: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    attempts: int = 0
    next_attempt_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    visible_to: list[str] | None = Field(default=None, sa_type=JSONDoc())
    data: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class Lease(SQLModel, table=True):
    """Who may drive a room. One row per room, never deleted while the room exists, so ``token``
    only ever grows: a released or expired lease keeps its token and the next holder gets token+1."""

    __tablename__ = "leases"

    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE", primary_key=True)
    owner: str | None = None
    token: int = 0
    expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    acquired_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class RoomConfigVersion(SQLModel, table=True):
    """One version of a room's configuration (revision 0008). A room edited after creation keeps
    every version here, version 1 being the one it was created with; ``rooms.config`` is always
    the newest. ``from_seq``: the seq of the ``config_changed`` system event that applied it (0
    for version 1); turns claimed after that event use it."""

    __tablename__ = "room_config_versions"
    __table_args__ = (
        # One row per (room, version); also the index a room's versions are read and deleted by.
        sa.UniqueConstraint("room_id", "version", name="uq_room_config_versions_room_version"),
    )

    id: int | None = Field(default=None, primary_key=True)
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    version: int
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    by: str | None = None
    changes: list[str] | None = Field(default=None, sa_type=JSONDoc())
    from_seq: int = 0
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


# --- streaming drafts (revision 0012) ---------------------------------------------------------


class TurnDraft(SQLModel, table=True):
    """The partial text of a running turn while its reply streams (issue 20), and a person's
    request to stop that draft. Never a message: the log (``events``) holds committed turns
    only, so prompts and exports never read this table. One row per turn, written by the lease
    holder (``token``: a row of another token is a dead holder's, read as no draft), removed
    when the turn commits. Revision 0012."""

    __tablename__ = "turn_drafts"
    __table_args__ = (sa.Index("ix_turn_drafts_room", "room_id"),)

    event_id: int = Field(primary_key=True, foreign_key="events.id", ondelete="CASCADE")
    room_id: int = Field(foreign_key="rooms.id", ondelete="CASCADE")
    token: int | None = None
    text: str = Field(default="", sa_type=sa.Text)
    writes: int = 0
    started_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    stop_by: str | None = None
    stop_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


__all__ = [
    "ARCHIVED_WHERE",
    "Event",
    "Lease",
    "OPEN_TURN_WHERE",
    "RUNNABLE_WHERE",
    "Room",
    "RoomConfigVersion",
    "TurnDraft",
]
