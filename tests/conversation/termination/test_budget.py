"""``Budget``: limits in tokens and dollars, the stop reason once reached, the words shown."""

from __future__ import annotations

import pytest

from conversation.exceptions import ConversationValueError
from conversation.termination.budget import Budget, Spend, format_dollars


@pytest.mark.parametrize(
    ("budget", "spent", "reason"),
    [
        (Budget(max_dollars=0.5), Spend(10, 0.49), None),
        (Budget(max_dollars=0.5), Spend(10, 0.5), "budget reached: $0.50 spent of $0.50"),
        (Budget(max_tokens=1000), Spend(999, 9.0), None),
        (Budget(max_tokens=1000), Spend(1234, 0), "budget reached: 1,234 tokens used of 1,000"),
        (Budget(1000, 0.5), Spend(2000, 0.6), "budget reached: $0.60 spent of $0.50"),
    ],
)
def test_reached(budget: Budget, spent: Spend, reason: str | None) -> None:
    assert budget.reached(spent) == reason


def test_an_experiment_says_so() -> None:
    reason = Budget(max_dollars=2).reached(Spend(0, 2.5), scope="experiment budget")
    assert reason == "experiment budget reached: $2.50 spent of $2.00"


def test_describe_and_small_amounts() -> None:
    budget = Budget(5000, 0.5)
    assert budget.describe() == "$0.50, 5,000 tokens"
    assert budget.describe(Spend(1200, 0.0031)) == "$0.0031 of $0.50, 1,200 of 5,000 tokens"
    assert format_dollars(0) == "$0.00" and format_dollars(0.00001234) == "$1.2e-05"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"max_dollars": float("nan")}, "max_dollars"),
        ({"max_dollars": "1"}, "max_dollars"),
        ({"tokens": 1}, "unknown field"),
        ([1], "must be a dict"),
    ],
)
def test_bad_budgets_name_the_field(data: object, field: str) -> None:
    with pytest.raises(ConversationValueError, match=field):
        Budget.from_dict(data)  # type: ignore[arg-type]


def test_round_trip_and_no_limit_is_none() -> None:
    assert Budget.from_dict(Budget(10, 0.25).to_dict()) == Budget(10, 0.25)
    assert Budget.from_dict({"max_tokens": None, "max_dollars": None}) is None
    assert Budget.from_dict(None) is None
