"""Qualitative coding: a codebook of labels, and researchers' tags (with an optional rating and
note) on any message, stored with who and when.

A room in an experiment uses its experiment's codebook (every room of the study is coded with the
same labels); a room outside any experiment has its own. A tag's label must be in the codebook
that applies to its message's room. Tags live in their own table (``storage.research.codes``), never in
event data, so coding a transcript never changes the room's log.

    add_label(db, "concession", experiment_id=3)
    tag_message(db, event_id, "concession", by="ann", rating=4, note="first move")
    tags(db, room_ids=[12, 13])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import storage
from conversation.access import Action, require
from conversation.boundary import storage_errors
from conversation.exceptions import ConversationValueError

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Tag:
    """One researcher's code on one message."""

    id: int
    event_id: int
    room_id: int
    label: str
    rating: int | None
    note: str | None
    by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Any) -> Tag:
        return cls(
            id=row.id,
            event_id=row.event_id,
            room_id=row.room_id,
            label=row.label,
            rating=row.rating,
            note=row.note,
            by=row.by,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )


def _call(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Storage's refusals as the project's errors (the rooms' boundary)."""
    return storage_errors(call, *args, **kwargs)


def codebook_owner(db: storage.Database, room_id: int) -> dict[str, int]:
    """Whose codebook a room's messages are coded with: ``{"experiment_id": ...}`` for a room in
    an experiment, ``{"room_id": ...}`` otherwise."""
    room = _call(storage.get_room, db, room_id)
    if room.experiment_id is not None:
        return {"experiment_id": room.experiment_id}
    return {"room_id": room_id}


def _owner(db: storage.Database, experiment_id: int | None, room_id: int | None) -> dict[str, int]:
    if experiment_id is not None and room_id is not None:
        raise ConversationValueError(
            "pass experiment_id=... or room_id=..., not both: a room in an experiment uses the "
            "experiment's codebook"
        )
    if experiment_id is not None:
        return {"experiment_id": experiment_id}
    if room_id is not None:
        return codebook_owner(db, room_id)
    raise ConversationValueError("name the codebook: pass experiment_id=... or room_id=...")


def codebook(
    db: storage.Database, *, experiment_id: int | None = None, room_id: int | None = None
) -> list[str]:
    """The labels of an experiment's codebook, or of the codebook a room uses, in order."""
    owner = _owner(db, experiment_id, room_id)
    return [row.label for row in _call(storage.code_labels, db, **owner)]


def add_label(
    db: storage.Database,
    label: str,
    *,
    experiment_id: int | None = None,
    room_id: int | None = None,
    description: str | None = None,
    actor: Any = None,
) -> list[str]:
    """Add a label to a codebook (an experiment's, or the one a room uses); the codebook after.
    A label already there is refused (``ConversationValueError``), as is a bad one (empty, over
    80 characters, a control character) or a codebook over 100 labels."""
    require(actor, Action.RUN_ANALYSIS)
    owner = _owner(db, experiment_id, room_id)
    _call(storage.add_code_label, db, label, description=description, **owner)
    return codebook(db, **owner)


def remove_label(
    db: storage.Database,
    label: str,
    *,
    experiment_id: int | None = None,
    room_id: int | None = None,
    actor: Any = None,
) -> list[str]:
    """Remove a label from a codebook (tags already given keep it); the codebook after."""
    require(actor, Action.RUN_ANALYSIS)
    owner = _owner(db, experiment_id, room_id)
    rows = _call(storage.code_labels, db, **owner)
    found = next((row for row in rows if row.label == label), None)
    if found is None:
        raise ConversationValueError(
            f"the codebook has no label {label!r}; its labels are {[r.label for r in rows]}"
        )
    _call(storage.remove_code_label, db, found.id)
    return codebook(db, **owner)


def tag_message(
    db: storage.Database,
    event_id: int,
    label: str,
    *,
    by: str,
    rating: int | None = None,
    note: str | None = None,
    actor: Any = None,
) -> Tag:
    """Tag a message (any event of a room) with a codebook label, as ``by``; tagging it again
    with the same label (same coder) replaces the rating and note. ``rating``: a whole number
    from -100 to 100; ``note``: free text up to 2,000 characters."""
    require(actor, Action.RUN_ANALYSIS)
    event = _call(storage.get_event, db, event_id)
    labels = codebook(db, room_id=event.room_id)
    if label not in labels:
        raise ConversationValueError(
            f"label {label!r} is not in the codebook of room {event.room_id} "
            f"({labels or 'empty'}); add it first with add_label"
        )
    return Tag.of(_call(storage.tag_event, db, event_id, label, by=by, rating=rating, note=note))


def untag(db: storage.Database, tag_id: int, *, actor: Any = None) -> bool:
    """Delete one tag; False when there was none."""
    require(actor, Action.RUN_ANALYSIS)
    return _call(storage.delete_tag, db, tag_id)


def tags(
    db: storage.Database,
    *,
    room_ids: int | Sequence[int] | None = None,
    event_id: int | None = None,
) -> list[Tag]:
    """Tags of some rooms and/or one message (by room, message, then order given)."""
    rows = _call(storage.message_tags, db, room_ids=room_ids, event_id=event_id)
    return [Tag.of(row) for row in rows]


__all__ = [
    "Tag",
    "add_label",
    "codebook",
    "codebook_owner",
    "remove_label",
    "tag_message",
    "tags",
    "untag",
]
