"""Role retirement (an agent leaves the rotation after a phrase or N turns), the stop rule
"every role has spoken (or retired)", and the focal speaker's next recipient."""

from __future__ import annotations

import pytest

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.planning.planner import RoundRobinRoomPlanner
from conversation.planning.policies import FocalSpeakerPolicy, RandomPolicy, RoundRobinPolicy
from conversation.planning.registry import planner_from_dict
from conversation.planning.transitions import TransitionRules, retired_agents
from conversation.termination.conditions import termination_from_dict
from conversation.termination.markers import AllSpoken
from conversation.termination.state import RoomState

ABC = ("a", "b", "c")


def talk(*pairs: tuple[str, str]) -> list[RoomEvent]:
    return [RoomEvent("user", "start"), *(RoomEvent(s, t) for s, t in pairs)]


def test_an_agent_who_says_the_phrase_leaves_the_rotation() -> None:
    rules = TransitionRules(retire_on="I'M DONE")
    policy = RoundRobinPolicy(transitions=rules)
    events = talk(("a", "hello"), ("b", "that is all. I'M DONE"), ("c", "ok"))
    assert policy.plan_next(ABC, events) == "a"
    events.append(RoomEvent("a", "more"))
    assert policy.plan_next(ABC, events) == "c"  # b retired: skipped
    assert retired_agents(ABC, events, retire_on="I'M DONE", retire_after=None) == {"b"}


def test_after_n_turns_an_agent_retires_and_when_all_retired_the_activity_settles() -> None:
    policy = RoundRobinPolicy(transitions=TransitionRules(retire_after=1))
    events = talk(("a", "1"), ("b", "2"))
    assert policy.plan_next(ABC, events) == "c"
    events.append(RoomEvent("c", "3"))
    assert policy.plan_next(ABC, events) is None


@pytest.mark.parametrize(
    "planner",
    [
        RoundRobinRoomPlanner(max_rounds=3, transitions=TransitionRules(retire_after=1)),
        RandomPolicy(seed=7, transitions=TransitionRules(retire_after=1)),
    ],
    ids=["room rounds", "random"],
)
def test_every_planner_honours_retirement(planner) -> None:  # type: ignore[no-untyped-def]
    events = talk(("a", "1"))
    for _ in range(5):
        speaker = planner.plan_next(ABC, events)
        if speaker is None:
            break
        assert speaker != "a"
        events.append(RoomEvent(speaker, "x"))
    assert {e.speaker for e in events[2:]} <= {"b", "c"}


def test_retirement_settings_round_trip_and_are_validated() -> None:
    policy = RoundRobinPolicy(transitions=TransitionRules({"a": ["b"]}, retire_on="BYE"))
    again = planner_from_dict(policy.to_dict())
    assert again == policy and again.to_dict()["transitions"]["retire_on"] == "BYE"
    with pytest.raises(ConversationValueError, match="retire_after"):
        TransitionRules(retire_after=0)
    with pytest.raises(ConversationValueError, match="retire_on"):
        TransitionRules(retire_on="  ")


def test_all_spoken_stops_when_every_role_spoke_or_retired() -> None:
    rule = AllSpoken(retire_on="I'M DONE")
    assert rule.check(RoomState(ABC, talk(("a", "x"), ("b", "y")))) is None
    assert rule.check(RoomState(ABC, talk(("a", "x"), ("b", "y"), ("c", "z")))) == (
        "every agent has spoken"
    )
    retired = talk(("a", "x I'M DONE"), ("b", "y"))
    assert rule.check(RoomState(ABC, retired)) is None  # c has not spoken yet
    no_c = AllSpoken(retire_after=1)
    assert "retired" in (no_c.check(RoomState(("a", "b"), talk(("a", "x"), ("b", "y")))) or "")
    assert termination_from_dict(rule.to_dict()) == rule


def test_the_focal_speaker_is_told_whom_it_addresses_next() -> None:
    policy = FocalSpeakerPolicy(focal_speaker="a")
    events = talk()
    first = policy.plan_turn(ABC, events)
    assert first is not None and (first.speaker, first.addressee) == ("a", "b")
    events += [RoomEvent("a", "to b"), RoomEvent("b", "reply")]
    second = policy.plan_turn(ABC, events)
    assert second is not None and (second.speaker, second.addressee) == ("a", "c")
    events.append(RoomEvent("a", "to c"))
    third = policy.plan_turn(ABC, events)
    assert third is not None and (third.speaker, third.addressee) == ("c", None)
