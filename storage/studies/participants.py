"""A study's participants: admitted by the link (or found again by their recruitment id), looked
up by a token's hash, listed, and moved along their path.

Admitting a participant is one write transaction that locks the study's row first (the cap, the
same recruitment id twice). A participant's stage changes are conditional (``expected_stages``):
two browser tabs, or a lobby tick and a decline at once, change it once; and every stage written
is checked against the one table of a participant's moves (``vocabulary.STAGE_TRANSITIONS``).
Tokens are stored only as hashes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from storage.database import Database
from storage.errors import InvalidTransition, ParticipantNotFound, StorageValueError
from storage.studies.study import locked_study
from storage.studies.study_log import note_on
from storage.tables import StudyParticipant, StudyToken
from vocabulary import PARTICIPANT_STAGES, StudyEventKind, StudyStatus, may_move


@dataclass(frozen=True, slots=True)
class Admission:
    """What :func:`admit_participant` did: the participant, whether they were already there
    (the same recruitment id), or why they were refused (``locked``, ``closed``, ``full``)."""

    participant: StudyParticipant | None
    resumed: bool = False
    refused: str | None = None


#: The word a refused admission gives when the study holds its cap already.
FULL = "full"


def admit_participant(
    db: Database,
    study_id: int,
    *,
    token_hash: str,
    pseudonym: str,
    recruitment_id: str | None,
    recruitment: Mapping[str, Any] | None,
    labels: Mapping[str, Any] | None,
    stage: str,
    cap: int | None,
) -> Admission:
    """Admit a person, or find them again: the same ``recruitment_id`` gets the participant
    already there (``resumed``, with this token added to theirs). A new person is refused when
    the study is not ``open`` or ``cap`` places are taken (:func:`places_taken`)."""
    now = db.now()
    with db.write() as session:
        study = locked_study(session, study_id)
        if recruitment_id is not None:
            found = session.exec(
                select(StudyParticipant).where(
                    StudyParticipant.study_id == study_id,
                    StudyParticipant.recruitment_id == recruitment_id,
                )
            ).first()
            if found is not None:
                session.add(
                    StudyToken(
                        token_hash=token_hash, participant_id=int(found.id or 0), created_at=now
                    )
                )
                return Admission(found, resumed=True)
        if study.status != StudyStatus.OPEN:
            return Admission(None, refused=study.status)
        if cap is not None and places_taken(session, study_id) >= cap:
            return Admission(None, refused=FULL)
        person = StudyParticipant(
            study_id=study_id,
            pseudonym=pseudonym,
            recruitment_id=recruitment_id,
            recruitment=dict(recruitment) if recruitment else None,
            labels=dict(labels) if labels else None,
            stage=stage,
            version=study.version,
            joined_at=now,
            last_seen_at=now,
            updated_at=now,
        )
        session.add(person)
        session.flush()
        session.add(
            StudyToken(token_hash=token_hash, participant_id=int(person.id or 0), created_at=now)
        )
        note_on(
            session.connection(), study_id, StudyEventKind.JOINED, now, participant_id=person.id
        )
        return Admission(person)


def places_taken(session: Any, study_id: int) -> int:
    """How many of the study's places are taken: people who consented (someone reading the
    consent, or who left without consenting, holds none; the cap counts the others)."""
    query = select(func.count()).select_from(StudyParticipant)
    return int(
        session.exec(
            query.where(
                StudyParticipant.study_id == study_id,
                col(StudyParticipant.consented_at).is_not(None),
            )
        ).one()
    )


def count_places(db: Database, study_id: int) -> int:
    """:func:`places_taken`, read on its own."""
    with db.read() as session:
        return places_taken(session, study_id)


def participant_by_token(db: Database, token_hash: str) -> StudyParticipant:
    """The participant holding a token (by its hash). Raises :class:`ParticipantNotFound`."""
    with db.read() as session:
        person = session.exec(
            select(StudyParticipant)
            .join(StudyToken, col(StudyToken.participant_id) == col(StudyParticipant.id))
            .where(StudyToken.token_hash == token_hash)
        ).first()
    if person is None:
        raise ParticipantNotFound("no participant holds this token")
    return person


def get_participant(db: Database, participant_id: int) -> StudyParticipant:
    """A participant by id. Raises :class:`ParticipantNotFound`."""
    with db.read() as session:
        person = session.get(StudyParticipant, participant_id)
    if person is None:
        raise ParticipantNotFound(f"participant {participant_id} does not exist")
    return person


def list_participants(
    db: Database, study_id: int, *, stage: str | Collection[str] | None = None
) -> list[StudyParticipant]:
    """A study's participants (at ``stage``), in the order they joined."""
    query = select(StudyParticipant).where(StudyParticipant.study_id == study_id)
    if stage is not None:
        stages = [stage] if isinstance(stage, str) else sorted(stage)
        query = query.where(col(StudyParticipant.stage).in_(stages))
    with db.read() as session:
        return list(session.exec(query.order_by(col(StudyParticipant.id))))


