"""The one boundary: while the database cannot be used, every documented method of ``Room`` and
``Turn`` raises the project's ``StorageUnavailableError`` (never storage's own error), and works
again once the database is back; a missing record is the project's ``NotFoundError``.

The outage is real: the database's folder is moved away with no connection open, so SQLite
cannot open the file (``SQLITE_CANTOPEN``, which storage reports as unavailable, as it reports a
PostgreSQL server that restarts), then moved back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import storage
from conversation.analysis import coding, judges
from conversation.exceptions import (
    ConversationValueError,
    NotFoundError,
    StorageUnavailableError,
)
from conversation.models import OfflineModel
from conversation.rooms.room import Room
from conversation.rooms.turn import Turn
from storage import Database

pytestmark = pytest.mark.sqlite_only("moves the SQLite file's folder away: a real outage")

AGENTS = [{"name": "Ann"}, {"name": "Bo"}]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def database(folder: Path) -> Iterator[Database]:
    db = Database(f"sqlite:///{folder}/rooms.db")
    yield db
    db.dispose()


@contextmanager
def outage(db: Database, folder: Path) -> Iterator[None]:
    """The database cannot be opened inside the block, and is back after it."""
    db.dispose()
    away = folder.with_name("away")
    os.rename(folder, away)
    try:
        yield
    finally:
        db.dispose()
        os.rename(away, folder)


@pytest.fixture
def room(database: Database) -> Room:
    room = Room.create(database, name="during an outage", agents=AGENTS, model=OfflineModel())
    room.post("hello", request_id="first")
    room.step()
    return room


#: Every documented read and act of a room (name, call).
ROOM_CALLS: list[tuple[str, Callable[[Room], Any]]] = [
    ("record", lambda r: r.record),
    ("name", lambda r: r.name),
    ("status", lambda r: r.status),
    ("stop_reason", lambda r: r.stop_reason),
    ("config", lambda r: r.config),
    ("events", lambda r: r.events()),
    ("turns", lambda r: r.turns()),
    ("turn", lambda r: r.turn(2)),
    ("pending", lambda r: r.pending()),
    ("transcript", lambda r: r.transcript()),
    ("post", lambda r: r.post("again", request_id="second")),
    ("no_answer_reason", lambda r: r.no_answer_reason()),
    ("extend_limit", lambda r: r.extend_limit(2)),
    ("pause", lambda r: r.pause()),
    ("resume", lambda r: r.resume()),
    ("stop", lambda r: r.stop()),
    ("step", lambda r: r.step()),
    ("run", lambda r: r.run(max_turns=2)),
    ("fork", lambda r: r.fork(1)),
    ("update_config", lambda r: r.update_config({"moderated": True})),
    ("config_at", lambda r: r.config_at(1)),
    ("config_versions", lambda r: r.config_versions()),
    ("export", lambda r: r.export()),
    ("open", lambda r: Room.open(r.db, r.id)),
    ("create", lambda r: Room.create(r.db, name="new", agents=AGENTS, model=OfflineModel())),
    (
        "import_messages",
        lambda r: Room.import_messages(r.db, [{"name": "Ann", "content": "hi"}], agents=AGENTS),
    ),
]


@pytest.mark.parametrize("call", [c for _, c in ROOM_CALLS], ids=[n for n, _ in ROOM_CALLS])
def test_a_room_raises_the_projects_error_while_the_database_is_down(
    room: Room, database: Database, folder: Path, call: Callable[[Room], Any]
) -> None:
    with outage(database, folder), pytest.raises(StorageUnavailableError) as caught:
        call(room)
    assert not isinstance(caught.value, storage.StorageError)
    assert isinstance(caught.value.__cause__, storage.DatabaseUnavailable)
    assert room.status  # back once the database is


#: Every documented read and act of a turn.
TURN_CALLS: list[tuple[str, Callable[[Turn], Any]]] = [
    ("refresh", lambda t: t.refresh()),
    ("draft", lambda t: t.draft()),
    ("approve", lambda t: t.approve()),
    ("deny", lambda t: t.deny("no")),
    ("stop", lambda t: t.stop()),
    ("resume", lambda t: t.resume()),
    ("abandon", lambda t: t.abandon()),
]


@pytest.mark.parametrize("call", [c for _, c in TURN_CALLS], ids=[n for n, _ in TURN_CALLS])
def test_a_turn_raises_the_projects_error_while_the_database_is_down(
    room: Room, database: Database, folder: Path, call: Callable[[Turn], Any]
) -> None:
    (turn,) = room.turns()
    with outage(database, folder), pytest.raises(StorageUnavailableError):
        call(turn)


def test_the_analysis_face_raises_the_projects_errors(
    room: Room, database: Database, folder: Path
) -> None:
    with outage(database, folder), pytest.raises(StorageUnavailableError):
        coding.tags(database, room_ids=room.id)
    with pytest.raises(NotFoundError):
        judges.load_rubric(database, 99_999)


def test_a_missing_record_is_not_found_and_still_a_value_error(database: Database) -> None:
    with pytest.raises(NotFoundError) as caught:
        Room.open(database, 99_999)
    assert isinstance(caught.value, ConversationValueError)
    assert not isinstance(caught.value, storage.StorageError)
