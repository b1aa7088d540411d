"""Qualitative coding: codebook labels and the tags researchers put on messages.

A codebook belongs to an experiment (its rooms share it) or, for a room outside any experiment,
to the room. A tag is one row per (message, label, coder): tagging again updates its rating and
note. Deleting a room, an event or an experiment deletes its tags and labels (foreign keys with
``ON DELETE CASCADE``). Tags never live in event data.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete
from sqlmodel import col, select

from storage.checks import check_name
from storage.database import Database
from storage.database.statements import add_row
from storage.errors import DuplicateName, EventNotFound, RecordNotFound, StorageValueError
from storage.tables import CodeLabel, Event, MessageTag

MAX_LABEL_CHARS = 80
MAX_DESCRIPTION_CHARS = 500
MAX_NOTE_CHARS = 2_000
MAX_LABELS = 100
RATING_RANGE = (-100, 100)


def _owner(experiment_id: int | None, room_id: int | None) -> Any:
    if (experiment_id is None) == (room_id is None):
        raise StorageValueError(
            "a codebook belongs to exactly one experiment or one room: pass experiment_id=... "
            f"or room_id=... (got experiment_id={experiment_id!r}, room_id={room_id!r})"
        )
    if experiment_id is not None:
        return CodeLabel.experiment_id == experiment_id
    return CodeLabel.room_id == room_id


def _text(value: Any, field: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise StorageValueError(f"{field} must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise StorageValueError(f"{field} is {len(value)} characters long; the limit is {limit}")
    return value.strip() or None


def add_code_label(
    db: Database,
    label: str,
    *,
    experiment_id: int | None = None,
    room_id: int | None = None,
    description: str | None = None,
) -> CodeLabel:
    """Add ``label`` to the codebook of an experiment or of a room; return the stored label.

    Raises :class:`DuplicateName` when the codebook has it already, :class:`StorageValueError`
    for a bad label or a codebook of more than ``MAX_LABELS`` labels."""
    check_name(label, "label", max_length=MAX_LABEL_CHARS)
    description = _text(description, "description", MAX_DESCRIPTION_CHARS)
    owner = _owner(experiment_id, room_id)
    with db.write() as session:
        existing = [row.label for row in session.exec(select(CodeLabel).where(owner))]
        if label in existing:
            raise DuplicateName(f"the codebook already has the label {label!r}")
        if len(existing) >= MAX_LABELS:
            raise StorageValueError(
                f"a codebook holds at most {MAX_LABELS} labels; remove one before adding {label!r}"
            )
        row = CodeLabel(
            experiment_id=experiment_id,
            room_id=room_id,
            label=label,
            description=description,
            created_at=db.now(),
        )
        add_row(session, row)
        return row


def code_labels(
    db: Database, *, experiment_id: int | None = None, room_id: int | None = None
) -> list[CodeLabel]:
    """The codebook of an experiment or of a room, in the order the labels were added."""
    owner = _owner(experiment_id, room_id)
    with db.read() as session:
        return list(session.exec(select(CodeLabel).where(owner).order_by(col(CodeLabel.id))))


def remove_code_label(db: Database, label_id: int) -> bool:
    """Remove a label from its codebook (tags already given keep their label); False if absent."""
    with db.write() as session:
        result = session.exec(delete(CodeLabel).where(col(CodeLabel.id) == label_id))
        return bool(result.rowcount)  # type: ignore[attr-defined]


def tag_event(
    db: Database,
    event_id: int,
    label: str,
    *,
    by: str,
    rating: int | None = None,
    note: str | None = None,
) -> MessageTag:
    """Tag one event with ``label`` as ``by``; tagging it again with the same label updates the
    rating and note (and ``updated_at``). Raises :class:`EventNotFound`, :class:`StorageValueError`."""
    check_name(label, "label", max_length=MAX_LABEL_CHARS)
    check_name(by, "by")
    note = _text(note, "note", MAX_NOTE_CHARS)
    low, high = RATING_RANGE
    if rating is not None and (
        not isinstance(rating, int) or isinstance(rating, bool) or not low <= rating <= high
    ):
        raise StorageValueError(f"rating={rating!r} must be a whole number from {low} to {high}")
    now = db.now()
    with db.write() as session:
        event = session.get(Event, event_id)
        if event is None:
            raise EventNotFound(f"event {event_id} does not exist")
        tag = session.exec(
            select(MessageTag).where(
                MessageTag.event_id == event_id, MessageTag.label == label, MessageTag.by == by
            )
        ).first()
        if tag is None:
            tag = MessageTag(
                event_id=event_id,
                room_id=event.room_id,
                label=label,
                rating=rating,
                note=note,
                by=by,
                created_at=now,
                updated_at=now,
            )
            add_row(session, tag)
        else:
            tag.rating, tag.note, tag.updated_at = rating, note, now
            session.add(tag)
            session.flush()
        return tag


def delete_tag(db: Database, tag_id: int) -> bool:
    """Delete one tag; False when it did not exist."""
    with db.write() as session:
        result = session.exec(delete(MessageTag).where(col(MessageTag.id) == tag_id))
        return bool(result.rowcount)  # type: ignore[attr-defined]


def get_tag(db: Database, tag_id: int) -> MessageTag:
    """One tag. Raises :class:`RecordNotFound`."""
    with db.read() as session:
        tag = session.get(MessageTag, tag_id)
    if tag is None:
        raise RecordNotFound(f"tag {tag_id} does not exist")
    return tag


def message_tags(
    db: Database,
    *,
    room_ids: int | Sequence[int] | None = None,
    event_id: int | None = None,
    event_ids: Sequence[int] | None = None,
) -> list[MessageTag]:
    """Tags of some rooms, one event and/or some events (``event_ids``: one query for a shown
    page of messages), by room, event and id."""
    query = select(MessageTag).order_by(
        col(MessageTag.room_id), col(MessageTag.event_id), col(MessageTag.id)
    )
    if room_ids is not None:
        ids = [room_ids] if isinstance(room_ids, int) else list(room_ids)
        query = query.where(col(MessageTag.room_id).in_(ids))
    if event_id is not None:
        query = query.where(MessageTag.event_id == event_id)
    if event_ids is not None:
        wanted = sorted({int(i) for i in event_ids})
        if not wanted:
            return []
        query = query.where(col(MessageTag.event_id).in_(wanted))
    with db.read() as session:
        return list(session.exec(query))


def tag_labels(db: Database, room_ids: Sequence[int]) -> dict[int, str]:
    """Each tagged event of these rooms -> its distinct labels as a JSON array (the ``tags``
    column of the events exports)."""
    labels: dict[int, list[str]] = {}
    for tag in message_tags(db, room_ids=room_ids):
        seen = labels.setdefault(tag.event_id, [])
        if tag.label not in seen:
            seen.append(tag.label)
    return {event_id: json.dumps(found, ensure_ascii=False) for event_id, found in labels.items()}


__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_LABELS",
    "MAX_LABEL_CHARS",
    "MAX_NOTE_CHARS",
    "RATING_RANGE",
    "add_code_label",
    "code_labels",
    "delete_tag",
    "get_tag",
    "message_tags",
    "remove_code_label",
    "tag_event",
    "tag_labels",
]
