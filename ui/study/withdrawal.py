"""Withdrawal as the researcher's act (a person asked the researcher to withdraw them): pick
the person, give a reason, confirm; ``conversation.study.withdraw_participant`` deletes their
data by the study's rule (docs/studies.md, "Withdrawal") and keeps an audit note. The audit
list shows who asked, when, the rule and the counts: never the content (there is none left).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from conversation.vocabulary import ExitStatus, StudyEventKind
from ui.study.acting import act, refuse

AUDIT_COLUMNS = ["at", "asked by", "reason", "messages", "agent turns", "messages rule"]


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def audit_frame(log: list[dict[str, Any]]) -> pd.DataFrame:
    """The study log's withdrawal notes, oldest first."""
    return pd.DataFrame(
        [
            {
                "at": e["at"],
                "asked by": (e["data"] or {}).get("by"),
                "reason": (e["data"] or {}).get("reason") or "",
                "messages": (e["data"] or {}).get("messages"),
                "agent turns": (e["data"] or {}).get("agent_turns"),
                "messages rule": (e["data"] or {}).get("rule"),
            }
            for e in log
            if e["kind"] == StudyEventKind.DATA_DELETED
        ],
        columns=AUDIT_COLUMNS,
    )


def report_line(report: Any) -> str:
    """What a withdrawal did, in one line (counts only)."""
    if not report.withdrawn:
        return f"{report.pseudonym} had withdrawn already: nothing changed."
    return (
        f"{report.pseudonym} withdrawn: {report.messages} message(s) replaced or removed, "
        f"{report.agent_turns} agent turn(s) redacted, {report.signals} signal record(s), "
        f"{report.answers} follow-up answer(s) and {report.cache_entries} model cache "
        "entry(ies) deleted or redacted."
    )


def withdrawal_controls(
    db: Any, code: str, actor: Any, monitor: Any, log: list[dict[str, Any]]
) -> None:
    """The form (a person of ``monitor`` who has not withdrawn, a reason, the confirmation),
    then the audit list (from ``log``: the study's, ``study_events_table``)."""
    study = _study()
    rows = [r for r in monitor.rows if r.exit_status != ExitStatus.WITHDRAWN]
    if rows:
        names = {r.participant_id: f"{r.pseudonym} ({r.where})" for r in rows}
        with st.form("monitor-withdraw"):
            picked = st.selectbox(
                "Participant to withdraw",
                list(names),
                format_func=lambda p: names[p],
                key="withdraw-who",
            )
            reason = st.text_input(
                "Reason (recorded in the audit list)", max_chars=500, key="withdraw-reason"
            )
            sure = st.checkbox(
                "Yes, withdraw this person: their messages, survey answers, recruitment id and "
                "signals are deleted for good",
                key="withdraw-sure",
            )
            submitted = st.form_submit_button("Withdraw the participant")
        if submitted:
            if not sure:
                refuse("Tick the confirmation first: nothing was withdrawn.")
            else:
                act(
                    lambda: study.withdraw_participant(
                        db, code, int(picked), reason=reason.strip(), actor=actor
                    ),
                    report_line,
                )
    else:
        st.caption("Nobody to withdraw.")
    st.caption("Withdrawals so far (who asked, when, counts; never the content):")
    st.dataframe(audit_frame(log), hide_index=True, width="stretch")


__all__ = ["AUDIT_COLUMNS", "audit_frame", "report_line", "withdrawal_controls"]
