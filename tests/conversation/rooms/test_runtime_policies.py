"""Room runtime for the policies that need a model beyond the speaker's turn: a coordinator's
picks and a context window's summaries (each asked once, stored as a turn, replayed after)."""

from __future__ import annotations

import pytest
from edsl import Agent, AgentList

from conversation import (
    ContextPolicy,
    CoordinatorPolicy,
    MaxTurns,
    OfflineModel,
    Room,
    RoundRobinPolicy,
)
from conversation.rooms.log import log_view
from storage import Database


@pytest.fixture
def db(db_url: str) -> Database:
    return Database(db_url)


def roster(*names: str) -> AgentList:
    return AgentList([Agent(name=n, traits={"role": n}) for n in names])


def test_coordinator_picks_are_asked_once_and_stored_as_pick_events(db: Database) -> None:
    model = OfflineModel(replies=["Ben", "Ben speaks", "@Ann", "Ann speaks", "NONE"])
    room = Room.create(
        db,
        name="coordinated",
        agents=roster("moderator", "Ann", "Ben"),
        planner=CoordinatorPolicy(coordinator="moderator"),
        model=model,
        in_process_only=True,
    )
    room.post("What should we cook?")
    room.run()
    rows = room.events()
    assert [(e.speaker, e.content) for e in rows[1:]] == [
        ("moderator", "picked Ben"),
        ("Ben", "Ben speaks"),
        ("moderator", "picked Ann"),
        ("Ann", "Ann speaks"),
        ("moderator", "picked no one"),
    ]
    assert room.status == "settled"
    view = log_view(room.config.names, rows)
    assert [e.kind for e in view.events] == [
        "message",
        "pick",
        "message",
        "pick",
        "message",
        "pick",
    ]
    # The pick prompt lists exactly the eligible speakers (the coordinator is not one of them).
    assert 'Eligible speakers (JSON): ["Ann", "Ben"]' in model.prompts[0][1]
    # Replaying the log asks nothing again.
    calls = model.calls
    room.run()
    assert model.calls == calls


def test_a_pick_outside_the_eligible_set_fails_the_room(db: Database) -> None:
    room = Room.create(
        db,
        name="bad pick",
        agents=roster("moderator", "Ann", "Ben"),
        planner=CoordinatorPolicy(coordinator="moderator"),
        model=OfflineModel(replies=["Zed"]),
        in_process_only=True,
    )
    room.post("go")
    room.run()
    assert room.status == "failed"
    assert "invalid pick" in (room.stop_reason or "")
    (turn,) = room.turns()
    assert turn.state == "failed"
    assert turn.error and turn.error["type"] == "InvalidPickError"


def _longest_prompt(context: ContextPolicy | None, turns: int, db: Database) -> tuple[int, Room]:
    model = OfflineModel(seed=5)
    room = Room.create(
        db,
        name="long",
        agents=roster("Ann", "Ben"),
        planner=RoundRobinPolicy(),
        termination=MaxTurns(turns),
        context=context,
        model=model,
    )
    room.post("Plan a picnic for twelve people, with a budget.")
    room.run()
    assert room.status == "terminated"
    turn_prompts = [user for _, user in model.prompts if not user.startswith("Summarise")]
    return max(len(user) for user in turn_prompts), room


def test_a_summarising_window_keeps_prompts_bounded_and_summarises_once(db: Database) -> None:
    unbounded, _ = _longest_prompt(None, 40, db)
    bounded, room = _longest_prompt(
        ContextPolicy(max_messages=4, summarize=True, summary_batch=4), 40, db
    )
    assert bounded < unbounded / 2
    summaries = [e for e in room.events() if e.speaker == "summary"]
    assert summaries, "no summary was made"
    assert all(e.state == "done" and e.content for e in summaries)
    covers = [tuple(e.data["covers_seqs"]) for e in summaries]
    assert covers == sorted(covers)  # each summary extends the previous one
    assert len(set(covers)) == len(covers)  # never the same span twice
