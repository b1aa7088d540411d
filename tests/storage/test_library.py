"""Experiments, the agent library and analyses: CRUD with validation."""

from __future__ import annotations

import math

import pytest

import storage
from storage import Database, StorageValueError
from storage.errors import DuplicateName


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


def test_experiment_crud(db: Database) -> None:
    design = {"template_room": 1, "variations": {"model": ["a", "b"]}, "replicates": 3}
    experiment_id = storage.create_experiment(db, "Deals", design)
    experiment = storage.get_experiment(db, experiment_id)
    assert (experiment.name, experiment.config, experiment.status) == ("Deals", design, "draft")
    running = storage.update_experiment(
        db, experiment_id, status="running", expected_status="draft"
    )
    assert running.status == "running"
    assert (
        storage.update_experiment(db, experiment_id, status="running", expected_status="draft")
        is None
    )
    assert [e.id for e in storage.list_experiments(db, status="running")] == [experiment_id]
    room = storage.create_room(db, "r", experiment_id=experiment_id)
    assert storage.delete_experiment(db, experiment_id)
    assert storage.get_room(db, room).experiment_id is None  # rooms outlive their experiment
    with pytest.raises(storage.ExperimentNotFound):
        storage.get_experiment(db, experiment_id)
    with pytest.raises(StorageValueError, match="status"):
        storage.create_experiment(db, "x", status="exploding")


def test_agent_profile_crud(db: Database) -> None:
    alice = storage.create_agent_profile(
        db,
        "Alice",
        traits={"persona": "buyer", "budget": 20_000},
        instruction="Negotiate firmly.",
        model={"service": "openai", "model": "gpt-4o-mini", "temperature": 0.7},
    )
    bob = storage.create_agent_profile(db, "Bob")
    assert [p.name for p in storage.list_agent_profiles(db)] == ["Alice", "Bob"]
    assert storage.experiments.get_agent_profile(db, "Alice").id == alice
    assert storage.experiments.get_agent_profile(db, bob).traits == {}
    updated = storage.update_agent_profile(db, alice, traits={"persona": "seller"})
    assert updated.traits == {"persona": "seller"} and updated.instruction == "Negotiate firmly."
    assert updated.updated_at >= updated.created_at
    with pytest.raises(DuplicateName, match="'Bob' already exists"):
        storage.create_agent_profile(db, "Bob")
    with pytest.raises(DuplicateName):
        storage.update_agent_profile(db, alice, name="Bob")
    assert storage.experiments.get_agent_profile(db, alice).name == "Alice"
    assert storage.delete_agent_profile(db, bob)
    with pytest.raises(storage.errors.AgentProfileNotFound):
        storage.experiments.get_agent_profile(db, "Bob")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Al\nice"}, "control"),
        ({"name": "x" * 101}, "limit is 100"),
        ({"name": "Alice", "traits": ["a"]}, "traits must be a dict"),
        ({"name": "Alice", "traits": {"age": math.inf}}, "plain JSON"),
        ({"name": "Alice", "traits": {"": 1}}, "traits keys"),
        ({"name": "Alice", "instruction": 5}, "instruction must be a string"),
    ],
)
def test_agent_profile_validation(db: Database, kwargs: dict, message: str) -> None:
    with pytest.raises(StorageValueError, match=message):
        storage.create_agent_profile(db, **kwargs)
    assert storage.list_agent_profiles(db) == []


def test_analysis_answers_are_upserted_per_room(db: Database) -> None:
    experiment = storage.create_experiment(db, "exp")
    rooms = [storage.create_room(db, f"r{i}", experiment_id=experiment) for i in range(2)]
    analysis = storage.create_analysis(
        db,
        "Deal reached?",
        {"text": "Was a deal reached?", "type": "yes_no"},
        model={"service": "offline"},
        experiment_id=experiment,
    )
    storage.record_answer(db, analysis, rooms[0], "no", model="test", cost=0.1)
    storage.record_answer(db, analysis, rooms[0], "yes", comment="on re-reading")
    storage.record_answer(
        db,
        analysis,
        rooms[1],
        None,
        error={"type": "ModelCallError", "code": "timeout", "message": "timed out"},
    )
    answers = storage.answers(db, analysis)
    assert [(a.room_id, a.answer, a.comment) for a in answers] == [
        (rooms[0], "yes", "on re-reading"),
        (rooms[1], None, None),
    ]
    assert answers[1].error["code"] == "timeout"
    assert storage.research.update_analysis(db, analysis, status="done").status == "done"
    assert [a.id for a in storage.list_analyses(db, experiment_id=experiment)] == [analysis]
    with pytest.raises(storage.RoomNotFound):
        storage.record_answer(db, analysis, 999, "yes")
    assert storage.research.delete_analysis(db, analysis)
    with pytest.raises(storage.AnalysisNotFound):
        storage.record_answer(db, analysis, rooms[0], "yes")
    with pytest.raises(StorageValueError, match="question"):
        storage.create_analysis(db, "empty", {})
