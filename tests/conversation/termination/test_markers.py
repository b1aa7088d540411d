"""AllAgreed, Supervisor, ContestedEscalation and Convergence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.termination.base import TerminationCondition
from conversation.termination.markers import AllAgreed, ContestedEscalation, Convergence, Supervisor
from conversation.termination.state import RoomState

E = RoomEvent
ROSTER = ["Alice", "Bob"]


def state(*events: RoomEvent, roster: list[str] = ROSTER) -> RoomState:
    return RoomState(roster, list(events))


@pytest.mark.parametrize(
    ("condition", "room", "expected"),
    [
        (AllAgreed(), state(E("Alice", "I AGREE"), E("Bob", "AGREE.")), "all agreed (Alice, Bob)"),
        (AllAgreed(), state(E("Alice", "I AGREE")), None),  # Bob has not spoken
        (AllAgreed(), state(E("Alice", "AGREE"), E("Bob", "AGREE"), E("Alice", "wait, no")), None),
        (
            AllAgreed(),
            state(E("Alice", "AGREE"), E("Bob", "AGREE"), E("Alice", passed=True)),
            "all agreed (Alice, Bob)",
        ),
        (AllAgreed(), state(E("Alice", "DISAGREE"), E("Bob", "AGREEMENT?")), None),  # whole words
        (AllAgreed(), state(E("Alice", "agree"), E("Bob", "agree")), None),  # case-sensitive
        (
            AllAgreed(case_sensitive=False),
            state(E("Alice", "agree"), E("Bob", "Agree")),
            "all agreed (Alice, Bob)",
        ),
        (
            AllAgreed(markers=["[OK]"]),
            state(E("Alice", "[OK]"), E("Bob", "fine [OK]")),
            "all agreed (Alice, Bob)",
        ),
        (AllAgreed(agents=["Alice"]), state(E("Alice", "AGREE")), "all agreed (Alice)"),
        (AllAgreed(), state(E("Alice", "AGREE"), E("Bob", "AGREE"), E("user", "new topic")), None),
        (AllAgreed(), state(roster=[]), None),
        (
            Supervisor("mod"),
            state(E("Alice"), E("mod", "TERMINATE")),
            "mod signalled the end ('TERMINATE')",
        ),
        (Supervisor("mod"), state(E("mod", "TERMINATE"), E("Alice", "wait")), None),
        (Supervisor("mod"), state(E("Alice", "TERMINATE")), None),  # only supervisors
        (
            Supervisor(["mod", "Ann"]),
            state(E("Ann", "please TERMINATE")),
            "Ann signalled the end ('TERMINATE')",
        ),
        (
            Supervisor("mod"),
            state(E("mod", "TERMINATE", kind="system")),
            "mod signalled the end ('TERMINATE')",
        ),
        (
            Supervisor("mod"),
            state(E("mod", "TERMINATE"), E("mod", "a", kind="pick")),
            "mod signalled the end ('TERMINATE')",
        ),
        (
            Supervisor("mod", signal="END", case_sensitive=False),
            state(E("mod", "the end")),
            "mod signalled the end ('END')",
        ),
        (Supervisor("mod"), state(E("mod", "TERMINATE", passed=True)), None),
        (
            ContestedEscalation(2),
            state(E("Alice", "DISAGREE: price"), E("Bob", "I DISAGREE: Price!")),
            "contested: 'price' disputed 2 times in this activity; a person should decide",
        ),
        (
            ContestedEscalation(2),
            state(E("Alice", "DISAGREE: price"), E("Bob", "DISAGREE: date")),
            None,
        ),
        (
            ContestedEscalation(2),
            state(E("Alice", "DISAGREE"), E("Bob", "DISAGREE.")),
            "contested: 2 disagreements in this activity; a person should decide",
        ),
        (ContestedEscalation(2), state(E("Alice", "DISAGREE DISAGREE")), None),  # once per message
        (
            ContestedEscalation(2),
            state(E("Alice", "DISAGREE"), E("user", "x"), E("Bob", "DISAGREE")),
            None,
        ),
        (
            Convergence(2),
            state(E("Alice", "We should sell."), E("Bob", "we  should sell")),
            "converged: the last 2 messages are near-duplicates (similarity >= 0.9)",
        ),
        (
            Convergence(2),
            state(E("Alice", "We should sell."), E("Bob", "Never, we keep it.")),
            None,
        ),
        (Convergence(3), state(E("Alice", "same"), E("Bob", "same")), None),  # too few
        (Convergence(2), state(E("Alice", "same"), E("user", "same"), E("Bob", "other")), None),
        (
            Convergence(2),
            state(E("Alice", "same"), E("Bob", passed=True), E("Bob", "same")),
            "converged: the last 2 messages are near-duplicates (similarity >= 0.9)",
        ),
    ],
)
def test_table(condition: TerminationCondition, room: RoomState, expected: str | None) -> None:
    assert condition.check(room) == expected


def test_contested_escalates_others_do_not() -> None:
    room = state(E("Alice", "DISAGREE"), E("Bob", "DISAGREE"))
    decision = ContestedEscalation(2).evaluate(room)
    assert decision is not None and decision.escalate
    assert ContestedEscalation(2).points(room) == {"": 2}
    agreed = AllAgreed().evaluate(state(E("Alice", "AGREE"), E("Bob", "AGREE")))
    assert agreed is not None and not agreed.escalate


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: AllAgreed(markers=()), "markers"),
        (lambda: AllAgreed(agents=[""]), "agents"),
        (lambda: Supervisor(None), "supervisors"),  # type: ignore[arg-type]
        (lambda: Supervisor("mod", signal=""), "signal"),
        (lambda: ContestedEscalation(1), "repeats"),
        (lambda: Convergence(1), "window"),
        (lambda: Convergence(3, 0), "threshold"),
        (lambda: Convergence(3, 1.5), "threshold"),
        (lambda: Convergence(3, True), "threshold"),
    ],
)
def test_bad_configuration(make: object, field: str) -> None:
    with pytest.raises(ConversationValueError, match=field):
        make()  # type: ignore[operator]


@given(st.lists(st.text(alphabet="ab ", max_size=12), min_size=3, max_size=6))
def test_convergence_fires_iff_every_pair_is_similar(texts: list[str]) -> None:
    from difflib import SequenceMatcher

    events = [E(ROSTER[i % 2], t) for i, t in enumerate(texts)]
    last = [" ".join(t.casefold().split()) for t in texts[-3:]]
    similar = all(
        SequenceMatcher(None, x, y, autojunk=False).ratio() >= 0.9
        for i, x in enumerate(last)
        for y in last[i + 1 :]
    )
    assert (Convergence(3).check(state(*events)) is not None) == similar
