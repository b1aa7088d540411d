"""RoomEvent (frozen, hashable, validated, serializable) and the activity helpers."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conversation.exceptions import ConversationValueError
from conversation.planning.events import (
    RoomEvent,
    activity_start,
    agent_turns,
    check_roster,
    current_activity,
    last_message,
    opener_index,
)

E = RoomEvent


def test_seed_fields_and_defaults() -> None:
    event = RoomEvent("user")
    assert (event.speaker, event.content, event.round, event.passed) == ("user", "", 0, False)
    assert [f.name for f in dataclasses.fields(RoomEvent)][:4] == [
        "speaker",
        "content",
        "round",
        "passed",
    ]
    assert RoomEvent("a", "hi", 2, True) == RoomEvent(
        speaker="a", content="hi", round=2, passed=True
    )
    assert event.kind == "message" and event.visible_to is None and event.covers is None


def test_frozen_and_hashable() -> None:
    event = RoomEvent("a", "hi", visible_to=["b"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.content = "changed"  # type: ignore[misc]
    assert event.visible_to == ("b",)  # a list is normalised to a tuple
    assert {event, RoomEvent("a", "hi", visible_to=("b",))} == {event}


def test_extra_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        RoomEvent("a", "hi", 0, False, "pick")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"speaker": ""}, "speaker"),
        ({"speaker": 3}, "speaker"),
        ({"speaker": "a", "content": None}, "content"),
        ({"speaker": "a", "round": -1}, "round"),
        ({"speaker": "a", "round": True}, "round"),
        ({"speaker": "a", "round": 1.0}, "round"),
        ({"speaker": "a", "passed": "yes"}, "passed"),
        ({"speaker": "a", "kind": "shout"}, "kind"),
        ({"speaker": "a", "visible_to": "b"}, "visible_to"),
        ({"speaker": "a", "visible_to": [""]}, "visible_to"),
        ({"speaker": "a", "kind": "summary"}, "covers"),
        ({"speaker": "a", "covers": (0, 1)}, "covers"),
        ({"speaker": "a", "kind": "summary", "covers": (3, 1)}, "covers"),
        ({"speaker": "a", "kind": "summary", "covers": (0,)}, "covers"),
    ],
)
def test_bad_fields_raise_naming_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ConversationValueError, match=field):
        RoomEvent(**kwargs)


def test_text_alias_and_visibility() -> None:
    private = RoomEvent("alice", "psst", visible_to=("bob",))
    assert private.text == "psst"
    assert private.visible_for("bob") and private.visible_for("alice")
    assert not private.visible_for("carol")
    assert RoomEvent("alice", "hi").visible_for("anyone")


EVENTS = st.builds(
    RoomEvent,
    speaker=st.sampled_from(["a", "b", "user"]),
    content=st.text(max_size=20),
    round=st.integers(0, 5),
    passed=st.booleans(),
    kind=st.sampled_from(["message", "pick", "system"]),
    visible_to=st.none() | st.lists(st.sampled_from(["a", "b"]), max_size=2).map(tuple),
)


@given(EVENTS)
def test_round_trip_through_json(event: RoomEvent) -> None:
    assert RoomEvent.from_dict(json.loads(json.dumps(event.to_dict()))) == event


def test_summary_round_trip_and_strict_from_dict() -> None:
    summary = RoomEvent("summary", "s", kind="summary", covers=(0, 4))
    assert RoomEvent.from_dict(summary.to_dict()) == summary
    with pytest.raises(ConversationValueError, match="api_key"):
        RoomEvent.from_dict({"speaker": "a", "api_key": "x"})
    with pytest.raises(ConversationValueError, match="speaker"):
        RoomEvent.from_dict({"content": "x"})
    with pytest.raises(ConversationValueError):
        RoomEvent.from_dict(["a"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("roster", "message"),
    [(["a", "a"], "'a' appears twice"), (["a", ""], "non-empty"), ("ab", "string")],
)
def test_check_roster(roster: object, message: str) -> None:
    with pytest.raises(ConversationValueError, match=message):
        check_roster(roster)  # type: ignore[arg-type]


ROSTER = ["a", "b"]


@pytest.mark.parametrize(
    ("events", "opener", "start"),
    [
        ([], None, 0),
        ([E("a"), E("b")], None, 0),
        ([E("user"), E("a")], 0, 0),
        ([E("user"), E("a"), E("bob", "again"), E("a")], 2, 2),
        # Non-message events never open an activity, whoever writes them.
        ([E("user"), E("a"), E("mod", "b", kind="pick"), E("room", "note", kind="system")], 0, 0),
        ([E("user"), E("a"), E("summary", "s", kind="summary", covers=(0, 1))], 0, 0),
        # A person's pass is still a human message.
        ([E("a"), E("user", passed=True)], 1, 1),
    ],
)
def test_activity_table(events: list[RoomEvent], opener: int | None, start: int) -> None:
    assert opener_index(ROSTER, events) == opener
    assert activity_start(ROSTER, events) == start
    assert current_activity(ROSTER, events) == (start, events[start:])


def test_agent_turns_and_last_message() -> None:
    events = [E("user"), E("a"), E("b", passed=True), E("m", "a", kind="pick"), E("user", "x")]
    assert agent_turns(ROSTER, events) == ["a", "b"]
    assert last_message(events) == E("user", "x")
    assert last_message([E("m", "a", kind="pick")]) is None
