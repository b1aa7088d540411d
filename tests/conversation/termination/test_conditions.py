"""Built-in stop conditions: counts, text, budgets, external stop, conversation-API stopping functions,
serialization."""

from __future__ import annotations

import pytest

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.termination.conditions import (
    AllAgreed,
    ContestedEscalation,
    Convergence,
    External,
    MaxMessages,
    MaxTurns,
    RoomState,
    StoppingFunction,
    Supervisor,
    TerminationCondition,
    TextMention,
    TokenBudget,
    TokenUsage,
    termination_from_dict,
)

E = RoomEvent
ROSTER = ["Alice", "Bob"]


def state(*events: RoomEvent, **kwargs: object) -> RoomState:
    return RoomState(ROSTER, list(events), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("condition", "room", "expected"),
    [
        (MaxTurns(2), state(E("Alice")), None),
        (MaxTurns(2), state(E("Alice"), E("Bob")), "max_turns reached (2)"),
        (MaxTurns(2), state(E("Alice"), E("user"), E("Bob", passed=True)), "max_turns reached (2)"),
        (MaxTurns(2), state(E("user"), E("user"), E("Alice")), None),  # people are not turns
        (
            MaxTurns(2),
            state(E("Alice"), E("Bob"), E("Alice"), resumed_at=1),
            "max_turns reached (2)",
        ),
        (MaxTurns(2), state(E("Alice"), E("Bob"), resumed_at=1), None),  # counts from the resume
        (MaxTurns(0), state(), "max_turns reached (0)"),
        (MaxMessages(3), state(E("user"), E("Alice")), None),
        (
            MaxMessages(3),
            state(E("user"), E("Alice"), E("Bob", passed=True)),
            "max_messages reached (3) in this activity",
        ),
        (
            MaxMessages(3),
            state(E("user"), E("Alice"), E("Bob"), E("user", "again")),
            None,
        ),  # per activity
        (MaxMessages(2), state(E("user"), E("m", "x", kind="system")), None),  # only messages count
        (
            TextMention("DEAL"),
            state(E("Alice", "no"), E("Bob", "DEAL at $5")),
            "'DEAL' mentioned by Bob",
        ),
        (
            TextMention("DEAL"),
            state(E("Bob", "DEAL"), E("Alice", "hmm")),
            None,
        ),  # latest message only
        (TextMention("DEAL"), state(E("Bob", "deal")), None),
        (
            TextMention("DEAL", case_sensitive=False),
            state(E("Bob", "deal!")),
            "'DEAL' mentioned by Bob",
        ),
        (TextMention("DEAL", sources=["Alice"]), state(E("Bob", "DEAL")), None),
        (
            TextMention("DEAL", sources="Alice"),
            state(E("Alice", "DEAL")),
            "'DEAL' mentioned by Alice",
        ),
        (TextMention("DEAL"), state(E("user", "DEAL?")), "'DEAL' mentioned by user"),
        (
            TextMention("DEAL"),
            state(E("Bob", "DEAL"), E("r", "note", kind="system")),
            "'DEAL' mentioned by Bob",
        ),
        (TextMention("DEAL"), state(E("Bob", "DEAL", passed=True)), None),
        (TextMention("DEAL"), state(), None),
        (TokenBudget(max_total_tokens=100), state(usage=TokenUsage(60, 39)), None),
        (
            TokenBudget(max_total_tokens=100),
            state(usage=TokenUsage(60, 40)),
            "token budget reached: total tokens 100 >= 100",
        ),
        (
            TokenBudget(max_prompt_tokens=50),
            state(usage=TokenUsage(50, 0)),
            "token budget reached: prompt tokens 50 >= 50",
        ),
        (
            TokenBudget(max_completion_tokens=5),
            state(usage=TokenUsage(0, 9)),
            "token budget reached: completion tokens 9 >= 5",
        ),
        (External(), state(), None),
        (External(), state(stop_requested="stop button"), "stopped from outside: stop button"),
        (External("admin"), state(), "stopped from outside: admin"),
    ],
)
def test_conditions_table(
    condition: TerminationCondition, room: RoomState, expected: str | None
) -> None:
    assert condition.check(room) == expected


