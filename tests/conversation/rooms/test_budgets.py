"""Budgets: a room's (tokens or dollars) and an experiment's (across its rooms, in-process and in
a ``python -m conversation.worker`` subprocess) stop new turns once reached, with the reason
stored and noticed; the config refuses a malformed budget, naming the field."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from edsl.language_models.language_model import LanguageModel

import storage
from conversation import experiments as ex
from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.config import RoomConfig
from conversation.rooms.room import Room
from conversation.termination.budget import Budget, Spend
from conversation.termination.conditions import MaxTurns
from conversation.worker import Worker
from storage import Database
from tests.support import known_prices
from tests.support.room_common import ROOT, child_env, drive_with

AGENTS = [{"name": "Alice"}, {"name": "Bob"}]
OFFLINE = {"service": "offline", "model": "offline", "parameters": {"seed": 3}}
TEMPLATE = {
    "agents": [
        {"name": "Buyer", "traits": {"role": "buyer"}},
        {"name": "Seller", "traits": {"role": "seller"}},
    ],
    "planner": {"kind": "round_robin", "transitions": None},
    "termination": {"kind": "max_turns", "max_turns": 40},
    "model": OFFLINE,
    "moderated": False,
    "prompt_template": None,
    "context": None,
    "opening": "Negotiate the price of a mug.",
}


class PricedModel(OfflineModel):
    """The offline model, priced as a hosted service is: EDSL's price table decides its cost."""

    _inference_service_ = "openai"

    def cost(self, raw_response):  # type: ignore[no-untyped-def]
        return LanguageModel.cost(self, raw_response)


def spent(db: Database, room_id: int) -> Spend:
    return Spend(*storage.room_spend(db, room_id))


def agent_turns(room: Room) -> int:
    return sum(1 for e in room.events() if e.kind in ("agent", "pass"))


def test_a_room_token_budget_stops_new_turns_with_the_reason(db: Database) -> None:
    room = Room.create(
        db,
        name="tokens",
        agents=AGENTS,
        planner=RoundRobinPolicy(),
        termination=MaxTurns(40),
        model=OFFLINE,
        budget={"max_tokens": 300},
    )
    room.post("Talk about mugs.")
    room.run()
    assert room.status == "terminated"
    used = spent(db, room.id)
    assert used.tokens >= 300
    assert room.stop_reason == f"budget reached: {used.tokens:,} tokens used of 300"
    # Only the last turn may pass the limit: before it, the room was under budget.
    last = [e for e in room.events() if e.kind == "agent"][-1]
    assert used.tokens - (last.input_tokens + last.output_tokens) < 300
    notices = [e.content for e in room.events() if e.kind == "system"]
    assert notices[-1] == f"Ended: {room.stop_reason}"
    assert 2 <= agent_turns(room) < 100


