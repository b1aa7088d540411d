"""The exit page's earnings as the page receives them (issue 33): amounts as two-decimal text,
a line still to come as null, nothing when the study has no payouts."""

from __future__ import annotations

from decimal import Decimal

from conversation.study import Earnings
from ui.participant.wire import earnings_json


def test_earnings_are_sent_as_text_with_two_decimals() -> None:
    earnings = Earnings(
        "GBP",
        Decimal("2.5"),
        (
            ("Base payment", Decimal("2.00")),
            ("Waiting in the lobby", Decimal("0.5")),
            ("Bonus: deal", None),
        ),
    )
    assert earnings_json(earnings) == {
        "currency": "GBP",
        "total": "2.50",
        "lines": [
            {"label": "Base payment", "amount": "2.00"},
            {"label": "Waiting in the lobby", "amount": "0.50"},
            {"label": "Bonus: deal", "amount": None},
        ],
    }
    assert earnings_json(None) is None
