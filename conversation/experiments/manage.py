"""Managing stored experiments: rename, archive (with their rooms) and delete.

Deleting an experiment deletes its rooms too (each with its log, lease and analysis answers) and
the experiment's analyses: a study is removed whole, nothing is left detached or orphaned. It is
refused while the experiment runs (stop it first) or a worker still holds one of its rooms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import storage
from conversation.access import Action, require
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError, InUseError
from conversation.rooms.manage import MAX_NAME_CHARS
from conversation.vocabulary import ExperimentStatus


def rename_experiment(
    db: Any, experiment_id: int, name: str, *, actor: Any = None
) -> storage.Experiment:
    """Give the experiment a new name (stripped, 1 to 200 characters). Its rooms keep theirs."""
    require(actor, Action.CREATE_EXPERIMENT)
    new = (name or "").strip()
    if not new or len(new) > MAX_NAME_CHARS:
        raise ConversationValueError(
            f"name: an experiment name needs 1 to {MAX_NAME_CHARS} characters, not {len(new)}; "
            "type a shorter (or non-empty) name"
        )
    with translated():
        found = storage.update_experiment(db, experiment_id, name=new)
    assert found is not None  # no expected status was asked for
    return found


def archive_experiment(
    db: Any, experiment_id: int, archived: bool = True, *, actor: Any = None
) -> storage.Experiment:
    """Hide the experiment and its rooms from the pickers and Home (``False``: show them again)."""
    require(actor, Action.CREATE_EXPERIMENT)
    with translated():
        return storage.set_experiment_archived(db, experiment_id, archived)


@dataclass(frozen=True, slots=True)
class ExperimentDeletion:
    """What deleting an experiment takes with it (for the confirmation)."""

    experiment_id: int
    name: str
    rooms: int
    answers: int
    blocked: str | None

    def describe(self) -> str:
        return (
            f"Deleting experiment #{self.experiment_id} also deletes its {self.rooms} room(s) "
            f"with their logs, its analyses and {self.answers} analysis answer(s), for good."
        )


def experiment_deletion(db: Any, experiment_id: int) -> ExperimentDeletion:
    with translated():
        experiment = storage.get_experiment(db, experiment_id)
        rooms = storage.count_rooms(db, experiment_id=experiment_id)
        answers = storage.count_answers(db, experiment_id=experiment_id)
    blocked = (
        "it is running: stop it first, then delete it"
        if experiment.status == ExperimentStatus.RUNNING
        else None
    )
    return ExperimentDeletion(
        experiment_id=experiment_id,
        name=experiment.name,
        rooms=rooms,
        answers=answers,
        blocked=blocked,
    )


def delete_experiment(db: Any, experiment_id: int, *, actor: Any = None) -> None:
    """Delete the experiment with its rooms and analyses (see the module docstring). Raises
    ``ConversationStateError`` (nothing deleted) while it runs or a worker holds one of its
    rooms, ``ConversationValueError`` when there is no such experiment."""
    require(actor, Action.CREATE_EXPERIMENT)
    try:
        with translated():
            deleted = storage.delete_experiment(db, experiment_id, with_rooms=True)
    except InUseError as exc:
        raise InUseError(f"experiment {experiment_id} cannot be deleted now: {exc}") from exc
    if not deleted:
        raise ConversationValueError(f"experiment {experiment_id} does not exist")


__all__ = [
    "ExperimentDeletion",
    "archive_experiment",
    "delete_experiment",
    "experiment_deletion",
    "rename_experiment",
]
