"""Coordinator-picked turns: recorded picks, callables, invalid picks never replaced."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conversation.exceptions import ConversationValueError
from conversation.planning.coordinator import CoordinatorPolicy, InvalidPickError, parse_pick
from conversation.planning.events import RoomEvent
from conversation.planning.registry import planner_from_dict
from conversation.planning.transitions import TransitionRules

E = RoomEvent
ROSTER = ["mod", "a", "b", "c"]


def pick(name: str, by: str = "mod") -> RoomEvent:
    return E(by, name, kind="pick")


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [
        ([E("user", "go")], "mod"),  # no pick yet: the coordinator's turn is to pick
        ([E("user"), pick("b")], "b"),
        ([E("user"), pick("b"), E("b", "done")], "mod"),  # each turn needs a new pick
        ([E("user"), pick("b"), pick("c")], "c"),  # the latest pick wins
        ([E("user"), pick("c", by="alice")], "c"),  # a person may pick
        ([E("user"), E("mod", "", kind="pick", passed=True)], None),  # "no one": settled
        ([E("user"), pick("a"), E("note", "x", kind="system")], "a"),
        ([pick("a"), E("user", "new activity")], "mod"),  # a pick before the message is stale
        ([], "mod"),  # no human message: the whole transcript is the activity
    ],
)
def test_coordinator_agent_table(transcript: list[RoomEvent], expected: str | None) -> None:
    assert CoordinatorPolicy("mod").plan_next(ROSTER, transcript) == expected


@pytest.mark.parametrize(
    "bad",
    [pick("zed"), pick("mod"), pick("")],
    ids=["stranger", "the coordinator itself", "empty"],
)
def test_a_stored_pick_outside_the_eligible_set_is_an_error(bad: RoomEvent) -> None:
    with pytest.raises(InvalidPickError, match="eligible") as caught:
        CoordinatorPolicy("mod").plan_next(ROSTER, [E("user"), bad])
    assert isinstance(caught.value, ConversationValueError)
    assert caught.value.eligible == ("a", "b", "c")


def test_transition_rules_shrink_the_eligible_set() -> None:
    policy = CoordinatorPolicy("mod", transitions=TransitionRules({"a": ["b"]}))
    transcript = [E("user"), pick("a"), E("a", "hi")]
    assert policy.eligible(ROSTER, transcript) == ("b",)
    with pytest.raises(InvalidPickError):
        policy.plan_next(ROSTER, [*transcript, pick("c")])
    assert policy.plan_next(ROSTER, [*transcript, pick("b")]) == "b"


def test_pick_needed_and_record_pick() -> None:
    policy = CoordinatorPolicy("mod")
    transcript = [E("user", "go")]
    assert policy.pick_needed(ROSTER, transcript) == ("a", "b", "c")
    event = policy.record_pick(ROSTER, transcript, "b")
    assert (event.kind, event.speaker, event.content, event.passed) == ("pick", "mod", "b", False)
    transcript.append(event)
    assert policy.pick_needed(ROSTER, transcript) is None  # replay reads the stored pick
    assert policy.plan_next(ROSTER, transcript) == "b"
    with pytest.raises(InvalidPickError):
        policy.record_pick(ROSTER, transcript, "zed")
    nobody = policy.record_pick(ROSTER, [E("user")], None)
    assert nobody.passed and policy.plan_next(ROSTER, [E("user"), nobody]) is None


def test_manual_coordination_waits_for_a_person() -> None:
    policy = CoordinatorPolicy()
    assert policy.plan_next(ROSTER, [E("user")]) is None
    assert policy.pick_needed(ROSTER, [E("user")]) is None
    assert policy.plan_next(ROSTER, [E("user"), pick("mod", by="alice")]) == "mod"
    with pytest.raises(ConversationValueError, match="by="):
        policy.record_pick(ROSTER, [E("user")], "a")
    assert policy.record_pick(ROSTER, [E("user")], "a", by="alice").speaker == "alice"


def test_callable_picker() -> None:
    seen: list[tuple[str, ...]] = []

    def last_eligible(eligible: tuple[str, ...], transcript: Sequence[RoomEvent]) -> str | None:
        seen.append(eligible)
        return eligible[-1]

    policy = CoordinatorPolicy("mod", picker=last_eligible)
    assert policy.plan_next(ROSTER, [E("user")]) == "c"
    assert seen == [("a", "b", "c")]
    assert policy.pick_needed(ROSTER, [E("user")]) is None
    assert CoordinatorPolicy(picker=lambda e, t: None).plan_next(ROSTER, [E("user")]) is None
    with pytest.raises(InvalidPickError, match="'zed'"):
        CoordinatorPolicy(picker=lambda e, t: "zed").plan_next(ROSTER, [E("user")])
    with pytest.raises(ConversationValueError, match="cannot be serialized"):
        policy.to_dict()


def test_cap_and_settings() -> None:
    policy = CoordinatorPolicy("mod", max_messages=2)
    assert policy.plan_next(ROSTER, [E("user"), pick("a"), E("a")]) is None
    assert policy.plan_next(ROSTER, [E("user"), pick("a")]) == "a"  # picks do not count
    with pytest.raises(ConversationValueError, match="not on the roster"):
        CoordinatorPolicy("zed").plan_next(ROSTER, [E("user")])
    with pytest.raises(ConversationValueError, match="coordinator"):
        CoordinatorPolicy("")
    with pytest.raises(ConversationValueError, match="picker"):
        CoordinatorPolicy(picker="a")  # type: ignore[arg-type]


def test_round_trip() -> None:
    policy = CoordinatorPolicy("mod", max_messages=None, transitions=TransitionRules({"a": ["b"]}))
    assert planner_from_dict(policy.to_dict()) == policy
    with pytest.raises(ConversationValueError):
        planner_from_dict({**policy.to_dict(), "picker": "x"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("b", "b"),
        ("  B  ", None),  # case matters: not eligible -> error below
        ("@c", "c"),
        ("I pick @a to speak next.", "a"),
        ("Next: b.", "b"),
        ('"a"', "a"),
        ("none", None),
        ("Nobody.", None),
        ("PASS", None),
    ],
)
def test_parse_pick(text: str, expected: str | None) -> None:
    eligible = ("a", "b", "c")
    if text.strip() == "B":
        with pytest.raises(InvalidPickError):
            parse_pick(text, eligible)
        return
    assert parse_pick(text, eligible) == expected


@pytest.mark.parametrize("text", ["a or b", "@a @b", "the moderator", "", "zed"])
def test_parse_pick_never_guesses(text: str) -> None:
    with pytest.raises(InvalidPickError):
        parse_pick(text, ("a", "b", "c"))


@given(st.text(max_size=30))
def test_parse_pick_returns_an_eligible_name_or_raises(text: str) -> None:
    try:
        result = parse_pick(text, ("a", "b", "c"))
    except InvalidPickError:
        return
    assert result in (None, "a", "b", "c")
