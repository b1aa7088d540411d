"""Rename, archive and delete experiments: deleting one deletes its rooms with their logs and its
analyses; refused while it runs or a worker holds one of its rooms."""

from __future__ import annotations

import pytest

import storage
from conversation import experiments as ex
from conversation.exceptions import ConversationStateError, ConversationValueError
from storage import Database


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


def _experiment(db: Database, status: str = "done") -> tuple[int, list[int]]:
    experiment = storage.create_experiment(db, "study", status=status)
    rooms = [storage.create_room(db, f"r{i}", experiment_id=experiment) for i in range(3)]
    for room in rooms:
        storage.append_message(db, room, "human", "u", "hi")
    analysis = storage.create_analysis(db, "deal?", {"text": "?"}, experiment_id=experiment)
    storage.record_answer(db, analysis, rooms[0], "yes")
    return experiment, rooms


def test_rename_and_archive(db: Database) -> None:
    experiment, rooms = _experiment(db)
    assert ex.rename_experiment(db, experiment, " Mugs v2 ").name == "Mugs v2"
    with pytest.raises(ConversationValueError, match="name"):
        ex.rename_experiment(db, experiment, " ")
    ex.archive_experiment(db, experiment)
    assert storage.list_experiments(db, archived=False) == []
    assert storage.count_rooms(db, archived=True) == len(rooms)
    ex.archive_experiment(db, experiment, False)
    assert storage.count_rooms(db, archived=True) == 0


def test_delete_says_what_goes_and_takes_the_rooms_with_it(db: Database) -> None:
    experiment, rooms = _experiment(db)
    kept = storage.create_room(db, "unrelated")
    plan = ex.experiment_deletion(db, experiment)
    assert (plan.rooms, plan.answers, plan.blocked) == (3, 1, None)
    assert "also deletes its 3 room(s)" in plan.describe()
    ex.delete_experiment(db, experiment)
    assert [r.id for r in storage.list_rooms(db)] == [kept]
    assert all(storage.events(db, r) == [] for r in rooms)
    assert storage.list_analyses(db) == []
    with pytest.raises(ConversationValueError):
        ex.delete_experiment(db, experiment)


def test_delete_refused_while_running_or_a_room_is_leased(db: Database) -> None:
    experiment, rooms = _experiment(db, status="running")
    assert "stop it first" in ex.experiment_deletion(db, experiment).blocked
    with pytest.raises(ConversationStateError, match="stop it first"):
        ex.delete_experiment(db, experiment)
    storage.update_experiment(db, experiment, status="stopped")
    storage.acquire_lease(db, rooms[1], "worker-1", 30)
    with pytest.raises(ConversationStateError, match="leases are released"):
        ex.delete_experiment(db, experiment)
    assert storage.count_rooms(db, experiment_id=experiment) == 3
