"""Experiments in the engine: a design becomes rooms, a worker runs them, and the experiment is
marked done by the worker itself (no one needs to open the app)."""

from __future__ import annotations

import asyncio
import threading

import pytest

import storage
from conversation import experiments as ex
from conversation.exceptions import ConversationValueError
from conversation.worker import Worker
from storage import Database

TEMPLATE = {
    "agents": [
        {"name": "Buyer", "traits": {"role": "buyer"}},
        {"name": "Seller", "traits": {"role": "seller"}},
    ],
    "planner": {"kind": "round_robin", "transitions": None},
    "termination": {"kind": "max_turns", "max_turns": 4},
    "model": {"service": "offline", "model": "offline", "parameters": {"seed": 1}},
    "moderated": False,
    "prompt_template": None,
    "context": None,
    "opening": "Negotiate the price of a mug.",
}


@pytest.fixture
def db(db_url: str) -> Database:
    return Database(db_url)


def test_a_design_becomes_rooms_and_the_worker_finishes_the_experiment(db: Database) -> None:
    conditions = ex.crossed_conditions([("Buyer", "budget", ["$5", "$9"])])
    config = ex.design(TEMPLATE, conditions, 3)
    experiment_id = ex.create(db, "mugs", config)
    rooms = storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    assert len(rooms) == 6
    assert {r.condition for r in rooms} == {c.label for c in conditions}
    assert all(r.status == "running" for r in rooms)  # each got its opening message

    taken = asyncio.run(Worker(db, concurrency=6).run(until_idle=True))
    assert taken == 6 * 4
    assert storage.get_experiment(db, experiment_id).status == "done"
    progress = ex.progress(db, experiment_id)
    assert progress.finished == progress.planned == 6


def test_materialize_is_idempotent(db: Database) -> None:
    config = ex.design(TEMPLATE, [ex.Condition("only", {})], 2)
    experiment_id = ex.create(db, "twice", config)
    assert ex.materialize(db, experiment_id) == 0
    rooms = storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    assert len(rooms) == 2
    assert all(len(storage.events(db, r.id)) == 1 for r in rooms)  # one opening each, not two


def test_an_unfinished_experiment_is_not_marked_done(db: Database) -> None:
    config = ex.design(TEMPLATE, [ex.Condition("only", {})], 1)
    experiment_id = ex.create(db, "waiting", config)
    assert ex.finish_experiments(db) == 0
    assert storage.get_experiment(db, experiment_id).status == "running"


def test_a_design_with_one_bad_condition_writes_nothing(db: Database) -> None:
    good = ex.Condition("good", {})
    bad = ex.Condition("bad", {}, planner={"kind": "round_robin", "max_rounds": -3})
    config = ex.design(TEMPLATE, [good, bad], 2)
    with pytest.raises(ConversationValueError, match="condition 'bad'"):
        ex.create(db, "half", config)
    assert storage.list_experiments(db, limit=None) == []
    assert storage.count_rooms(db) == 0


def test_materialize_from_many_threads_creates_each_room_once(db: Database) -> None:
    config = ex.design(TEMPLATE, [ex.Condition("only", {})], 5)
    experiment_id = storage.create_experiment(db, "racing", config, status="running")
    created: list[int] = []
    errors: list[BaseException] = []

    def go() -> None:
        try:
            created.append(ex.materialize(Database(db.url), experiment_id))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == [] and sorted(created) == [0, 0, 0, 5]
    rooms = storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    assert len(rooms) == 5
    assert all(len(storage.events(db, r.id)) == 1 for r in rooms)
