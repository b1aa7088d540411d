"""Persistence for conversation rooms: SQLModel tables, connection set-up, migrations, repository.

``storage`` imports nothing from ``conversation`` (layering: ``pages -> conversation -> storage``).

    from storage import Database, repository as repo
    db = Database()                       # ROOMS_DATABASE_URL or <data_dir>/rooms.db; migrates
    room_id = repo.create_room(db, "demo", {"roster": [...]})
    repo.append_message(db, room_id, "human", "user", "hello", request_id="r-1")

Every repository function is also exported here (``storage.append_message``). The pandas frames
for the results pages are in :mod:`storage.frames` (imported on demand: pandas is heavy, and
worker processes do not need it).
"""

from __future__ import annotations

from storage import repository
from storage.config import data_dir, database_url, display_url, normalize_url
from storage.database import Database
from storage.errors import (
    AgentProfileNotFound,
    AnalysisNotFound,
    CannotOpenDatabase,
    ConfigContainsSecret,
    DatabaseUnavailable,
    DuplicateName,
    EventNotFound,
    ExperimentNotFound,
    InvalidTransition,
    LeaseLost,
    RecordInUse,
    RecordNotFound,
    RequestIdConflict,
    RoomNotFound,
    StorageError,
    StorageValueError,
    UnsupportedDatabaseVersion,
)
from storage.repository import *  # noqa: F403 - the curated repository API, listed in repository.__all__
from storage.repository import __all__ as _repository_all
from storage.secret_guard import check_no_secrets
from storage.tables import (
    AgentProfile,
    Analysis,
    AnalysisAnswer,
    CodeLabel,
    Event,
    Experiment,
    Lease,
    MessageTag,
    Room,
    RoomConfigVersion,
)
from storage.vocabulary import (
    EVENT_KINDS,
    OPEN_TURN_STATES,
    ROOM_STATUSES,
    TURN_STATES,
    TURN_TRANSITIONS,
)

__all__ = [
    "EVENT_KINDS",
    "OPEN_TURN_STATES",
    "ROOM_STATUSES",
    "TURN_STATES",
    "TURN_TRANSITIONS",
    "AgentProfile",
    "AgentProfileNotFound",
    "Analysis",
    "AnalysisAnswer",
    "AnalysisNotFound",
    "CannotOpenDatabase",
    "CodeLabel",
    "ConfigContainsSecret",
    "DatabaseUnavailable",
    "Database",
    "DuplicateName",
    "Event",
    "EventNotFound",
    "Experiment",
    "ExperimentNotFound",
    "InvalidTransition",
    "Lease",
    "LeaseLost",
    "MessageTag",
    "RecordInUse",
    "RecordNotFound",
    "RequestIdConflict",
    "Room",
    "RoomConfigVersion",
    "RoomNotFound",
    "StorageError",
    "StorageValueError",
    "UnsupportedDatabaseVersion",
    "check_no_secrets",
    "data_dir",
    "database_url",
    "display_url",
    "normalize_url",
    "repository",
    *_repository_all,
]
