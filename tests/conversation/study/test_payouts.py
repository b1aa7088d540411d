"""Payouts (issue 33) through the public API: each line from its source (an analysis answer,
a survey answer, minutes in the lobby), the cap, Decimal amounts rounded once, the exit page's
earnings, Prolific's bulk bonus file (same inputs, same file) and withdrawn people left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

import storage
from conversation import study as S
from conversation.rooms.room import Room
from conversation.study.definition.payouts import PayoutsIn
from conversation.study.payouts.money import Person, person_payout
from tests.conversation.study.helpers import launched, to_lobby

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RULES: dict[str, Any] = {
    "currency": "GBP",
    "base": 1.5,
    "waiting_per_minute": 0.1,
    "cap": 5,
    "bonuses": [
        # 0.50 per unit of the agreed price, at most 3.00: a price of 7 pays 3.00.
        {"name": "deal", "source": "analysis", "question": "price", "per_unit": 0.5, "max": 3},
        {"name": "satisfied", "source": "post_survey", "question": "satisfaction", "per_unit": 0.1},
        {
            "name": "experience",
            "source": "pre_survey",
            "question": "bargained_before",
            "table": {"yes": 0.25, "no": 0.05},
        },
    ],
}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _finished(db: Any, rules: dict[str, Any] | None = RULES, *, price: Any = 7) -> tuple:
    """Two people wait 90 s in the lobby, bargain, answer the post-survey; the analysis
    ``price`` answered ``price`` about their room (None: not asked)."""
    clock = Clock()
    db.clock = clock
    study = launched(db, **({"payouts": rules} if rules is not None else {}))
    a, b = (to_lobby(db, study.code, pid) for pid in ("PID-A", "PID-B"))
    clock.now = T0 + timedelta(seconds=90)
    for t in (a, b):
        S.heartbeat(db, t.token)
    S.tick(db, study.code)
    room_id = S.participant_view(db, a.token).room_id or 0
    assert room_id
    S.post_as_participant(db, a.token, "I offer $5")
    Room(db, room_id).run(2)
    clock.now += timedelta(seconds=601)
    for t in (a, b):
        S.heartbeat(db, t.token)
    S.tick(db, study.code)
    for t in (a, b):
        S.answer_survey(db, t.token, {"satisfaction": 5, "mediator_opinion": "fine"})
    if price is not None:
        spec = {"type": "numerical", "name": "price", "text": "The agreed price? {{ transcript }}"}
        analysis = storage.create_analysis(
            db, "price", spec, experiment_id=study.experiment_id, room_ids=[room_id]
        )
        storage.record_answer(db, analysis, room_id, price)
    return study, a, b


def test_each_line_comes_from_its_source_and_the_cap_bounds_the_total(db) -> None:  # type: ignore[no-untyped-def]
    study, a, _ = _finished(db)
    report = S.study_payouts(db, study.code)
    assert report is not None and report.currency == "GBP"
    assert [p.recruitment_id for p in report.people] == ["PID-A", "PID-B"]
    person = report.people[0]
    assert person.pseudonym == a.pseudonym and person.exit_status == "completed"
    amounts = {line.name: line.amount for line in person.lines}
    assert amounts == {
        "base": Decimal("1.50"),
        "deal": Decimal("3.00"),  # 0.5 * 7 = 3.50, bounded by max 3
        "satisfied": Decimal("0.50"),
        "experience": Decimal("0.05"),  # answered "no"
        "waiting": Decimal("0.15"),  # 90 s at 0.10 a minute
        "cap": Decimal("-0.20"),  # 5.20 capped at 5
    }
    deal = next(line for line in person.lines if line.name == "deal")
    assert (deal.source, deal.answer) == ("analysis", 7)
    assert person.total == Decimal("5.00") and person.capped == Decimal("0.20")
    assert person.bonus == Decimal("3.50")  # everything but the base
    assert person.waited_seconds == 90.0
    assert report.total == Decimal("10.00")


def test_the_bonus_file_is_prolifics_format_and_the_same_for_the_same_data(db, db_url) -> None:  # type: ignore[no-untyped-def]
    study, _, _ = _finished(db)
    text = S.prolific_bonus_csv(db, study.code)
    assert text == "PID-A,3.50\nPID-B,3.50\n"
    again = storage.Database(db_url)
    try:
        assert S.prolific_bonus_csv(again, study.code) == text
    finally:
        again.dispose()


def test_the_exit_page_shows_the_earnings_and_a_missing_answer_as_to_come(db) -> None:  # type: ignore[no-untyped-def]
    study, a, _ = _finished(db, price=None)
    earnings = S.participant_view(db, a.token).exit.earnings
    assert earnings is not None and earnings.currency == "GBP"
    lines = dict(earnings.lines)
    assert lines["Bonus: deal"] is None  # the analysis has not answered yet: counted 0
    assert earnings.total == Decimal("2.20")  # 1.50 + 0.50 + 0.05 + 0.15, under the cap
    assert S.prolific_bonus_csv(db, study.code) == "PID-A,0.70\nPID-B,0.70\n"


def test_a_study_without_payouts_has_no_earnings_and_an_empty_file(db) -> None:  # type: ignore[no-untyped-def]
    study, a, _ = _finished(db, None, price=None)
    assert S.participant_view(db, a.token).exit.earnings is None
    assert S.study_payouts(db, study.code) is None
    assert S.prolific_bonus_csv(db, study.code) == ""


def test_withdrawn_people_are_left_out(db) -> None:  # type: ignore[no-untyped-def]
    study, a, _ = _finished(db)
    S.withdraw(db, a.token)
    report = S.study_payouts(db, study.code)
    assert report is not None
    assert [p.recruitment_id for p in report.people] == ["PID-B"]
    assert S.prolific_bonus_csv(db, study.code) == "PID-B,3.50\n"


def test_someone_who_left_from_the_lobby_is_paid_their_wait_only(db) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    db.clock = clock
    study = launched(db, payouts=RULES, lobby={"timeout_seconds": 60, "on_timeout": "home"})
    token = to_lobby(db, study.code, "PID-C")
    clock.now = T0 + timedelta(seconds=61)
    S.heartbeat(db, token.token)
    S.tick(db, study.code)
    view = S.participant_view(db, token.token)
    assert view.exit is not None and view.exit.status == "lobby_timeout"
    assert view.exit.earnings is not None
    assert list(view.exit.earnings.lines) == [("Waiting in the lobby", Decimal("0.10"))]
    assert S.prolific_bonus_csv(db, study.code) == "PID-C,0.10\n"


def _person(**changes: Any) -> Person:
    values: dict[str, Any] = {
        "pseudonym": "p1",
        "recruitment_id": "PID",
        "seat": "Buyer",
        "exit_status": "completed",
        "lobby_at": T0,
        "assigned_at": T0,
        "finished_at": T0,
    }
    return Person(**{**values, **changes})


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(30, "0.13"), (29.9, "0.12"), (0, "0.00")],  # 0.125 rounds half up, once
)
def test_an_amount_is_rounded_once_half_up(seconds: float, expected: str) -> None:
    rules = PayoutsIn.model_validate({"waiting_per_minute": 0.25})
    payout = person_payout(rules, _person(assigned_at=T0 + timedelta(seconds=seconds)))
    assert payout.amount_of("waiting") == Decimal(expected)


def test_amounts_are_decimals_of_the_written_values() -> None:
    """0.1 + 0.2 is 0.30 (a float sum would be 0.30000000000000004), and a bonus for seats
    other than the person's is not theirs."""
    rules = PayoutsIn.model_validate(
        {
            "base": 0.1,
            "bonuses": [
                {"name": "a", "source": "post_survey", "question": "x", "per_unit": 0.2},
                {
                    "name": "b",
                    "source": "post_survey",
                    "question": "x",
                    "per_unit": 1,
                    "seats": ["Seller"],
                },
            ],
        }
    )
    payout = person_payout(rules, _person(post_survey={"x": 1}))
    assert payout.total == Decimal("0.30") and [line.name for line in payout.lines] == ["base", "a"]
    unpaid = person_payout(rules, _person(exit_status="dropped", post_survey={"x": 1}))
    assert unpaid.lines == () and unpaid.total == Decimal("0.00")


def test_the_exports_carry_the_payouts(db) -> None:  # type: ignore[no-untyped-def]
    study, a, _ = _finished(db)
    pay = {
        r["PROLIFIC_PID"]: (r["payout"], r["bonus"]) for r in S.recruitment_table(db, study.code)
    }
    assert pay == {"PID-A": ("5.00", "3.50"), "PID-B": ("5.00", "3.50")}
    rows = [r for r in S.payouts_table(db, study.code) if r["pseudonym"] == a.pseudonym]
    assert [(r["line"], r["amount"]) for r in rows] == [
        ("base", "1.50"),
        ("deal", "3.00"),
        ("satisfied", "0.50"),
        ("experience", "0.05"),
        ("waiting", "0.15"),
        ("cap", "-0.20"),
    ]
    assert {r["currency"] for r in rows} == {"GBP"}
    assert "PID-A" not in repr(S.payouts_table(db, study.code))


def test_without_payouts_the_exports_say_none(db) -> None:  # type: ignore[no-untyped-def]
    study, _, _ = _finished(db, None, price=None)
    assert {r["payout"] for r in S.recruitment_table(db, study.code)} == {None}
    assert S.payouts_table(db, study.code) == []