def check_move(current: str, to: str) -> None:
    """Raise :class:`InvalidTransition` unless a participant at ``current`` may move to ``to``
    (``vocabulary.STAGE_TRANSITIONS``; staying put is allowed)."""
    if to not in PARTICIPANT_STAGES:
        raise StorageValueError(f"stage={to!r} must be one of {sorted(PARTICIPANT_STAGES)}")
    if current != to and not may_move(current, to):
        raise InvalidTransition(f"a participant at {current!r} cannot move to {to!r}")


def update_participant(
    db: Database,
    participant_id: int,
    *,
    expected_stages: Collection[str] | None = None,
    event: tuple[str, Mapping[str, Any] | None] | None = None,
    **fields: Any,
) -> StudyParticipant | None:
    """Set ``fields`` (columns of ``study_participants``) and record ``event`` (kind, data) in
    the study's log, in one transaction; ``None`` (nothing changed) when the participant's stage
    is not one of ``expected_stages``. A new ``stage`` must be a move the table allows from
    every expected stage and from the stage found (:class:`InvalidTransition`)."""
    move = ParticipantMove(participant_id, expected_stages, fields, event)
    now = db.now()
    with db.write() as session:
        return move.apply(session, now)


@dataclass(frozen=True, slots=True)
class ParticipantMove:
    """A change of one participant (``fields``, columns of ``study_participants``) and its
    ``event`` (kind, data) in the study's log, made only while their stage is one of
    ``expected_stages`` (None: any) and, with ``seen_before``, they gave no sign of life since;
    a new ``stage`` is checked against the table of moves.
    The unit of every transition that moves a person (``storage.studies.transitions``)."""

    participant_id: int
    expected_stages: Collection[str] | None
    fields: Mapping[str, Any]
    event: tuple[str, Mapping[str, Any] | None] | None = None
    seen_before: datetime | None = None
    """Made only if their last sign of life is no later than this (an absence judged from a
    read of ``last_seen_at``: a heartbeat landing since makes it no move)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.fields) - set(StudyParticipant.model_fields))
        if unknown:
            raise StorageValueError(f"unknown participant field(s) {unknown}")
        stage = self.fields.get("stage")
        if stage is not None:
            for expected in self.expected_stages or ():
                check_move(expected, stage)

    def apply(self, session: Any, now: datetime) -> StudyParticipant | None:
        """The move inside the caller's write transaction: the participant as changed, or
        ``None`` (nothing written) when their stage is not an expected one."""
        person = session.exec(
            select(StudyParticipant)
            .where(StudyParticipant.id == self.participant_id)
            .with_for_update()
        ).first()
        if person is None:
            raise ParticipantNotFound(f"participant {self.participant_id} does not exist")
        if self.expected_stages is not None and person.stage not in self.expected_stages:
            return None
        if self.seen_before is not None and person.last_seen_at > self.seen_before:
            return None
        stage = self.fields.get("stage")
        if stage is not None:
            check_move(person.stage, stage)
        apply_fields(person, self.fields, now)
        session.add(person)
        if self.event is not None:
            session.flush()
            note_on(
                session.connection(),
                person.study_id,
                self.event[0],
                now,
                participant_id=person.id,
                group_id=person.group_id,
                data=self.event[1],
            )
        return person  # type: ignore[no-any-return]


def apply_fields(person: StudyParticipant, fields: Mapping[str, Any], now: datetime) -> None:
    """``fields`` set on ``person`` (inside the caller's transaction), with its change time."""
    for name, value in fields.items():
        setattr(person, name, value)
    person.updated_at = now


__all__ = [
    "FULL",
    "Admission",
    "ParticipantMove",
    "admit_participant",
    "apply_fields",
    "check_move",
    "get_participant",
    "list_participants",
    "participant_by_token",
    "count_places",
    "places_taken",
    "update_participant",
]
