"""A study's preregistration in the monitor (issue 34, DESIGN.md 12.6; the editor's *Freeze*
is ``ui.study.editor``'s): whether the study is frozen, the hash it was
launched with and the one in force, every amendment (number, when, who, why, the fields it
changed), and the form that edits the definition: without a reason only operational fields may
change (``update_definition`` refuses a frozen field, naming it); with a reason it is an
amendment (``amend_study``).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from ui.study.acting import act, refuse

AMEND_TEXT_KEY = "amend-definition"
AMENDMENT_COLUMNS = ["number", "at", "by", "reason", "changes", "version", "bundle hash"]


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def amendments_frame(amendments: list[Any]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "number": a.number,
                "at": a.at,
                "by": a.by,
                "reason": a.reason,
                "changes": ", ".join(a.changes),
                "version": a.version,
                "bundle hash": a.bundle_hash,
            }
            for a in amendments
        ],
        columns=AMENDMENT_COLUMNS,
    )


def preregistration_panel(db: Any, code: str, actor: Any) -> None:
    """Frozen or not, the hashes, the amendments, then the edit/amend form."""
    record = _study().study_preregistration(db, code)
    if record.frozen:
        st.text(f"Frozen: launched from bundle {record.launched_hash}")
        if record.bundle_hash != record.launched_hash:
            st.text(f"In force after its amendments: bundle {record.bundle_hash}")
        st.caption("Amendments (every export and package lists them):")
        st.dataframe(amendments_frame(record.amendments), hide_index=True, width="stretch")
    else:
        st.text("Not frozen: this study was launched without a preregistration bundle.")
    amend_form(db, code, actor, frozen=record.frozen)


def definition_text(db: Any, code: str) -> str:
    """The definition in force, as JSON the editor and the form read."""
    from conversation.study.record import study_definition

    study = _study()
    return json.dumps(
        study_definition(db, study.get_study(db, code)).to_dict(), indent=2, ensure_ascii=False
    )


def amend_form(db: Any, code: str, actor: Any, *, frozen: bool) -> None:
    """Edit the definition in force. A frozen study: a reason makes it an amendment; without
    one, a change of a frozen field is refused (nothing is stored)."""
    from ui.study.editor import validate

    study = _study()
    key = f"{AMEND_TEXT_KEY}-{code}"
    st.session_state.setdefault(key, definition_text(db, code))
    with st.form(f"monitor-amend-{code}"):
        text = st.text_area("The definition in force (JSON)", key=key, height=300)
        reason = ""
        if frozen:
            reason = st.text_area(
                "Reason for the amendment (needed to change a frozen field)",
                key=f"amend-reason-{code}",
                max_chars=4000,
            )
        label = "Save the change" if not frozen else "Amend (with the reason) or save"
        if not st.form_submit_button(label):
            return
    definition, problem = validate(text)
    if problem is not None:
        refuse("The definition is not valid:")
        st.code(problem, language=None, wrap_lines=True)
        return
    if reason.strip():
        act(
            lambda: study.amend_study(db, code, definition, reason=reason.strip(), actor=actor),
            lambda made: f"Amendment {made.number} stored: {', '.join(made.changes)}.",
        )
    else:
        act(
            lambda: study.update_definition(db, code, definition, actor=actor),
            lambda saved: f"Saved as definition version {saved.version}.",
        )


__all__ = [
    "amend_form",
    "amendments_frame",
    "definition_text",
    "preregistration_panel",
]
