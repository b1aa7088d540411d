"""A study's exports (Results page and the study monitor): participants, transcripts with seat
and participant columns, the study's log, the surveys as EDSL Results, and the recruitment ids
for payment in a file of their own (never in the other files).

Each file is built when its button is clicked (a deferred download), not on every page run.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pandas as pd
import streamlit as st

from ui.widgets import escape_markdown


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def _csv(rows: list[dict[str, Any]]) -> str:
    frame = pd.DataFrame(rows)
    for column in frame.columns:  # nested values (labels, answers) as JSON text
        if frame[column].map(lambda v: isinstance(v, dict | list)).any():
            frame[column] = frame[column].map(
                lambda v: json.dumps(v, default=str) if isinstance(v, dict | list) else v
            )
    return frame.to_csv(index=False)


def _surveys(db: Any, code: str, which: str) -> str:
    results = _study().survey_results(db, code, which)
    return results.to_pandas().to_csv(index=False)


def study_exports(db: Any, code: str) -> None:
    """Download buttons for the study ``code``."""
    study = _study()
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        "Participants (CSV)",
        lambda: _csv(study.participants_table(db, code)),
        file_name=f"study-{code}-participants.csv",
        mime="text/csv",
        key=f"study-export-participants-{code}",
        on_click="ignore",
    )
    c2.download_button(
        "Transcripts (CSV)",
        lambda: _csv(study.transcripts_table(db, code)),
        file_name=f"study-{code}-transcripts.csv",
        mime="text/csv",
        key=f"study-export-transcripts-{code}",
        on_click="ignore",
    )
    c3.download_button(
        "Study log (JSON)",
        lambda: json.dumps(study.study_events_table(db, code), default=str, indent=1),
        file_name=f"study-{code}-log.json",
        mime="application/json",
        key=f"study-export-log-{code}",
        on_click="ignore",
    )
    c4, c5, c6 = st.columns(3)
    for column, which, label in (
        (c4, "pre", "Pre-survey as EDSL Results (CSV)"),
        (c5, "post", "Post-survey as EDSL Results (CSV)"),
    ):
        answered = study.survey_answers(db, code, which)
        column.download_button(
            label,
            functools.partial(_surveys, db, code, which),
            file_name=f"study-{code}-{which}-survey.csv",
            mime="text/csv",
            key=f"study-export-{which}-{code}",
            on_click="ignore",
            disabled=not answered,
            help=None if answered else "Nobody has answered this survey yet.",
        )
        if not answered:
            column.caption("Nobody has answered this survey yet.")
    c6.download_button(
        "Recruitment ids, for payment (CSV)",
        lambda: _csv(study.recruitment_table(db, code)),
        file_name=f"study-{code}-recruitment.csv",
        mime="text/csv",
        key=f"study-export-recruitment-{code}",
        on_click="ignore",
        help="PROLIFIC_PID and the exit codes, for paying participants. Keep this file apart: "
        "no other export holds these ids.",
    )


def study_exports_panel(db: Any) -> None:
    """The Results page's panel: pick a study (the monitor's picker), then its exports."""
    from ui.study.picker import pick_study

    code, hint = pick_study(db, key="results-study")
    if not code.strip():
        st.caption(escape_markdown(hint))
        return
    try:
        _study().get_study(db, code.strip())
    except (LookupError, ValueError):
        st.error("There is no study with this code.")
        return
    study_exports(db, code.strip())


__all__ = ["study_exports", "study_exports_panel"]
