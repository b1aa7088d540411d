"""Every table of the app, as SQLModel models, one module per concept; this face names them all
(``storage.tables``: Alembic's ``env.py`` and the migrations test read ``metadata`` from it).

The schema is created and changed only by the migrations in ``storage/migrations`` (a test builds a
blank database from them and compares it with these models). Rows returned by the repository are
*detached snapshots* of these models: reading their attributes is fine, assigning to them writes
nothing (call a repository function instead).

Timestamps are UTC and timezone-aware (:class:`~storage.coltypes.UTCDateTime`). JSON columns hold
plain JSON (dicts, lists, strings, numbers); configuration documents pass the secret guard first.
"""

from __future__ import annotations

from sqlalchemy.orm import configure_mappers

from storage.tables.base import metadata  # first: the constraint names every table uses
from storage.tables.experiments import AgentProfile, Experiment
from storage.tables.models import CachedResponse, RateBucket
from storage.tables.research import (
    OPEN_ANSWER_WHERE,
    Analysis,
    AnalysisAnswer,
    CodeLabel,
    JudgeRubric,
    JudgeRun,
    JudgeScore,
    MessageTag,
)
from storage.tables.rooms import (
    ARCHIVED_WHERE,
    OPEN_TURN_WHERE,
    RUNNABLE_WHERE,
    Event,
    Lease,
    Room,
    RoomConfigVersion,
    TurnDraft,
)
from storage.tables.studies import Study, StudyEvent, StudyGroup, StudyParticipant, StudyToken

# Instrument the models now: the repository builds snapshots with ``model_construct`` on Core
# paths, and attribute access on those needs configured mappers even if no ORM query ran yet.
configure_mappers()

__all__ = [
    "ARCHIVED_WHERE",
    "AgentProfile",
    "Analysis",
    "AnalysisAnswer",
    "CachedResponse",
    "CodeLabel",
    "Event",
    "Experiment",
    "JudgeRubric",
    "JudgeRun",
    "JudgeScore",
    "Lease",
    "MessageTag",
    "OPEN_ANSWER_WHERE",
    "OPEN_TURN_WHERE",
    "RUNNABLE_WHERE",
    "RateBucket",
    "Room",
    "RoomConfigVersion",
    "Study",
    "StudyEvent",
    "StudyGroup",
    "StudyParticipant",
    "StudyToken",
    "TurnDraft",
    "metadata",
]