def test_external_is_set_and_cleared_from_outside() -> None:
    stop = External()
    room = state(E("Alice"))
    assert stop.check(room) is None
    stop.set("stop button pressed by Ann")
    assert stop.requested == "stop button pressed by Ann"
    assert stop.check(room) == "stopped from outside: stop button pressed by Ann"
    assert (MaxTurns(99) | stop).check(room) == "stopped from outside: stop button pressed by Ann"
    stop.clear()
    assert stop.check(room) is None
    with pytest.raises(ConversationValueError):
        stop.set("")


def test_seed_000_stopping_function_as_a_condition() -> None:
    def stop_on_deal(statements: list) -> bool:  # the seed's example, unchanged
        if statements:
            return "DEAL" in statements[-1].text.upper()
        return False

    condition = StoppingFunction(stop_on_deal)
    assert condition.check(state()) is None
    assert condition.check(state(E("user", "deal?"), E("Alice", "no"))) is None
    assert (
        condition.check(state(E("Alice", "ok, deal")))
        == "stopping_function stop_on_deal returned True"
    )
    # A custom argument builder (e.g. the engine's AgentStatements).
    counted = StoppingFunction(lambda n: n >= 2, argument=lambda s: len(s.events))
    assert counted.check(state(E("Alice"), E("Bob"))) is not None


def test_stopping_function_exceptions_propagate() -> None:
    def broken(statements: list) -> bool:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        StoppingFunction(broken).check(state(E("Alice")))
    with pytest.raises(ConversationValueError, match="callable"):
        StoppingFunction("not callable")  # type: ignore[arg-type]


SERIALIZABLE = [
    MaxTurns(20),
    MaxMessages(10),
    TextMention("DEAL", sources=("Bob",), case_sensitive=False),
    TokenBudget(max_prompt_tokens=1, max_total_tokens=9),
    External(),
    External("button"),
    AllAgreed(markers=("AGREE", "[OK]"), agents=("Alice",)),
    Supervisor("mod", signal="END"),
    ContestedEscalation(4, markers=("NO",)),
    Convergence(4, 0.75),
    MaxTurns(3) | TextMention("DEAL"),
    MaxTurns(3) & (TextMention("DEAL") | AllAgreed()),
]


@pytest.mark.parametrize("condition", SERIALIZABLE, ids=repr)
def test_round_trip(condition: TerminationCondition) -> None:
    data = condition.to_dict()
    restored = termination_from_dict(data)
    assert restored.to_dict() == data
    assert type(restored) is type(condition)
    if not isinstance(condition, External):
        assert restored == condition


@pytest.mark.parametrize(
    "condition",
    [
        StoppingFunction(bool),
        MaxTurns(3) | StoppingFunction(bool),
        MaxTurns(1) & StoppingFunction(bool),
    ],
    ids=["alone", "in |", "in &"],
)
def test_callables_cannot_be_serialized(condition: TerminationCondition) -> None:
    with pytest.raises(ConversationValueError, match="cannot be serialized"):
        condition.to_dict()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "vibes"}, "unknown termination kind 'vibes'"),
        ({"kind": "stopping_function"}, "cannot be serialized"),
        ({"kind": "max_turns", "max_turns": 3, "extra": 1}, "bad settings"),
        ({"kind": "max_turns", "max_turns": -3}, "max_turns"),
        ({"kind": "external", "colour": "red"}, "bad settings"),
        ({"kind": "any", "parts": []}, "parts"),
        ({"kind": "all"}, "parts"),
        ([1], "mapping"),
    ],
)
def test_from_dict_rejects(data: object, message: str) -> None:
    with pytest.raises(ConversationValueError, match=message):
        termination_from_dict(data)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: MaxTurns(-1), "max_turns"),
        (lambda: MaxTurns(True), "max_turns"),
        (lambda: MaxMessages(0), "max_messages"),
        (lambda: TextMention(""), "text"),
        (lambda: TextMention("x", sources=[""]), "sources"),
        (lambda: TokenBudget(), "at least one"),
        (lambda: TokenBudget(max_total_tokens=0), "max_total_tokens"),
    ],
)
def test_bad_configuration_names_the_field(make: object, field: str) -> None:
    with pytest.raises(ConversationValueError, match=field):
        make()  # type: ignore[operator]
