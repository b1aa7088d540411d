"""TransitionRules: allowed / disallowed next speakers."""

from __future__ import annotations

import pytest

from conversation.exceptions import ConversationValueError
from conversation.planning.transitions import TransitionRules, transitions_from_dict

ALLOWED = TransitionRules({"A": ["B"], "B": ["A", "C"]})
DISALLOWED = TransitionRules({"A": ["B"]}, mode="disallowed")


@pytest.mark.parametrize(
    ("rules", "previous", "candidate", "expected"),
    [
        (ALLOWED, "A", "B", True),
        (ALLOWED, "A", "C", False),
        (ALLOWED, "A", "A", False),
        (ALLOWED, "B", "C", True),
        (ALLOWED, "C", "A", True),  # no entry: unconstrained
        (ALLOWED, None, "C", True),  # nobody spoke yet
        (ALLOWED, "user", "C", True),
        (DISALLOWED, "A", "B", False),
        (DISALLOWED, "A", "C", True),
        (DISALLOWED, "B", "B", True),
    ],
)
def test_permits_table(
    rules: TransitionRules, previous: str | None, candidate: str, expected: bool
) -> None:
    assert rules.permits(previous, candidate) is expected


def test_filter_keeps_order() -> None:
    assert ALLOWED.filter("B", ["C", "B", "A"]) == ["C", "A"]


def test_equal_whatever_the_input_order_and_round_trip() -> None:
    other = TransitionRules({"B": ("C", "A"), "A": ["B", "B"]})
    assert other.as_dict() == {"A": ["B"], "B": ["C", "A"]}
    assert hash(TransitionRules({"A": ["B"]})) == hash(TransitionRules({"A": ["B"]}))
    assert transitions_from_dict(ALLOWED.to_dict()) == ALLOWED
    assert transitions_from_dict(DISALLOWED.to_dict()) == DISALLOWED
    assert transitions_from_dict(None) is None


@pytest.mark.parametrize(
    ("graph", "mode", "field"),
    [
        ({"A": ["B"]}, "sometimes", "mode"),
        ([("A", ["B"])], "allowed", "graph"),
        ({"A": "B"}, "allowed", "graph"),
        ({"": ["B"]}, "allowed", "keys"),
        ({"A": [1]}, "allowed", "graph"),
    ],
)
def test_bad_rules(graph: object, mode: str, field: str) -> None:
    with pytest.raises(ConversationValueError, match=field):
        TransitionRules(graph, mode)  # type: ignore[arg-type]


def test_check_names_targets_off_the_roster() -> None:
    ALLOWED.check(["A", "B", "C"])
    with pytest.raises(ConversationValueError, match="'C'"):
        ALLOWED.check(["A", "B"])


@pytest.mark.parametrize("data", [{"mode": "allowed"}, {"graph": {}, "extra": 1}, ["x"]])
def test_bad_dicts(data: object) -> None:
    with pytest.raises(ConversationValueError):
        transitions_from_dict(data)  # type: ignore[arg-type]
