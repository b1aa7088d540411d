"""Coordinator-after: every eligible agent drafts, the coordinator (an agent's model, or a person)
picks one draft; the others are kept as audited candidates, never shown to agents."""

from __future__ import annotations

import itertools

import pytest
from edsl import Agent, AgentList

from conversation import CoordinatorPolicy, MaxTurns, OfflineModel, Room
from conversation.exceptions import ConversationStateError, ConversationValueError
from storage import Database
from tests.support.room_common import speaker_of

_DRAFTS = itertools.count(1)


def replies(user_prompt: str, system_prompt: str) -> str:
    """Each drafter writes a new idea every time; the coordinator (Alice) picks Cara's draft."""
    speaker = speaker_of(system_prompt)
    if "choose the one that should be sent" in user_prompt:
        return "Cara"
    return f"{speaker}'s secret idea no. {next(_DRAFTS)}"


def team(db: Database, coordinator: str | None, model: OfflineModel) -> Room:
    names = ["Alice", "Bob", "Cara"] if coordinator == "Alice" else ["Bob", "Cara"]
    return Room.create(
        db,
        name="drafts",
        agents=AgentList([Agent(name=n) for n in names]),
        planner=CoordinatorPolicy(coordinator=coordinator, after=True, max_messages=5),
        termination=MaxTurns(2),
        model=model,
        in_process_only=True,  # a scripted offline model lives in this process only
    )


def test_a_coordinator_agent_picks_one_draft_and_the_others_are_kept(db: Database) -> None:
    model = OfflineModel(func=replies)
    room = team(db, "Alice", model)
    room.post("Ideas for the launch?")
    turn = room.step()
    assert turn is not None
    assert turn.speaker == "Cara" and turn.result is not None
    assert turn.result.startswith("Cara's secret idea")
    assert {c["speaker"]: c["chosen"] for c in turn.candidates} == {"Bob": False, "Cara": True}
    assert turn.event.data["picked_by"] == "Alice"
    rejected = next(c["text"] for c in turn.candidates if c["speaker"] == "Bob")
    # Bob's rejected draft never reaches any agent: not in any later prompt.
    room.step()
    later = [user for _, user in model.prompts[3:]]
    assert later and all(rejected not in p for p in later)
    assert any(turn.result in p for p in later)


def test_a_person_coordinates_by_picking_a_draft(db: Database) -> None:
    model = OfflineModel(func=replies)
    room = team(db, None, model)
    room.post("Ideas for the launch?")
    waiting = room.step()
    assert waiting is not None and waiting.state == "waiting"
    assert room.status == "waiting"
    assert [c["speaker"] for c in waiting.candidates] == ["Bob", "Cara"]
    with pytest.raises(ConversationStateError, match="use pick"):
        waiting.approve()
    with pytest.raises(ConversationValueError, match="drafted no candidate"):
        waiting.pick("Mallory")
    waiting.pick("Bob", by="ann")
    chosen = room.turn(waiting.id)
    assert (chosen.speaker, chosen.state) == ("Bob", "done")
    assert (chosen.result or "").startswith("Bob's secret idea")
    assert chosen.event.data["picked_by"] == "ann"
    assert room.status == "running"
    exported = room.export()
    assert any((e.get("data") or {}).get("candidates") for e in exported["events"])


def test_no_draft_chosen_settles_the_activity(db: Database) -> None:
    def nobody(user_prompt: str, system_prompt: str) -> str:
        return "NONE" if "choose the one that should be sent" in user_prompt else "an idea"

    room = team(db, "Alice", OfflineModel(func=nobody))
    room.post("Anything?")
    room.run()
    assert room.status == "settled"
    assert [e.kind for e in room.events()] == ["human", "agent"]
