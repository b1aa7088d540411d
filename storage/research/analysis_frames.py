"""pandas DataFrames of what researchers add to rooms: an analysis's answers and the coders'
message tags, each row with its room's design fields (imported on demand, as
:mod:`storage.research.frames`: pandas).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy import select

from storage.database import Database
from storage.research.frames import as_frame, error_fields
from storage.tables import AnalysisAnswer, Event, MessageTag, Room

EVENTS = Event.__table__  # type: ignore[attr-defined]


def analysis_frame(db: Database, analysis_id: int) -> pd.DataFrame:
    """An analysis's answers joined with each room's design fields (chart answers by condition).

    Columns: room_id, name, experiment_id, condition, replicate, status (the room's), state (the
    answer's: planned, asking, answered or failed), answer, comment, model, cost, error_type,
    error_message. A planned answer's row is there before it is asked (answer empty).
    """
    answers = AnalysisAnswer.__table__  # type: ignore[attr-defined]
    rooms = Room.__table__  # type: ignore[attr-defined]
    query = (
        select(
            rooms.c.id,
            rooms.c.name,
            rooms.c.experiment_id,
            rooms.c.condition,
            rooms.c.replicate,
            rooms.c.status,
            answers.c.state,
            answers.c.answer,
            answers.c.comment,
            answers.c.model,
            answers.c.cost,
            answers.c.error,
        )
        .join(rooms, rooms.c.id == answers.c.room_id)
        .where(answers.c.analysis_id == analysis_id)
        .order_by(rooms.c.id)
    )
    with db.read() as session:
        rows = session.connection().execute(query).all()
    columns = [
        "room_id",
        "name",
        "experiment_id",
        "condition",
        "replicate",
        "status",
        "state",
        "answer",
        "comment",
        "model",
        "cost",
        "error_type",
        "error_message",
    ]
    return as_frame([(*row[:11], *error_fields(row[11])) for row in rows], columns)


TAG_COLUMNS = [
    "tag_id",
    "room_id",
    "experiment_id",
    "condition",
    "seq",
    "event_id",
    "kind",
    "speaker",
    "content",
    "label",
    "rating",
    "note",
    "by",
    "created_at",
    "updated_at",
]


def tags_frame(db: Database, room_ids: Sequence[int] | None = None) -> pd.DataFrame:
    """Every message tag of some rooms (all rooms: ``None``) with its message and its room's
    design fields: the coding table (its own CSV export, and tag counts by condition).

    Columns: ``TAG_COLUMNS`` (``created_at``/``updated_at`` are the tag's)."""
    tags = MessageTag.__table__  # type: ignore[attr-defined]
    rooms = Room.__table__  # type: ignore[attr-defined]
    query = (
        select(
            tags.c.id,
            tags.c.room_id,
            rooms.c.experiment_id,
            rooms.c.condition,
            EVENTS.c.seq,
            tags.c.event_id,
            EVENTS.c.kind,
            EVENTS.c.speaker,
            EVENTS.c.content,
            tags.c.label,
            tags.c.rating,
            tags.c.note,
            tags.c.by,
            tags.c.created_at,
            tags.c.updated_at,
        )
        .join(EVENTS, EVENTS.c.id == tags.c.event_id)
        .join(rooms, rooms.c.id == tags.c.room_id)
        .order_by(tags.c.room_id, EVENTS.c.seq, tags.c.id)
    )
    if room_ids is not None:
        query = query.where(tags.c.room_id.in_(list(room_ids)))
    with db.read() as session:
        rows = session.connection().execute(query).all()
    frame = as_frame(rows, TAG_COLUMNS)
    frame["rating"] = frame["rating"].astype("Int64")
    return frame


__all__ = ["TAG_COLUMNS", "analysis_frame", "tags_frame"]
