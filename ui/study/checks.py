"""The monitor's checks: send an attention check to a person or to a whole room (the popup on
their page, ``conversation.study.send_attention_check``), and what came of every check so far:
the attention checks put (by the researcher or the definition's schedule) with their answers or
misses, and each try at a survey's comprehension checks.

Everything is read from the study's log (``study_events_table``: people who withdrew are left
out) and drawn in dataframes: a question, an answer or a reason is a person's text, never
markdown.
"""

from __future__ import annotations

import secrets
from typing import Any

import pandas as pd
import streamlit as st

from conversation.study.definition.rules import OnCheckFail
from conversation.vocabulary import ParticipantStage, StudyEventKind
from ui.study.acting import act, refuse

#: A check sent from the monitor is named after when it was sent (the name is in the log).
SENT_PREFIX = "monitor"
ATTENTION_COLUMNS = [
    "participant",
    "sent at",
    "by",
    "check",
    "question",
    "outcome",
    "answer",
    "seconds",
    "on fail",
]
ATTEMPT_COLUMNS = ["participant", "at", "survey", "try", "wrong", "answers"]
WAITING, RIGHT, WRONG, MISSED = "waiting", "right", "wrong", "missed"


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def attention_frame(log: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per attention check put (oldest first) with its outcome: ``right``, ``wrong``,
    ``missed`` or still ``waiting``."""
    rows = []
    for entry in log:
        if entry["kind"] != StudyEventKind.ATTENTION_CHECK:
            continue
        data = entry["data"] or {}
        outcome = _outcome_of(log, entry)
        rows.append(
            {
                "participant": entry["pseudonym"],
                "sent at": entry["at"],
                "by": data.get("by"),
                "check": data.get("name"),
                "question": data.get("question_text"),
                "outcome": _word(outcome),
                "answer": outcome.get("answer"),
                "seconds": outcome.get("seconds"),
                "on fail": data.get("on_fail"),
            }
        )
    return pd.DataFrame(rows, columns=ATTENTION_COLUMNS)


def _outcome_of(log: list[dict[str, Any]], sent: dict[str, Any]) -> dict[str, Any]:
    """The answer or miss recorded after ``sent`` for the same person and check name (the
    log's rows carry no entry id to match the answer's ``check_id`` with; a check's name is
    unique per person: the schedule's are, and the monitor's carry a random part)."""
    name = (sent["data"] or {}).get("name")
    after = False
    for entry in log:
        if entry is sent:
            after = True
            continue
        if not after or entry["pseudonym"] != sent["pseudonym"]:
            continue
        data = entry["data"] or {}
        if entry["kind"] == StudyEventKind.ATTENTION_CHECK and data.get("name") == name:
            return {}  # the same check put again before an answer: this one is unsettled
        if (
            entry["kind"] in (StudyEventKind.ATTENTION_ANSWERED, StudyEventKind.ATTENTION_MISSED)
            and data.get("name") == name
        ):
            return {"kind": entry["kind"], **data}
    return {}


def _word(outcome: dict[str, Any]) -> str:
    if not outcome:
        return WAITING
    if outcome["kind"] == StudyEventKind.ATTENTION_MISSED:
        return MISSED
    return RIGHT if outcome.get("right") else WRONG


def attempts_frame(log: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per try at a survey's comprehension checks."""
    return pd.DataFrame(
        [
            {
                "participant": e["pseudonym"],
                "at": e["at"],
                "survey": (e["data"] or {}).get("survey"),
                "try": (e["data"] or {}).get("attempt"),
                "wrong": ", ".join(map(str, (e["data"] or {}).get("wrong") or [])) or "none",
                "answers": ", ".join(
                    f"{k}: {v}" for k, v in ((e["data"] or {}).get("answers") or {}).items()
                ),
            }
            for e in log
            if e["kind"] == StudyEventKind.CHECK_ATTEMPT
        ],
        columns=ATTEMPT_COLUMNS,
    )


def check_tables(log: list[dict[str, Any]]) -> None:
    """The attention checks put and the comprehension-check tries, as tables (``log``: the
    study's, ``study_events_table``)."""
    st.caption("Attention checks put (by you or the definition's schedule), oldest first:")
    st.dataframe(attention_frame(log), hide_index=True, width="stretch")
    st.caption("Tries at the surveys' comprehension checks:")
    st.dataframe(attempts_frame(log), hide_index=True, width="stretch")


def options_of(text: str) -> list[str]:
    """The choices typed one per line (blank lines ignored)."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def send_controls(db: Any, code: str, actor: Any, monitor: Any) -> None:
    """The form: to whom (a person in a room, or everyone in a room, as ``monitor`` saw them),
    the question, its choices, the right one, the time to answer and what a failure does."""
    study = _study()
    rows = [r for r in monitor.rows if r.stage == ParticipantStage.ROOM]
    if not rows:
        st.caption("Nobody is in a room: an attention check goes to people in a room.")
        return
    people = {f"person:{r.participant_id}": f"{r.pseudonym} (room {r.room_id})" for r in rows}
    rooms = {
        f"room:{room}": f"everyone in room {room}"
        for room in sorted({r.room_id for r in rows if r.room_id is not None})
    }
    targets = {**rooms, **people}
    with st.form("monitor-attention"):
        target = st.selectbox(
            "Send to", list(targets), format_func=lambda t: targets[t], key="attention-to"
        )
        question = st.text_area("Question", key="attention-question", max_chars=4000)
        options = st.text_area("Choices, one per line", key="attention-options")
        correct = st.text_input("The right choice (one of the choices)", key="attention-correct")
        c1, c2 = st.columns(2)
        seconds = c1.number_input(
            "Seconds to answer", min_value=5, max_value=3600, value=30, key="attention-seconds"
        )
        on_fail = c2.selectbox(
            "A wrong answer or none",
            list(OnCheckFail),
            format_func=lambda v: {
                OnCheckFail.RECORD: "is recorded (the person stays)",
                OnCheckFail.EXIT: "sends the person out (failed_check)",
            }[v],
            key="attention-on-fail",
        )
        if not st.form_submit_button("Send the attention check"):
            return
    if not question.strip():
        refuse("Write the question.")
        return
    check = {
        "name": f"{SENT_PREFIX}-{_stamp(db)}",
        "question_text": question.strip(),
        "question_options": options_of(options),
        "correct": correct.strip(),
        "answer_seconds": int(seconds),
        "on_fail": str(on_fail),
    }
    ids = _recipients(target, rows)
    act(
        lambda: [study.send_attention_check(db, code, pid, check, actor=actor) for pid in ids],
        lambda sent: f"Attention check sent to {len(sent)} person(s).",
    )


def _recipients(target: str, rows: list[Any]) -> list[int]:
    kind, _, value = target.partition(":")
    if kind == "person":
        return [int(value)]
    return [r.participant_id for r in rows if str(r.room_id) == value]


def _stamp(db: Any) -> str:
    return f"{db.now():%H%M%S}-{secrets.token_hex(2)}"


__all__ = [
    "attempts_frame",
    "attention_frame",
    "check_tables",
    "options_of",
    "send_controls",
]
