"""The monitor's Payouts panel through AppTest: each person's base, bonus and total under the
definition's [payouts], the study's totals, Prolific's bulk bonus file offered; a study without
[payouts] says so."""

from __future__ import annotations

import pytest

from conversation import study
from storage import Database
from tests.app.study_support import in_lobby, launch, page, texts

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PAYOUTS = {
    "currency": "GBP",
    "base": 1.5,
    "bonuses": [
        {
            "name": "experience",
            "source": "pre_survey",
            "question": "bargained_before",
            "table": {"yes": 0.25, "no": 0.05},
        }
    ],
}


def monitor(code: str):  # type: ignore[no-untyped-def]
    at = page("pages/study_monitor.py", study=code)
    assert not at.exception, at.exception
    return at


def test_the_payouts_table_totals_and_the_bonus_file(db: Database) -> None:
    found = launch(db, payouts=PAYOUTS)
    ana = in_lobby(db, found.code, PROLIFIC_PID="PIDANA")
    bo = in_lobby(db, found.code, PROLIFIC_PID="PIDBO")
    study.tick(db, found.code)
    (group,) = study.study_monitor(db, found.code).groups
    study.end_conversation(db, found.code, group.group_id)
    study.answer_survey(db, ana, {"satisfaction": 4, "mediator_opinion": "**fine**"})
    at = monitor(found.code)
    payouts = next(d.value for d in at.dataframe if "paid as bonus" in d.value.columns)
    rows = payouts.set_index("PROLIFIC_PID")
    assert rows.loc["PIDANA", "total"] == "1.75" and rows.loc["PIDANA", "base"] == "1.50"
    assert rows.loc["PIDANA", "Bonus: experience"] == "0.25"
    assert rows.loc["PIDANA", "paid as bonus"] == "0.25"
    assert rows.loc["PIDBO", "total"] == "0.00"  # still at the post-survey: not paid yet
    assert "Total: 1.75 GBP for 2 person(s); paid as Prolific bonuses: 0.25 GBP" in texts(at)
    [button] = [
        b for b in at.get("download_button") if b.proto.label == "Prolific bulk bonus file (CSV)"
    ]
    assert not button.proto.disabled
    assert study.participant_view(db, bo).exit is None


def test_a_study_without_payouts_says_so(db: Database) -> None:
    found = launch(db)
    at = monitor(found.code)
    assert "This study's definition has no [payouts] section." in texts(at)
    assert not [d for d in at.dataframe if "paid as bonus" in d.value.columns]
