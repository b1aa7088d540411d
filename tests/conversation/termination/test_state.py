"""RoomState and TokenUsage: the snapshot stop conditions read."""

from __future__ import annotations

import pytest

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.termination.state import RoomState, TokenUsage

E = RoomEvent
ROSTER = ["a", "b"]


def test_usage_totals_from_events_or_given() -> None:
    per_event = {1: TokenUsage(10, 5), 2: TokenUsage(1, 1)}
    state = RoomState(ROSTER, [E("user"), E("a"), E("b")], event_usage=per_event)
    assert state.usage == TokenUsage(11, 6)
    assert state.usage.total_tokens == 17
    assert state.prefix(2).usage == TokenUsage(10, 5)
    given = RoomState(ROSTER, [E("a")], usage=TokenUsage(100, 0), event_usage=per_event)
    assert given.usage.prompt_tokens == 100  # explicit totals win (calls outside events)
    assert RoomState(ROSTER).usage == TokenUsage()
    assert TokenUsage(1, 2) + TokenUsage(3, 4) == TokenUsage(4, 6)
    assert TokenUsage(1, 2).to_dict() == {"prompt_tokens": 1, "completion_tokens": 2}


def test_prefix_without_per_event_usage_keeps_totals() -> None:
    state = RoomState(ROSTER, [E("a"), E("b")], usage=TokenUsage(7, 7))
    assert state.prefix(1).usage == TokenUsage(7, 7)
    assert state.prefix(1).events == (E("a"),)


@pytest.mark.parametrize(
    ("events", "resumed_at", "scope", "turns"),
    [
        ([], 0, 0, 0),
        ([E("a"), E("b")], 0, 0, 2),
        ([E("a"), E("user"), E("a", passed=True)], 0, 1, 2),
        ([E("a"), E("b"), E("a"), E("b")], 2, 2, 2),  # caps count from the resume point
        ([E("user"), E("a"), E("b"), E("a")], 2, 2, 2),
        ([E("a"), E("user"), E("b")], 0, 1, 2),
        ([E("a"), E("m", "a", kind="pick")], 0, 0, 1),
    ],
)
def test_scope_and_turns(events: list, resumed_at: int, scope: int, turns: int) -> None:
    state = RoomState(ROSTER, events, resumed_at=resumed_at)
    assert state.scope_start() == scope
    assert state.agent_turns() == turns


def test_message_views() -> None:
    events = [E("a"), E("user", "hi"), E("m", "a", kind="pick"), E("b", passed=True)]
    state = RoomState(ROSTER, events)
    assert state.scope_messages() == [(1, events[1]), (3, events[3])]
    assert state.agent_messages() == [events[0], events[3]]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"roster": ["a", "a"]}, "appears twice"),
        ({"events": ["not an event"]}, "RoomEvent"),
        ({"usage": (1, 2)}, "usage"),
        ({"event_usage": {0: (1, 2)}}, "event_usage"),
        ({"stop_requested": 1}, "stop_requested"),
        ({"resumed_at": -1}, "resumed_at"),
        ({"seqs": [1, 2]}, "seqs"),
        ({"last_seq": -1}, "last_seq"),
    ],
)
def test_bad_state(kwargs: dict, message: str) -> None:
    values = {"roster": ROSTER, "events": [], **kwargs}
    with pytest.raises(ConversationValueError, match=message):
        RoomState(values.pop("roster"), values.pop("events"), **values)


@pytest.mark.parametrize("kwargs", [{"prompt_tokens": -1}, {"completion_tokens": 1.5}])
def test_bad_usage(kwargs: dict) -> None:
    with pytest.raises(ConversationValueError):
        TokenUsage(**kwargs)


def test_state_is_a_value() -> None:
    state = RoomState(ROSTER, [E("a")])
    assert state == RoomState(tuple(ROSTER), (E("a"),))
    with pytest.raises(AttributeError):
        state.events = ()  # type: ignore[misc]
