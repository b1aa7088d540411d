"""Managing stored rooms: store a new one, rename, archive (hide from lists) and delete, with
nothing orphaned.

A delete removes the room's whole log, its lease and its analysis answers (one transaction). It is
refused while a worker holds the room (stop it first: the worker releases it at its next step),
and for a room of a running experiment (a worker would create it again: stop the experiment).
Storage errors come back as the project's (``ConversationValueError`` / ``ConversationStateError``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import storage
from conversation.access import Action, require
from conversation.boundary import storage_errors, translated
from conversation.exceptions import ConversationStateError, ConversationValueError, InUseError
from conversation.rooms.config import RoomConfig
from conversation.vocabulary import ExperimentStatus

MAX_NAME_CHARS = 200


def store_room(
    db: Any,
    name: str,
    config: RoomConfig,
    experiment_id: int | None = None,
    condition: str | None = None,
    replicate: int | None = None,
) -> int:
    """Store a new room (status ``idle``) from a checked name, placement and config (what
    ``Room.create`` checked); returns its id."""
    return storage_errors(
        storage.create_room,
        db,
        name.strip(),
        config.to_dict(),
        experiment_id=experiment_id,
        condition=condition,
        replicate=replicate,
    )


def rename_room(db: Any, room_id: int, name: str, *, actor: Any = None) -> storage.Room:
    """Give the room a new name (stripped, 1 to 200 characters); returns the room as stored."""
    require(actor, Action.CREATE_ROOM)
    new = (name or "").strip()
    if not new or len(new) > MAX_NAME_CHARS:
        raise ConversationValueError(
            f"name: a room name needs 1 to {MAX_NAME_CHARS} characters, not {len(new)}; "
            "type a shorter (or non-empty) name"
        )
    with translated():
        room = storage.update_room(db, room_id, name=new)
    assert room is not None  # no fence was asked for
    return room


def archive_room(
    db: Any, room_id: int, archived: bool = True, *, actor: Any = None
) -> storage.Room:
    """Hide the room from Home and the pickers (``archived=False``: show it again). Its log and
    its status are untouched: archiving a running room does not stop it."""
    require(actor, Action.CREATE_ROOM)
    with translated():
        return storage.set_room_archived(db, room_id, archived)


@dataclass(frozen=True, slots=True)
class DeletionImpact:
    """What deleting a room takes with it: shown in the confirmation before anything goes."""

    room_id: int
    name: str
    events: int
    answers: int
    blocked: str | None
    """Why it cannot be deleted now (``None``: it can)."""

    def describe(self) -> str:
        return (
            f"Deleting room #{self.room_id} removes its {self.events} logged event(s) and "
            f"{self.answers} analysis answer(s) for good. Forks of it keep their own copies."
        )


def deletion_impact(db: Any, room_id: int) -> DeletionImpact:
    """What :func:`delete_room` would remove, and whether it is refused now (and why)."""
    with translated():
        room = storage.get_room(db, room_id)
        events = storage.latest_seq(db, room_id)
        lease = storage.get_lease(db, room_id)
        experiment = (
            storage.get_experiment(db, room.experiment_id)
            if room.experiment_id is not None
            else None
        )
        answers = storage.count_answers(db, room_ids=[room_id])
    return DeletionImpact(
        room_id=room_id,
        name=room.name,
        events=events,
        answers=answers,
        blocked=_blocked(db, room, lease, experiment),
    )


def _blocked(db: Any, room: storage.Room, lease: Any, experiment: Any) -> str | None:
    if experiment is not None and experiment.status == ExperimentStatus.RUNNING:
        return (
            f"it belongs to experiment #{experiment.id}, which is running (a worker would create "
            "it again): stop the experiment first"
        )
    held = lease is not None and lease.owner is not None and lease.expires_at is not None
    if held and lease.expires_at > db.now():
        return "a worker is running it now: stop the room first, then delete it"
    return None


def delete_room(db: Any, room_id: int, *, actor: Any = None) -> None:
    """Delete the room with its log, lease and analysis answers. Raises
    ``ConversationStateError`` (nothing deleted) while a worker holds it or its experiment runs,
    ``ConversationValueError`` when there is no such room."""
    require(actor, Action.CREATE_ROOM)
    impact = deletion_impact(db, room_id)
    if impact.blocked:
        raise ConversationStateError(f"room {room_id} cannot be deleted now: {impact.blocked}")
    try:
        with translated():
            deleted = storage.delete_room(db, room_id)
    except InUseError as exc:  # a worker took it between the check and the delete
        raise InUseError(str(exc)) from exc
    if not deleted:
        raise ConversationValueError(f"room {room_id} does not exist (already deleted?)")


__all__ = [
    "DeletionImpact",
    "archive_room",
    "delete_room",
    "deletion_impact",
    "rename_room",
]
