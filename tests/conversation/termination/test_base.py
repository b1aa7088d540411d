"""Composition with | and &: first reason wins, & remembers (derived from the transcript)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.termination.conditions import (
    AllOf,
    AnyOf,
    ContestedEscalation,
    External,
    MaxMessages,
    MaxTurns,
    RoomState,
    StopDecision,
    TerminationCondition,
    TextMention,
)

E = RoomEvent
ROSTER = ["Alice", "Bob"]


def state(*events: RoomEvent, **kwargs: object) -> RoomState:
    return RoomState(ROSTER, list(events), **kwargs)  # type: ignore[arg-type]


def test_or_takes_the_first_firing_part() -> None:
    condition = TextMention("DEAL") | MaxTurns(2)
    assert isinstance(condition, AnyOf)
    assert condition.check(state(E("Alice", "hi"))) is None
    assert condition.check(state(E("Alice", "hi"), E("Bob", "DEAL"))) == "'DEAL' mentioned by Bob"
    assert condition.check(state(E("Alice"), E("Bob"))) == "max_turns reached (2)"


def test_and_remembers_parts_that_fired_earlier() -> None:
    condition = TextMention("DEAL") & MaxTurns(3)
    assert isinstance(condition, AllOf)
    events = [E("user", "go"), E("Alice", "DEAL?"), E("Bob", "thinking")]
    assert condition.check(state(*events)) is None  # DEAL fired, max_turns not yet
    assert condition.fired_parts(state(*events)) == [2, None]
    events.append(E("Alice", "still thinking"))
    # DEAL is no longer in the latest message, but & remembers it fired.
    assert condition.check(state(*events)) == "'DEAL' mentioned by Alice and max_turns reached (3)"
    # A fresh object (as after a restart) derives the same memory from the transcript.
    fresh = TextMention("DEAL") & MaxTurns(3)
    assert fresh.check(state(*events)) == condition.check(state(*events))


def test_negative_control_without_memory_the_same_room_would_not_stop() -> None:
    events = [E("user", "go"), E("Alice", "DEAL?"), E("Bob", "x"), E("Alice", "y")]
    room = state(*events)
    parts = [TextMention("DEAL"), MaxTurns(3)]
    assert not all(p.check(room) for p in parts)  # "all fire now" would say no
    assert (parts[0] & parts[1]).check(room) is not None


def test_and_memory_is_scoped_to_the_current_activity() -> None:
    condition = TextMention("DEAL") & TextMention("SIGNED")
    events = [E("user", "1"), E("Alice", "DEAL"), E("user", "2"), E("Bob", "SIGNED")]
    assert condition.check(state(*events)) is None  # DEAL belongs to a settled activity
    events += [E("Alice", "DEAL")]
    assert (
        condition.check(state(*events)) == "'DEAL' mentioned by Alice and 'SIGNED' mentioned by Bob"
    )


def test_and_memory_starts_at_the_resume_point() -> None:
    condition = TextMention("DEAL") & TextMention("SIGNED")
    events = [E("Alice", "DEAL"), E("Bob", "SIGNED")]
    assert condition.check(state(*events)) is not None
    assert condition.check(state(*events, resumed_at=1)) is None


def test_operators_flatten_and_compare() -> None:
    a, b, c = MaxTurns(1), MaxTurns(2), MaxTurns(3)
    assert (a | b | c).parts == (a, b, c)
    assert (a & b & c).parts == (a, b, c)
    assert ((a | b) & c).parts == (a | b, c)
    assert (a | b) == (MaxTurns(1) | MaxTurns(2))
    assert hash(a & b) == hash(MaxTurns(1) & MaxTurns(2))
    assert repr(a | b) == "(MaxTurns(max_turns=1) | MaxTurns(max_turns=2))"
    with pytest.raises(ConversationValueError):
        a | "DEAL"  # type: ignore[operator]
    with pytest.raises(ConversationValueError):
        AnyOf([])


def test_evaluate_carries_escalation_and_kinds() -> None:
    contested = ContestedEscalation(2)
    room = state(E("Alice", "DISAGREE: price"), E("Bob", "DISAGREE: price"))
    decision = (MaxTurns(99) | contested).evaluate(room)
    assert decision == StopDecision(
        "contested: 'price' disputed 2 times in this activity; a person should decide",
        True,
        ("contested_escalation",),
    )
    both = (MaxTurns(2) & contested).evaluate(room)
    assert (
        both is not None and both.escalate and both.kinds == ("max_turns", "contested_escalation")
    )
    assert MaxTurns(2).evaluate(room) == StopDecision(
        "max_turns reached (2)", False, ("max_turns",)
    )
    assert MaxTurns(5).evaluate(room) is None


def test_external_fires_now_inside_and() -> None:
    stop = External()
    condition = MaxTurns(1) & stop
    room = state(E("Alice"), E("Bob"))
    assert condition.check(room) is None
    stop.set("button")
    assert condition.check(room) == "max_turns reached (1) and stopped from outside: button"


TRANSCRIPTS = st.lists(
    st.builds(
        E,
        speaker=st.sampled_from(["Alice", "Bob", "user"]),
        content=st.sampled_from(["DEAL", "SIGNED", "hmm", "DEAL SIGNED"]),
        passed=st.booleans(),
    ),
    max_size=14,
)
PARTS = st.sampled_from(
    [TextMention("DEAL"), TextMention("SIGNED"), MaxTurns(3), MaxMessages(4), MaxTurns(6)]
)


def linear_first_fired(condition: TerminationCondition, room: RoomState, start: int) -> int | None:
    n = len(room.events)
    for length in range(min(start + 1, n), n + 1):
        if condition.check(room.prefix(length)) is not None:
            return length
    return None


@settings(max_examples=150)
@given(TRANSCRIPTS, PARTS, PARTS)
def test_composition_laws(events: list, a: TerminationCondition, b: TerminationCondition) -> None:
    room = state(*events)
    # Pure: the same state gives the same answer.
    assert (a & b).check(room) == (a & b).check(room)
    # | fires exactly when a part fires now.
    assert ((a | b).check(room) is not None) == (
        a.check(room) is not None or b.check(room) is not None
    )
    # & fires exactly when each part fired on some prefix inside the scope; order does not matter.
    start = room.scope_start()
    fired = all(linear_first_fired(p, room, start) is not None for p in (a, b))
    assert ((a & b).check(room) is not None) == fired
    assert ((a & b).check(room) is None) == ((b & a).check(room) is None)
    # Once & fires, it keeps firing as the activity grows (memory).
    if (a & b).check(room) is not None:
        longer = state(*events, E("Alice", "more"))
        if longer.scope_start() == start:
            assert (a & b).check(longer) is not None


@settings(max_examples=150)
@given(TRANSCRIPTS, st.sampled_from([MaxTurns(2), MaxTurns(5), MaxMessages(3)]))
def test_binary_search_matches_the_linear_scan(
    events: list, condition: TerminationCondition
) -> None:
    room = state(*events)
    start = room.scope_start()
    assert condition.first_fired(room, start) == linear_first_fired(condition, room, start)
