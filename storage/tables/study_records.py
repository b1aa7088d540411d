"""The study as a research instrument (revision 0019, issue 34): the consent texts people agreed
to (one row per version), a preregistered study's amendments, and the bot and AI-use signals a
participant's page recorded (per message, per survey answer, a honeypot followed).

A frozen study's bundle and its hash are columns of ``studies``; a participant's consent version
and withdrawal time are columns of ``study_participants`` (``storage.tables.studies``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from storage.coltypes import JSONDoc, UTCDateTime, utcnow


class ConsentVersion(SQLModel, table=True):
    """One consent text of a study, stored once (its sha256 and the text): version 1 is the text
    the study launched with, the next the first changed text someone agreed to, and so on."""

    __tablename__ = "consent_versions"
    __table_args__ = (
        sa.UniqueConstraint("study_id", "text_hash", name="uq_consent_versions_hash"),
        sa.UniqueConstraint("study_id", "version", name="uq_consent_versions_version"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    version: int
    text_hash: str = Field(max_length=64)
    text: str
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class StudyAmendment(SQLModel, table=True):
    """A change to a preregistered (frozen) study: its number, the reason given, the frozen
    fields it changed, the definition version it made and the hash of the amended bundle."""

    __tablename__ = "study_amendments"
    __table_args__ = (sa.UniqueConstraint("study_id", "number", name="uq_study_amendments_number"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    number: int
    reason: str
    changes: list[Any] = Field(default_factory=list, sa_type=JSONDoc())
    version: int
    bundle_hash: str = Field(max_length=64)
    by: str | None = Field(default=None, max_length=200)
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class ParticipantSignal(SQLModel, table=True):
    """One record of a participant page's signals: a message's (``room_id``, ``seq``), a survey
    answer's, or a honeypot followed (``kind``), its measures in ``data``. Never shown to the
    participant; deleted with everything else of theirs when they withdraw."""

    __tablename__ = "participant_signals"
    __table_args__ = (
        sa.Index("ix_participant_signals_participant", "participant_id", "id"),
        sa.Index("ix_participant_signals_study", "study_id", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="studies.id", ondelete="CASCADE")
    participant_id: int = Field(foreign_key="study_participants.id", ondelete="CASCADE")
    kind: str = Field(max_length=20)
    room_id: int | None = None
    seq: int | None = None
    data: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


__all__ = ["ConsentVersion", "ParticipantSignal", "StudyAmendment"]
