"""The researcher's live monitor of a study (``/study_monitor?study=CODE``).

Who is in the lobby, in which room, idle, done; attrition so far by condition (with its interval);
the groups and their rooms; and the researcher's acts: lock and unlock the link, cap the number of
participants, message one participant (the help channel, both ways), remove a participant. Every
act goes through ``conversation.study`` with the signed-in person's actor, which records it.

The tables are redrawn by a fragment every ``MONITOR_SECONDS``; the controls are drawn with the
page. The page only reads and acts: the study's clock runs in the worker and the app's runner.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pandas as pd
import streamlit as st

from conversation.vocabulary import GroupStatus
from settings import SETTINGS
from ui.widgets import escape_markdown

MONITOR_SECONDS = SETTINGS.monitor_poll_seconds


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def people_frame(rows: list[Any]) -> pd.DataFrame:
    """The monitor's participants as a table (pseudonyms only: no token, no recruitment id)."""
    return pd.DataFrame(
        [
            {
                "participant": r.pseudonym,
                "where": r.where,
                "stage": r.stage,
                "condition": r.condition or "",
                "seat": r.seat or "",
                "room": r.room_id,
                "exit": r.exit_status or "",
                "idle (s)": None if r.idle_seconds is None else round(r.idle_seconds),
                "help unread": r.help_unread,
            }
            for r in rows
        ],
        columns=[
            "participant",
            "where",
            "stage",
            "condition",
            "seat",
            "room",
            "exit",
            "idle (s)",
            "help unread",
        ],
    )


def attrition_frame(rows: list[Any]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "condition": a.condition,
                "people": a.assigned,
                "completed": a.completed,
                "left": a.left,
                "how they left": ", ".join(f"{k} {n}" for k, n in a.left_by.items()),
                "attrition": a.rate,
                "95% low": a.low,
                "95% high": a.high,
            }
            for a in rows
        ],
        columns=[
            "condition",
            "people",
            "completed",
            "left",
            "how they left",
            "attrition",
            "95% low",
            "95% high",
        ],
    )


def groups_frame(rows: list[Any]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "group": g.group_id,
                "condition": g.condition,
                "replicate": g.number,
                "room": g.room_id,
                "seats": ", ".join(f"{seat}: {who}" for seat, who in g.seats.items()),
                "status": g.status,
            }
            for g in rows
        ],
        columns=["group", "condition", "replicate", "room", "seats", "status"],
    )


def live_tables(db: Any, code: str) -> None:
    """Counts, participants, attrition and groups, refreshed by a fragment."""

    def tables() -> None:
        monitor = _study().study_monitor(db, code)
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("In the lobby", monitor.lobby)
        c2.metric("In rooms", monitor.in_rooms)
        c3.metric("Done", monitor.done)
        c4.metric("Groups", len(monitor.groups))
        st.subheader("Participants")
        st.dataframe(people_frame(monitor.rows), hide_index=True, width="stretch")
        st.subheader("Attrition by condition")
        st.dataframe(attrition_frame(monitor.attrition), hide_index=True, width="stretch")
        st.subheader("Groups")
        st.dataframe(groups_frame(monitor.groups), hide_index=True, width="stretch")

    st.fragment(tables, run_every=MONITOR_SECONDS)()


def link_controls(db: Any, found: Any, actor: Any) -> None:
    """Lock/unlock the link and the cap."""
    study = _study()
    c1, c2, c3 = st.columns([1, 1, 2], vertical_alignment="bottom")
    locked = found.status == "locked"
    if c1.button("Unlock the link" if locked else "Lock the link", key="study-lock"):
        _act(
            lambda: (study.unlock_study if locked else study.lock_study)(
                db, found.code, actor=actor
            )
        )
    cap = c2.number_input(
        "Cap (participants)",
        min_value=0,
        value=int(found.cap or 0),
        key=f"study-cap-{found.code}",
        help="0: no cap besides the study's groups.",
    )
    if c3.button("Set the cap", key="study-cap-set"):
        _act(lambda: study.set_cap(db, found.code, int(cap) or None, actor=actor))


def _act(action: Any) -> None:
    try:
        action()
    except (ValueError, PermissionError) as exc:
        st.session_state["_monitor_notice"] = str(exc)
    st.rerun()


