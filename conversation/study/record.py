"""A launched study's record: its row as the study's code names it (``Study``), the definition
in force for it (checked once per process and version), and the fields of a participant who
leaves with an exit status (its code from that definition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import storage
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError
from conversation.study.definition.document import StudyDefinition, definition_from_dict
from conversation.study.errors import REFUSALS, StudyRefused
from conversation.vocabulary import ExitStatus, GroupStatus, ParticipantStage


@dataclass(frozen=True, slots=True)
class Study:
    """A launched study: its code (in the links), name, experiment, status and cap."""

    id: int
    code: str
    name: str
    experiment_id: int | None
    status: str
    cap: int | None
    version: int
    seed: int

    @classmethod
    def of(cls, row: Any) -> Study:
        return cls(
            id=int(row.id),
            code=row.code,
            name=row.name,
            experiment_id=row.experiment_id,
            status=row.status,
            cap=row.cap,
            version=row.version,
            seed=int(row.seed),
        )


def get_study(db: storage.Database, code: Any) -> Study:
    """The study of a link's code; :class:`StudyRefused` (``unknown``) when there is none."""
    if not isinstance(code, str) or not 0 < len(code) <= 40:
        raise StudyRefused("unknown")
    with translated(REFUSALS):
        return Study.of(storage.get_study(db, code))


#: Checked definitions by (study id, version, code): immutable values, read on every page
#: refresh, checked once per process and version (the code tells two databases' studies apart).
_DEFINITIONS: dict[tuple[int, int, str], StudyDefinition] = {}
_MAX_CACHED = 64


def study_definition(db: storage.Database, study: Study) -> StudyDefinition:
    """The definition in force for ``study`` (as read: its ``version``)."""
    key = (study.id, study.version, study.code)
    found = _DEFINITIONS.get(key)
    if found is None:
        with translated(REFUSALS):
            row = storage.get_study(db, study.code)
        found = definition_from_dict(row.definition)
        if row.version == study.version:
            if len(_DEFINITIONS) >= _MAX_CACHED:
                _DEFINITIONS.clear()
            _DEFINITIONS[key] = found
    return found


def exit_values(definition: StudyDefinition, status: ExitStatus, now: Any) -> dict[str, Any]:
    """The participant's fields when they leave with ``status``: its code, the time."""
    return {
        "stage": ParticipantStage.EXIT,
        "exit_status": status,
        "exit_code": definition.model.exit.code(status),
        "finished_at": now,
    }


def member(db: storage.Database, study: Study, participant_id: Any) -> Any:
    """The participant of ``study`` with this id (a researcher's act names one), or
    ``ConversationValueError``."""
    if not isinstance(participant_id, int) or isinstance(participant_id, bool):
        raise ConversationValueError(f"participant_id={participant_id!r} must be a whole number")

    def not_in_study(_: Any) -> ConversationValueError:
        return ConversationValueError(
            f"participant {participant_id} is not in study {study.code!r}"
        )

    with translated({storage.ParticipantNotFound: not_in_study}):
        person = storage.get_participant(db, participant_id)
    if person.study_id != study.id:
        raise not_in_study(person)
    return person


def ended_study_room(db: storage.Database, room_id: int) -> bool:
    """Whether room ``room_id`` is a study group's conversation that has ended: a message there
    would not be part of the study, and must not restart it (the Room page offers no restart)."""
    with translated():
        group = storage.group_of_room(db, room_id)
    return group is not None and group.status != GroupStatus.RUNNING


__all__ = ["Study", "ended_study_room", "exit_values", "get_study", "member", "study_definition"]