def test_a_room_dollar_budget_uses_edsls_price_table(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = PricedModel()
    known_prices(monkeypatch, {("openai", model.model): (1000.0, 1000.0)})  # $0.001 a token
    room = Room.create(
        db,
        name="dollars",
        agents=AGENTS,
        planner=RoundRobinPolicy(),
        termination=MaxTurns(40),
        model=OFFLINE,
        budget=Budget(max_dollars=0.5),
    )
    drive_with(room, model)
    room.post("Talk about mugs.")
    room.run()
    turns = [e for e in room.events() if e.kind == "agent"]
    assert all(e.cost == pytest.approx((e.input_tokens + e.output_tokens) / 1000) for e in turns)
    used = spent(db, room.id)
    assert used.dollars >= 0.5 and used.dollars - turns[-1].cost < 0.5
    assert room.status == "terminated"
    assert room.stop_reason == f"budget reached: ${used.dollars:.2f} spent of $0.50"


def test_an_unpriced_model_counts_no_dollars_so_a_dollar_budget_never_stops_it(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    known_prices(monkeypatch, {})
    room = Room.create(
        db,
        name="unpriced",
        agents=AGENTS,
        planner=RoundRobinPolicy(),
        termination=MaxTurns(4),
        model=OFFLINE,
        budget={"max_dollars": 0.0001},
    )
    drive_with(room, PricedModel())
    room.post("Talk about mugs.")
    room.run()
    assert room.status == "terminated" and room.stop_reason == "max_turns reached (4)"
    assert {e.cost for e in room.events() if e.kind == "agent"} == {None}


def test_a_budget_is_stored_with_the_room_and_a_bad_one_is_refused_by_name(db: Database) -> None:
    room = Room.create(db, name="b", agents=AGENTS, model=OFFLINE, budget={"max_tokens": 10})
    config = Room.open(db, room.id).config
    assert config.budget == Budget(max_tokens=10)
    assert RoomConfig.from_dict(config.to_dict()).budget == Budget(max_tokens=10)
    assert config.to_dict()["budget"] == {"max_tokens": 10, "max_dollars": None}
    with pytest.raises(ConversationValueError, match="max_dollars"):
        Room.create(db, name="b", agents=AGENTS, model=OFFLINE, budget={"max_dollars": -1})
    with pytest.raises(ConversationValueError, match="max_tokens"):
        Room.create(db, name="b", agents=AGENTS, model=OFFLINE, budget={"max_tokens": 1.5})
    with pytest.raises(ConversationValueError, match="unknown field"):
        Room.create(db, name="b", agents=AGENTS, model=OFFLINE, budget={"dollars": 1})
    assert RoomConfig.from_dict({**config.to_dict(), "budget": None}).budget is None


def test_a_human_message_does_not_reopen_a_room_past_its_budget(db: Database) -> None:
    room = Room.create(
        db,
        name="again",
        agents=AGENTS,
        planner=RoundRobinPolicy(),
        termination=MaxTurns(40),
        model=OFFLINE,
        budget={"max_tokens": 150},
    )
    room.post("Talk about mugs.")
    room.run()
    before = agent_turns(room)
    room.post("Go on.")
    room.run()
    assert agent_turns(room) == before
    assert room.status == "terminated" and room.stop_reason.startswith("budget reached")


def experiment(db: Database, budget: dict[str, float | int], rooms: int = 3) -> int:
    conditions = ex.crossed_conditions([("Buyer", "budget", [f"${i}" for i in range(rooms)])])
    return ex.create(db, "mugs", ex.design(TEMPLATE, conditions, 1, budget=budget))


def check_experiment_stopped(db: Database, experiment_id: int, limit: int, rooms: int) -> None:
    records = storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    assert len(records) == rooms
    total = Spend(*storage.experiment_spend(db, experiment_id))
    assert total.tokens >= limit
    biggest = max(
        (e.input_tokens or 0) + (e.output_tokens or 0)
        for r in records
        for e in storage.events(db, r.id)
    )
    # At most one turn per room was in flight when the limit was reached.
    assert total.tokens < limit + rooms * biggest
    for record in records:
        assert record.status == "terminated", (record.status, record.stop_reason)
        assert record.stop_reason.startswith("experiment budget reached: "), record.stop_reason
        assert record.stop_reason.endswith(f" tokens used of {limit:,}")
    # Every room took turns: the budget was shared, not spent by the first room alone.
    assert all(sum(1 for e in storage.events(db, r.id) if e.kind == "agent") >= 1 for r in records)


def test_an_experiment_budget_is_shared_by_its_rooms(db: Database) -> None:
    experiment_id = experiment(db, {"max_tokens": 1200})
    taken = asyncio.run(Worker(db, concurrency=3, poll_interval=0.02).run(until_idle=True))
    assert 3 <= taken < 3 * 40
    check_experiment_stopped(db, experiment_id, 1200, 3)
    assert ex.progress(db, experiment_id).budget == Budget(max_tokens=1200)


def test_an_experiment_budget_holds_in_a_worker_subprocess(
    db: Database, db_url: str, tmp_path: Path
) -> None:
    experiment_id = experiment(db, {"max_tokens": 1200})
    worker = subprocess.run(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--poll", "0.05"]
        + ["--concurrency", "3", "--until-idle"],
        cwd=ROOT,
        env=child_env(tmp_path / "home", db_url),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert worker.returncode == 0, worker.stderr
    check_experiment_stopped(db, experiment_id, 1200, 3)


def test_a_malformed_experiment_budget_is_refused_before_anything_is_stored(
    db: Database,
) -> None:
    conditions = ex.crossed_conditions([])
    config = {**ex.design(TEMPLATE, conditions, 1), "budget": {"max_dollars": "lots"}}
    with pytest.raises(ConversationValueError, match="budget: budget max_dollars"):
        ex.create(db, "bad", config)
    assert storage.list_experiments(db) == []
