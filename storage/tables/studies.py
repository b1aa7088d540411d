"""The tables of studies with real participants (revision 0010, issue 21): studies, their
groups, participants, participant tokens and the study's own events.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from storage.coltypes import JSONDoc, UTCDateTime, utcnow


class Study(SQLModel, table=True):
    """A study: an experiment whose rooms have human seats (docs/studies.md). ``definition`` is
    the study file as written; ``version`` counts its edits (each participant keeps the version
    in force when they were assigned). ``code`` is the study's id in the participant link."""

    __tablename__ = "studies"
    __table_args__ = (sa.UniqueConstraint("code", name="uq_studies_code"),)

    id: int | None = Field(default=None, primary_key=True)
    code: str = Field(max_length=40)
    name: str
    definition: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    version: int = 1
    experiment_id: int | None = Field(
        default=None, foreign_key="experiments.id", ondelete="SET NULL"
    )
    status: str = Field(default="open", max_length=20)
    cap: int | None = None
    seed: int = Field(default=0, sa_type=sa.BigInteger)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class StudyGroup(SQLModel, table=True):
    """One group of a study: a condition, its number (the room's replicate), its room, who holds
    each seat (``{seat: participant id or "agent"}``) and the recorded randomisation."""

    __tablename__ = "study_groups"
    __table_args__ = (
        # A group number is drawn once per condition: two lobby ticks at once cannot both form it.
        sa.UniqueConstraint("study_id", "condition", "number", name="uq_study_groups_number"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    condition: str
    number: int
    room_id: int | None = Field(default=None, foreign_key="rooms.id", ondelete="SET NULL")
    seats: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    status: str = Field(default="running", max_length=20)
    assignment: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    started_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class StudyParticipant(SQLModel, table=True):
    """One person in a study: a pseudonym (the only id exports carry), the recruitment id kept
    apart for payment, the link's other labels, where they are (``stage``) and how they left."""

    __tablename__ = "study_participants"
    __table_args__ = (
        sa.UniqueConstraint("study_id", "pseudonym", name="uq_study_participants_pseudonym"),
        # The same PROLIFIC_PID never gets two seats (NULLs, people without one, are distinct).
        sa.UniqueConstraint(
            "study_id", "recruitment_id", name="uq_study_participants_recruitment_id"
        ),
        # The lobby and the monitor: a study's participants at one stage.
        sa.Index("ix_study_participants_stage", "study_id", "stage"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    pseudonym: str = Field(max_length=40)
    recruitment_id: str | None = Field(default=None, max_length=200)
    recruitment: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    labels: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    stage: str = Field(default="consent", max_length=20)
    version: int = 1
    group_id: int | None = Field(default=None, foreign_key="study_groups.id", ondelete="SET NULL")
    condition: str | None = None
    seat: str | None = None
    exit_status: str | None = Field(default=None, max_length=20)
    exit_code: str | None = Field(default=None, max_length=64)
    pre_survey: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    post_survey: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    posts: list[float] | None = Field(default=None, sa_type=JSONDoc())
    joined_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    consented_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    lobby_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    assigned_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_seen_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class StudyToken(SQLModel, table=True):
    """A participant's token, as its sha256 (the token itself is never stored): a reload, a
    second tab or a second join with the same PROLIFIC_PID each hold one of the same person's."""

    __tablename__ = "study_tokens"
    __table_args__ = (sa.Index("ix_study_tokens_participant", "participant_id"),)

    token_hash: str = Field(primary_key=True, max_length=64)
    participant_id: int = Field(foreign_key="study_participants.id", ondelete="CASCADE")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class StudyEvent(SQLModel, table=True):
    """The study's own log: joins, consents, assignments (seed and eligible set), lobby
    timeouts, dropouts and what was done about them, removals, help messages, exits."""

    __tablename__ = "study_events"
    __table_args__ = (
        sa.Index("ix_study_events_study", "study_id", "id"),
        sa.Index("ix_study_events_participant", "participant_id", "id"),
        # A participant page's change marker: the newest note of the participant's group.
        sa.Index("ix_study_events_group", "group_id", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    participant_id: int | None = Field(
        default=None, foreign_key="study_participants.id", ondelete="CASCADE"
    )
    group_id: int | None = Field(default=None, foreign_key="study_groups.id", ondelete="SET NULL")
    kind: str = Field(max_length=40)
    data: dict[str, Any] | None = Field(default=None, sa_type=JSONDoc())
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


__all__ = ["Study", "StudyEvent", "StudyGroup", "StudyParticipant", "StudyToken"]
