""" "Re-run this experiment from cache": the same design as a new experiment, every room with the
seed of its original, answered from the model cache: every transcript comes out exactly as it
was, at no cost, even with a model whose every call answers differently."""

from __future__ import annotations

import asyncio
import itertools

import storage
from conversation.experiments import Condition, design, progress, rerun_experiment
from conversation.experiments import create as create_experiment
from conversation.models import OfflineModel
from conversation.worker import Worker
from storage import Database
from tests.support.room_common import FixedModels

TEMPLATE = {
    "agents": [
        {"name": "Buyer", "traits": {"role": "buyer"}},
        {"name": "Seller", "traits": {"role": "seller"}},
    ],
    "planner": {"kind": "round_robin", "transitions": None},
    "termination": {"kind": "max_turns", "max_turns": 4},
    "model": {"service": "offline", "model": "offline", "parameters": {"seed": 3}},
    "opening": "Negotiate the price of a mug.",
}
CONDITIONS = [
    Condition("patient", {"Buyer": {"mood": "patient"}}),
    Condition("hurried", {"Buyer": {"mood": "hurried"}}),
]


def sampled() -> OfflineModel:
    draws = itertools.count(1)
    return OfflineModel(func=lambda user, system: f"my offer is number {next(draws)}")


def run_all(db: Database, model: OfflineModel) -> None:
    worker = Worker(db, concurrency=8, poll_interval=0.02)
    worker.engine.models = FixedModels(model)
    asyncio.run(asyncio.wait_for(worker.run(until_idle=True), 120))


def transcripts(db: Database, experiment_id: int) -> dict[tuple[str, int], list[tuple]]:
    found = {}
    for room in storage.list_rooms(db, experiment_id=experiment_id, limit=None):
        events = storage.events(db, int(room.id or 0))
        found[(room.condition, room.replicate)] = [
            (e.seq, e.kind, e.speaker, e.content) for e in events if e.kind in ("human", "agent")
        ]
    return found


def agent_turns(db: Database, experiment_id: int) -> list:
    return [
        e
        for room in storage.list_rooms(db, experiment_id=experiment_id, limit=None)
        for e in storage.events(db, int(room.id or 0))
        if e.kind == "agent"
    ]


def test_a_rerun_from_cache_reproduces_every_transcript_at_no_cost(db: Database) -> None:
    model = sampled()
    first = create_experiment(db, "mugs", design(TEMPLATE, CONDITIONS, replicates=2))
    run_all(db, model)
    original = transcripts(db, first)
    assert len(original) == 4 and all(len(t) == 5 for t in original.values())
    contents = [line[3] for t in original.values() for line in t if line[1] == "agent"]
    assert len(set(contents)) == len(contents) == 16  # every call a different answer
    calls = model.calls

    again = rerun_experiment(db, first)
    assert again != first
    run_all(db, model)
    assert transcripts(db, again) == original
    turns = agent_turns(db, again)
    assert len(turns) == 16 and all(e.data["cache_hit"] is True for e in turns)
    assert sum((e.input_tokens or 0) + (e.output_tokens or 0) for e in turns) == 0
    assert sum(e.cost or 0 for e in turns) == 0
    assert model.calls == calls  # the model was never asked
    assert storage.get_experiment(db, again).config["rerun_of"] == first
    assert progress(db, again).finished == 4 and progress(db, again).cost == 0

    # Control: the same design created afresh is a new sample (new seeds), not a copy.
    fresh = create_experiment(db, "mugs again", design(TEMPLATE, CONDITIONS, replicates=2))
    run_all(db, model)
    assert transcripts(db, fresh) != original
    assert not any(e.data["cache_hit"] for e in agent_turns(db, fresh))


def test_a_template_from_a_room_keeps_its_model_settings(db: Database) -> None:
    from conversation.experiments import template_from_room
    from conversation.rooms.room import Room

    room = Room.create(
        db,
        name="source",
        agents=TEMPLATE["agents"],
        model=TEMPLATE["model"],
        max_output_tokens=100,
        context_window=4000,
        use_cache=False,
    )
    room.post("Hello.")
    template = template_from_room(db, room.id)
    assert (template["max_output_tokens"], template["context_window"]) == (100, 4000)
    assert template["use_cache"] is False and template["opening"] == "Hello."
