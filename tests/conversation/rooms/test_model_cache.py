"""Rooms and the persistent model cache: each turn says whether its answer came from the cache;
a fork run again from its fork point and a room with the same seed reuse answers at no cost;
other seeds (replicates) and rooms that turned the cache off ask the model."""

from __future__ import annotations

import itertools

import pytest

import storage
from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.config import RoomConfig
from conversation.rooms.room import Room
from storage import Database
from tests.support.room_common import drive_with

AGENTS = [{"name": "Ana"}, {"name": "Ben"}]


def sampled() -> OfflineModel:
    """Every call answers differently (an LLM sampled at temperature > 0): only the cache can
    give the same text twice."""
    draws = itertools.count(1)
    return OfflineModel(func=lambda user, system: f"offer number {next(draws)}")


def run_room(db: Database, model: OfflineModel, *, seed: int = 1, **options: object) -> Room:
    room = Room.create(
        db,
        name="cached",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=2),
        seed=seed,
        **options,  # type: ignore[arg-type]
    )
    drive_with(room, model)
    room.post("Sell me a mug.", request_id="opening")
    room.run()
    assert room.status == "settled", room.stop_reason
    return room


def agent_rows(room: Room) -> list[storage.Event]:
    return [e for e in room.events() if e.kind == "agent"]


def test_first_answers_are_not_hits_and_the_same_seed_again_costs_nothing(db: Database) -> None:
    model = sampled()
    first = run_room(db, model)
    rows = agent_rows(first)
    assert len(rows) >= 2 and all(r.data["cache_hit"] is False for r in rows)
    assert all(r.input_tokens and r.output_tokens for r in rows)
    calls = model.calls

    again = run_room(db, model)  # same roster, opening and seed: the same calls
    repeated = agent_rows(again)
    assert [r.content for r in repeated] == [r.content for r in rows]
    assert all(r.data["cache_hit"] is True for r in repeated)
    assert {(r.input_tokens, r.output_tokens, r.cost) for r in repeated} == {(0, 0, 0.0)}
    assert model.calls == calls


def test_another_seed_is_another_sample(db: Database) -> None:
    model = sampled()
    one = [r.content for r in agent_rows(run_room(db, model, seed=1))]
    two = agent_rows(run_room(db, model, seed=2))
    assert [r.content for r in two] != one and not any(r.data["cache_hit"] for r in two)


def test_a_fork_run_again_from_its_fork_point_reuses_the_answers(db: Database) -> None:
    model = sampled()
    room = run_room(db, model)
    original = room.events()
    calls = model.calls
    fork = drive_with(room.fork(at_seq=2), model)
    # A fork starts idle; let it go on as it is (as a person's "continue" would).
    storage.update_room(db, fork.id, status="running", expected_status="idle")
    fork.run()
    forked = fork.events()
    assert [(e.speaker, e.content) for e in forked if e.kind in ("agent", "human")] == [
        (e.speaker, e.content) for e in original if e.kind in ("agent", "human")
    ]
    new_turns = [e for e in forked if e.kind == "agent" and e.seq > 2]
    assert new_turns and all(e.data["cache_hit"] for e in new_turns)
    assert sum(e.cost or 0 for e in new_turns) == 0 and model.calls == calls

    # A different message after the fork point is a different prompt: the model is asked.
    other = drive_with(room.fork(at_seq=2), model)
    other.post("Actually, make it two mugs.")
    other.run()
    assert model.calls > calls


def test_a_room_with_the_cache_off_always_asks_the_model(db: Database) -> None:
    model = sampled()
    first = run_room(db, model, use_cache=False)
    second = run_room(db, model, use_cache=False)
    assert [r.content for r in agent_rows(first)] != [r.content for r in agent_rows(second)]
    assert not any(r.data["cache_hit"] for r in agent_rows(second))
    assert storage.models.cache_size(db) == 0
    assert first.config.use_cache is False


def test_use_cache_is_stored_validated_and_defaults_on_for_older_configs() -> None:
    config = RoomConfig.build(agents=AGENTS, model="offline", use_cache=False)
    data = config.to_dict()
    assert data["use_cache"] is False
    assert RoomConfig.from_dict(data) == config
    older = {k: v for k, v in data.items() if k != "use_cache"}
    assert RoomConfig.from_dict(older).use_cache is True
    with pytest.raises(ConversationValueError, match="use_cache"):
        RoomConfig.from_dict({**data, "use_cache": "no"})
