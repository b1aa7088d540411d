"""Spend shown live: the Room page shows what the room spent against its budget (and the stop
reason once reached), the Experiments page takes an experiment budget and shows its rooms' spend
against it."""

from __future__ import annotations

import storage
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from storage import Database
from tests.app.page_support import app, captions, shown

OFFLINE = {"service": "offline", "model": "offline", "parameters": {"seed": 3}}


def test_the_room_page_shows_spend_against_the_budget_live(db: Database) -> None:
    room = Room.create(
        db,
        name="budgeted",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        planner=RoundRobinPolicy(),
        termination=MaxTurns(40),
        model=OFFLINE,
        budget={"max_tokens": 300},
    )
    room.post("Talk about mugs.")
    at = app("pages/room.py", room=str(room.id))
    assert "Spent: 0 of 300 tokens budget" in captions(at)
    room.run()
    at.run()  # a poll: the page reruns with the new turns
    tokens, *_ = storage.room_spend(db, room.id)
    assert f"Spent: {tokens:,} of 300 tokens budget" in captions(at)
    assert any(
        f"Ended: budget reached: {tokens:,} tokens used of 300" in shown(i.value) for i in at.info
    )


def test_a_room_without_a_budget_shows_what_it_spent(db: Database) -> None:
    room = Room.create(db, name="free", agents=[{"name": "Alice"}], model=OFFLINE)
    room.post("Hello.")
    room.run()
    at = app("pages/room.py", room=str(room.id))
    tokens, *_ = storage.room_spend(db, room.id)
    assert tokens > 0
    assert f"Spent: {tokens:,} tokens, $0.00; no budget" in captions(at)


def test_the_experiments_page_takes_a_budget_and_shows_spend_against_it(db: Database) -> None:
    from conversation.sync import run_sync
    from conversation.worker import Worker

    at = app("pages/experiments.py")
    at.number_input(key="exp-budget-tokens").set_value(2000).run()
    at.number_input(key="exp-budget-usd").set_value(1.5).run()
    at.button(key="exp-run").click().run()
    assert not at.exception
    (experiment,) = storage.list_experiments(db)
    assert experiment.config["budget"] == {"max_tokens": 2000, "max_dollars": 1.5}
    assert "Spent: $0.00 of $1.50, 0 of 2,000 tokens budget" in captions(at)

    run_sync(Worker(db, concurrency=12, poll_interval=0.05).run(until_idle=True))
    at.run()
    tokens, *_ = storage.experiment_spend(db, experiment.id)
    assert tokens >= 2000
    assert (
        f"Spent: $0.00 of $1.50, {tokens:,} of 2,000 tokens budget (reached: no new turns start)"
        in captions(at)
    )
    stopped = [r for r in storage.list_rooms(db, experiment_id=experiment.id, limit=None)]
    assert any((r.stop_reason or "").startswith("experiment budget reached") for r in stopped)


def test_the_new_room_form_stores_a_budget(db: Database) -> None:
    at = app("pages/room.py")
    at.selectbox(key="new-tpl").set_value("planner_coder_reviewer").run()
    at.number_input(key="new-usd").set_value(0.25).run()
    at.number_input(key="new-tokens").set_value(5000).run()
    at.button(key="new-create").click().run()
    assert not at.exception
    (record,) = storage.list_rooms(db)
    assert record.config["budget"] == {"max_tokens": 5000, "max_dollars": 0.25}
    assert "Spent: $0.00 of $0.25, 0 of 5,000 tokens budget" in captions(at)