def participant_controls(db: Any, code: str, actor: Any) -> None:
    """One participant: their help thread (both ways; shown, it is marked read), a message to
    them, and removing them."""
    study = _study()
    monitor = study.study_monitor(db, code)
    people = {r.participant_id: r for r in monitor.rows}
    if not people:
        st.caption("No participants yet.")
        return
    label = {
        pid: f"{r.pseudonym} ({r.where})" + (f" · {r.help_unread} unread" if r.help_unread else "")
        for pid, r in people.items()
    }
    picked = st.selectbox(
        "Participant", list(people), format_func=lambda pid: label[pid], key="monitor-who"
    )
    help_thread(db, code, int(picked), actor)
    with st.form("monitor-message", clear_on_submit=True):
        text = st.text_area("Message to this participant", max_chars=2000)
        if st.form_submit_button("Send") and text.strip():
            _act(lambda: study.message_participant(db, code, picked, text.strip(), actor=actor))
    with st.form("monitor-remove"):
        reason = st.text_input("Reason (recorded)", key="monitor-remove-reason")
        sure = st.checkbox("Yes, remove this participant (they exit with the removed code)")
        if st.form_submit_button("Remove the participant") and sure:
            _act(lambda: study.remove_participant(db, code, picked, reason=reason, actor=actor))


def help_thread(db: Any, code: str, participant_id: int, actor: Any) -> None:
    """The participant's help thread as plain text, then marked read (it has been shown)."""
    study = _study()
    thread = study.help_thread(db, code, participant_id, actor=actor)
    if not thread:
        st.caption("No help messages with this participant.")
        return
    st.caption("Help messages (oldest first):")
    for message in thread:
        who = "You" if message.from_researcher else "Participant"
        st.text(f"{message.at:%H:%M:%S} {who}: {message.text}")
    # An observer reads the thread; only a moderator's reading marks it read.
    with contextlib.suppress(PermissionError):
        study.mark_help_read(db, code, participant_id, actor=actor)


def group_controls(db: Any, code: str, actor: Any) -> None:
    """End a running group's conversation now (its people go to the post-survey)."""
    study = _study()
    running = [g for g in study.study_monitor(db, code).groups if g.status == GroupStatus.RUNNING]
    if not running:
        st.caption("No conversation is running.")
        return
    names = {
        g.group_id: f"{g.condition} #{g.number} (room {g.room_id}): "
        + ", ".join(f"{seat}: {who}" for seat, who in g.seats.items())
        for g in running
    }
    with st.form("monitor-end"):
        picked = st.selectbox(
            "Conversation", list(names), format_func=lambda gid: names[gid], key="monitor-group"
        )
        sure = st.checkbox("Yes, end this conversation now (its people go to the post-survey)")
        if st.form_submit_button("End this conversation now") and sure:
            _act(lambda: study.end_conversation(db, code, int(picked), actor=actor))


def monitor_page(db: Any, actor: Any) -> None:
    """The whole monitor: pick a study by its code, then the live view and the controls."""
    study = _study()
    from ui.study.picker import pick_study

    code, hint = pick_study(db, wanted=str(st.query_params.get("study", "")))
    if not code.strip():
        st.title("Study monitor")
        st.text(hint)
        return
    code = code.strip()
    if st.query_params.get("study") != code:
        st.query_params["study"] = code
    try:
        found = study.get_study(db, code)
    except (LookupError, ValueError):
        st.error("There is no study with this code.")
        return
    st.title(escape_markdown(found.name))
    full = study.study_monitor(db, code).full
    st.caption(
        f"Status: {escape_markdown(found.status)}"
        f"{' (full: the link refuses newcomers)' if full else ''} · cap: "
        f"{escape_markdown(found.cap or 'none')} · definition version {int(found.version)}"
    )
    from ui.study.editor import base_url

    links = study.study_links(code, base_url=base_url())
    st.text("Participant link: " + links.participant)
    notice = st.session_state.pop("_monitor_notice", None)
    if notice:
        st.warning(escape_markdown(notice))
    link_controls(db, found, actor)
    live_tables(db, code)
    with st.expander(
        "A participant: help messages, message, remove", icon=":material/support_agent:"
    ):
        participant_controls(db, code, actor)
    with st.expander("End a conversation now", icon=":material/stop_circle:"):
        group_controls(db, code, actor)
    with st.expander("Exports", icon=":material/download:"):
        from ui.study.exports import study_exports

        study_exports(db, code)


__all__ = [
    "MONITOR_SECONDS",
    "attrition_frame",
    "groups_frame",
    "live_tables",
    "monitor_page",
    "people_frame",
]
