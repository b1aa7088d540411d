"""Rename, archive and delete rooms through the engine's API: typed errors, nothing orphaned, and
no delete under a worker's live lease or inside a running experiment."""

from __future__ import annotations

import pytest

import storage
from conversation.exceptions import ConversationStateError, ConversationValueError
from conversation.rooms import manage
from storage import Database


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


def test_rename_strips_and_refuses_empty_or_long_names(db: Database) -> None:
    room_id = storage.create_room(db, "old")
    assert manage.rename_room(db, room_id, "  new name ").name == "new name"
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(ConversationValueError, match="name"):
            manage.rename_room(db, room_id, bad)
    with pytest.raises(ConversationValueError, match="999"):
        manage.rename_room(db, 999, "x")


def test_archive_hides_and_restores_without_touching_the_status(db: Database) -> None:
    room_id = storage.create_room(db, "r", status="running")
    room = manage.archive_room(db, room_id)
    assert room.archived_at is not None and room.status == "running"
    assert storage.count_rooms(db, archived=False) == 0
    assert manage.archive_room(db, room_id, False).archived_at is None


def test_delete_is_refused_while_a_worker_holds_the_room_then_leaves_nothing(db: Database) -> None:
    room_id = storage.create_room(db, "r", status="running")
    storage.append_message(db, room_id, "human", "u", "hello")
    analysis = storage.create_analysis(db, "q", {"text": "?"})
    storage.record_answer(db, analysis, room_id, "yes")
    token = storage.acquire_lease(db, room_id, "worker-1", 30)
    impact = manage.deletion_impact(db, room_id)
    assert (impact.events, impact.answers) == (1, 1) and "stop the room first" in impact.blocked
    assert "1 logged event(s) and 1 analysis answer(s)" in impact.describe()
    with pytest.raises(ConversationStateError, match="stop the room first"):
        manage.delete_room(db, room_id)
    assert storage.get_room(db, room_id)  # still there
    storage.release_lease(db, room_id, "worker-1", token)
    manage.delete_room(db, room_id)
    assert storage.count_rooms(db) == 0 and storage.events(db, room_id) == []
    assert storage.get_lease(db, room_id) is None and storage.answers(db, analysis) == []
    with pytest.raises(ConversationValueError):
        manage.delete_room(db, room_id)


def test_a_room_of_a_running_experiment_cannot_be_deleted(db: Database) -> None:
    experiment = storage.create_experiment(db, "e", status="running")
    room_id = storage.create_room(db, "r", experiment_id=experiment)
    with pytest.raises(ConversationStateError, match="stop the experiment first"):
        manage.delete_room(db, room_id)
    storage.update_experiment(db, experiment, status="stopped")
    manage.delete_room(db, room_id)
    assert storage.count_rooms(db) == 0
