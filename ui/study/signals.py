"""The monitor's bot and AI-use signals (issue 34, DESIGN.md 12.8): each person's signals
summarised (``conversation.study.signal_summaries``: one column per ``SignalMeasure``), and the
study's preregistered exclusion rules applied as a filter (``exclusions``): who each rule
excludes, and by condition how many people there are with and without the exclusions.

Signals, not verdicts: nothing here acts on anyone, and the page says so.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from conversation.vocabulary import SignalMeasure

CONDITION_COLUMNS = ["condition", "people", "excluded", "people without exclusions"]
RULE_COLUMNS = ["rule", "excludes", "who"]


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def signals_frame(summaries: list[Any]) -> pd.DataFrame:
    """One row per present person: pseudonym, condition, seat, then each measure."""
    columns = ["pseudonym", "condition", "seat", *(str(m) for m in SignalMeasure)]
    return pd.DataFrame([s.row() for s in summaries], columns=columns)


def exclusion_frames(report: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The exclusion report as two tables: by condition (with and without the exclusions) and
    by rule."""
    by_condition = pd.DataFrame(
        [
            {
                "condition": condition,
                "people": counts["people"],
                "excluded": counts["excluded"],
                "people without exclusions": counts["people"] - counts["excluded"],
            }
            for condition, counts in report.by_condition.items()
        ],
        columns=CONDITION_COLUMNS,
    )
    by_rule = pd.DataFrame(
        [
            {"rule": rule, "excludes": len(names), "who": ", ".join(names)}
            for rule, names in report.by_rule.items()
        ],
        columns=RULE_COLUMNS,
    )
    return by_condition, by_rule


def signals_panel(db: Any, code: str) -> None:
    """The two tables, with what they are (and are not) for."""
    study = _study()
    st.caption(
        "Signals recorded by each person's page (never shown to them). Nothing is decided "
        "from them automatically: the exclusion rules below are a filter the analysis reports "
        "with and without."
    )
    st.dataframe(signals_frame(study.signal_summaries(db, code)), hide_index=True, width="stretch")
    report = study.exclusions(db, code)
    by_condition, by_rule = exclusion_frames(report)
    if by_rule.empty:
        st.caption("The definition has no exclusion rules (analysis.exclusions).")
    else:
        st.caption("The preregistered exclusion rules, by condition:")
        st.dataframe(by_condition, hide_index=True, width="stretch")
        st.caption("By rule:")
        st.dataframe(by_rule, hide_index=True, width="stretch")


__all__ = ["exclusion_frames", "signals_frame", "signals_panel"]
