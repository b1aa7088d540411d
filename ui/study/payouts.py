"""The monitor's payouts (issue 33): each present person's payout under the definition's
``[payouts]`` (``conversation.study.payouts.study_payouts``: base, each bonus, waiting pay, the
cap, total, the part paid as a Prolific bonus), the study's totals, and Prolific's bulk bonus
file (``prolific_bonus_csv``: one ``PROLIFIC_PID,amount`` line per person with a bonus) to
download. Amounts are shown as money is written (two decimals, ``amount_text``); nothing here
pays anyone.

The table carries each person's PROLIFIC_PID (paying is what it is for), as the recruitment
export does; the monitor's other tables carry pseudonyms only.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from ui.widgets import escape_markdown

FIXED_COLUMNS = ["participant", "PROLIFIC_PID", "exit", "base"]
TAIL_COLUMNS = ["waiting", "cap", "total", "paid as bonus"]


def _payouts():  # type: ignore[no-untyped-def]
    from conversation.study import payouts

    return payouts


def payouts_frame(report: Any) -> pd.DataFrame:
    """One row per person: base, one column per bonus (blank: its answer is not known yet),
    waiting, what the cap took off, total and the bonus part."""
    payouts = _payouts()
    text = payouts.amount_text
    skip = {payouts.BASE, payouts.WAITING, payouts.CAP}
    bonuses: list[str] = []
    for person in report.people:
        for line in person.lines:
            if line.name not in skip and line.label not in bonuses:
                bonuses.append(line.label)
    rows = []
    for person in report.people:
        amounts = {line.label: line.amount for line in person.lines if line.name not in skip}
        waiting = person.amount_of(payouts.WAITING)
        rows.append(
            {
                "participant": person.pseudonym,
                "PROLIFIC_PID": person.recruitment_id or "",
                "exit": person.exit_status or "",
                "base": text(person.base),
                **{b: "" if amounts.get(b) is None else text(amounts[b]) for b in bonuses},
                "waiting": "" if waiting is None else text(waiting),
                "cap": text(-person.capped) if person.capped else "",
                "total": text(person.total),
                "paid as bonus": text(person.bonus),
            }
        )
    return pd.DataFrame(rows, columns=[*FIXED_COLUMNS, *bonuses, *TAIL_COLUMNS])


def payouts_panel(db: Any, code: str) -> None:
    """The table, the totals and the bulk bonus file; a study without ``[payouts]`` says so."""
    payouts = _payouts()
    report = payouts.study_payouts(db, code)
    if report is None:
        st.caption("This study's definition has no [payouts] section.")
        return
    st.dataframe(payouts_frame(report), hide_index=True, width="stretch")
    st.text(
        f"Total: {payouts.amount_text(report.total)} {report.currency} for "
        f"{len(report.people)} person(s); paid as Prolific bonuses: "
        f"{payouts.amount_text(report.bonus_total)} {report.currency}"
    )
    st.caption(
        f"Amounts in {escape_markdown(report.currency)}. A bonus whose answer is not known yet (an analysis run after "
        "the study) is blank and counts 0 until it is."
    )
    st.download_button(
        "Prolific bulk bonus file (CSV)",
        lambda: payouts.prolific_bonus_csv(db, code),
        file_name=f"study-{code}-bonuses.csv",
        mime="text/csv",
        key=f"payouts-bonus-csv-{code}",
        on_click="ignore",
        help="One PROLIFIC_PID,amount line per person with a bonus, for Prolific's bulk bonus "
        "payment; the base is paid as the study's reward.",
    )


__all__ = ["payouts_frame", "payouts_panel"]
