"""Agents in rooms with people (issue 33): hand raising (one call decides and drafts), a cap of
replies per agent, no reply to its own message, one agent per person's message; each decision
stored with its turn and shown."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from edsl import Agent, AgentList

from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel
from conversation.planning.planner import RoundRobinRoomPlanner
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.engine.kinds import shown
from conversation.rooms.engine.kinds.hand import read_decision
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from conversation.vocabulary import EventKind, TurnKind, entry_of
from storage import Database
from tests.support.room_common import drive_with


def _decide(says: dict[str, dict[str, Any]]) -> Any:
    """A model whose agents answer the hand-raising instruction as ``says[agent]`` does."""

    def reply(user_prompt: str, system_prompt: str, files: Any = None) -> str:
        name = next(n for n in says if f"You are {n}" in system_prompt or n in system_prompt)
        return json.dumps(says[name])

    return OfflineModel(func=reply)


def _room(db: Database, names: tuple[str, ...], rules: dict[str, Any], **kw: Any) -> Room:
    return Room.create(
        db,
        name="rules",
        agents=AgentList([Agent(name=n) for n in names]),
        planner=RoundRobinRoomPlanner(max_rounds=1),
        model=OfflineModel(seed=3, mention_probability=0),
        agent_rules=rules,
        **kw,
    )


def _turns(room: Room) -> list[Any]:
    return [entry_of(e) for e in room.events() if e.kind in (EventKind.AGENT, EventKind.PASS)]


def test_an_agent_that_lowers_its_hand_stays_silent_and_its_decision_is_stored(
    db: Database,
) -> None:
    room = _room(db, ("Mediator", "Coach"), {"hand_raising": True})
    says = {
        "Mediator": {"should_respond": False, "reason": "nothing to add", "ready_to_end": False},
        "Coach": {
            "should_respond": True,
            "reason": "a question to answer",
            "ready_to_end": True,
            "message": "Try offering $6.",
        },
    }
    drive_with(room, _decide(says))
    room.post("rate test 3")
    room.run(4)
    turns = _turns(room)
    assert [(t.speaker, t.kind) for t in turns] == [
        ("Mediator", EventKind.PASS),
        ("Coach", EventKind.AGENT),
    ]
    assert all(t.turn_kind is TurnKind.HAND for t in turns)
    silent, spoke = turns
    assert silent.decision["should_respond"] is False
    assert silent.decision["reason"] == "nothing to add"
    assert spoke.content == "Try offering $6."
    assert spoke.decision["ready_to_end"] is True
    assert "stayed silent" in shown(silent).text and "nothing to add" in shown(silent).text
    assert "a question to answer" in shown(spoke).text


def test_a_reply_without_a_decision_is_the_message() -> None:
    decision, text = read_decision("Hello there")
    assert decision["should_respond"] is True and text == "Hello there"
    decision, text = read_decision('Sure: {"should_respond": false, "reason": "no"}')
    assert decision["should_respond"] is False and text == ""


def test_one_agent_per_message_the_first_that_claims_it_answers(db: Database) -> None:
    room = _room(db, ("Ana", "Ben", "Cy"), {"one_per_message": True})
    room.post("hello")
    room.run(6)
    turns = _turns(room)
    assert [(t.speaker, t.kind) for t in turns] == [
        ("Ana", EventKind.AGENT),
        ("Ben", EventKind.PASS),
        ("Cy", EventKind.PASS),
    ]
    assert "Ana answered the person's message" in turns[1].decision["reason"]
    assert turns[1].decision["by"] == "rule" and turns[1].row.input_tokens is None


def test_with_hands_the_first_agent_that_says_yes_is_the_one_that_answers(db: Database) -> None:
    room = _room(db, ("Ana", "Ben", "Cy"), {"one_per_message": True, "hand_raising": True})
    no = {"should_respond": False, "reason": "not mine"}
    yes = {"should_respond": True, "reason": "mine", "message": "I'll take it."}
    drive_with(room, _decide({"Ana": no, "Ben": yes, "Cy": yes}))
    room.post("hello")
    room.run(6)
    assert [(t.speaker, t.kind, t.decision["by"]) for t in _turns(room)] == [
        ("Ana", EventKind.PASS, "model"),
        ("Ben", EventKind.AGENT, "model"),
        ("Cy", EventKind.PASS, "rule"),
    ]


def test_an_agent_says_at_most_max_replies_messages(db: Database) -> None:
    room = _room(db, ("Mediator",), {"max_replies": 2})
    for text in ("one", "two", "three"):
        room.post(text)
        room.run(3)
    turns = _turns(room)
    assert [t.kind for t in turns] == [EventKind.AGENT, EventKind.AGENT, EventKind.PASS]
    assert "max_replies" in turns[-1].decision["reason"]


@pytest.mark.parametrize("rule", [False, True])
def test_an_agent_never_answers_its_own_message(db: Database, rule: bool) -> None:
    # A lone agent under a round robin gets every turn: without the rule it answers its own
    # message; with it, every turn after its message is a pass (no model call).
    room = Room.create(
        db,
        name="self",
        agents=AgentList([Agent(name="Solo")]),
        planner=RoundRobinPolicy(),
        termination=MaxTurns(3),
        model=OfflineModel(seed=3, mention_probability=0),
        agent_rules={"no_self_reply": True} if rule else None,
    )
    room.post("hi")
    room.run(5)
    kinds = [t.kind for t in _turns(room)]
    if rule:
        assert kinds == [EventKind.AGENT, EventKind.PASS, EventKind.PASS]
        assert "its own message" in _turns(room)[-1].decision["reason"]
    else:
        assert kinds == [EventKind.AGENT] * 3


def test_no_rule_means_ordinary_speaking_turns(db: Database) -> None:
    room = Room.create(
        db,
        name="plain",
        agents=AgentList([Agent(name="Ana")]),
        model=OfflineModel(seed=3, mention_probability=0),
    )
    room.post("hi")
    room.run(1)
    assert [t.turn_kind for t in _turns(room)] == [TurnKind.SPEAK]
    assert "agent_rules" not in room.config.to_dict()


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        ({"max_replies": -1}, "agent_rules max_replies must be >= 0"),
        ({"hand_raising": "yes"}, "agent_rules hand_raising must be true or false"),
        ({"colour": 1}, "agent_rules has unknown field(s) ['colour']"),
    ],
)
def test_bad_agent_rules_are_refused_naming_the_key(
    db: Database, rules: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConversationValueError, match=re.escape(expected)):
        _room(db, ("Ana",), rules)


def test_every_export_carries_the_hand_decision(db: Database) -> None:
    """Issue 33: the decision is in the provenance columns every export shares (the room's
    JSON export, the CSVs): raised or not, the reason, ready to end, who decided."""
    from storage import PROVENANCE_COLUMNS

    room = _room(db, ("Mediator", "Coach"), {"hand_raising": True})
    says = {
        "Mediator": {"should_respond": False, "reason": "nothing to add", "ready_to_end": True},
        "Coach": {"should_respond": True, "reason": "asked", "message": "Try $6."},
    }
    drive_with(room, _decide(says))
    room.post("rate test 3")
    room.run(4)
    exported = {e["speaker"]: e["provenance"] for e in room.export()["events"]}
    hand = ["hand_raised", "hand_reason", "ready_to_end", "hand_decided_by"]
    assert set(hand) <= set(PROVENANCE_COLUMNS)
    assert [exported["Mediator"][c] for c in hand] == [False, "nothing to add", True, "model"]
    assert [exported["Coach"][c] for c in hand] == [True, "asked", False, "model"]
    person = next(e["provenance"] for e in room.export()["events"] if e["kind"] == "human")
    assert [person[c] for c in hand] == [None, None, None, None]
