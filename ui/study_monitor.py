"""The researcher's live monitor of a study (``/study_monitor?study=CODE``).

Who is in the lobby, in which room, idle, done; attrition so far by condition (with its interval);
the groups and their rooms; and the researcher's acts: lock and unlock the link, cap the number of
participants, message one participant (the help channel, both ways), remove a participant. Every
act goes through ``conversation.study`` with the signed-in person's actor, which records it.

The tables are redrawn by a fragment every ``MONITOR_SECONDS`` (which also runs the study's
``tick``, so a monitor left open keeps the lobby and the dropouts moving even when no participant
page is open); the controls are drawn with the page.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from settings import SETTINGS
from ui.widgets import escape_markdown

MONITOR_SECONDS = SETTINGS.monitor_poll_seconds
WHERE_ORDER = ("consent", "lobby", "room", "idle", "done")


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
                "assigned": a.assigned,
                "completed": a.completed,
                "dropped": a.dropped,
                "attrition": a.rate,
                "95% low": a.low,
                "95% high": a.high,
            }
            for a in rows
        ],
        columns=[
            "condition",
            "assigned",
            "completed",
            "dropped",
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
        study = _study()
        study.tick(db, code)
        monitor = study.study_monitor(db, code)
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
    """Message one participant; remove one."""
    study = _study()
    monitor = study.study_monitor(db, code)
    people = {r.participant_id: r for r in monitor.rows}
    if not people:
        st.caption("No participants yet.")
        return
    label = {pid: f"{r.pseudonym} ({r.where})" for pid, r in people.items()}
    picked = st.selectbox(
        "Participant", list(people), format_func=label.__getitem__, key="monitor-who"
    )
    with st.form("monitor-message", clear_on_submit=True):
        text = st.text_area("Message to this participant", max_chars=2000)
        if st.form_submit_button("Send") and text.strip():
            _act(lambda: study.message_participant(db, code, picked, text.strip(), actor=actor))
    with st.form("monitor-remove"):
        reason = st.text_input("Reason (recorded)", key="monitor-remove-reason")
        sure = st.checkbox("Yes, remove this participant (they exit with the removed code)")
        if st.form_submit_button("Remove the participant") and sure:
            _act(lambda: study.remove_participant(db, code, picked, reason=reason, actor=actor))


def pick_study(db: Any) -> tuple[str, str]:
    """The study to show: picked from every study (each with its counts, newest first) or, with
    no study stored yet, a code typed in; and what to say while there is none. A link's
    ``?study=CODE`` is picked already."""
    wanted = str(st.query_params.get("study", ""))
    studies = _study().list_studies(db)
    if not studies:
        typed = st.text_input("Study code", value=wanted, key="monitor-code")
        return typed, "Enter a study's code (it is in the participant link: ?study=CODE)."
    lines = {s.code: s.line() for s in studies}
    codes = list(lines) if wanted in lines or not wanted else [wanted, *lines]
    picked = st.selectbox(
        "Study",
        codes,
        index=codes.index(wanted) if wanted else None,
        format_func=lambda code: str(lines.get(code, code)),  # options are drawn as plain text
        placeholder="Pick a study",
        key="monitor-pick",
    )
    return str(picked or ""), "Pick a study above to see its participants and groups."


def monitor_page(db: Any, actor: Any) -> None:
    """The whole monitor: pick a study by its code, then the live view and the controls."""
    study = _study()
    code, hint = pick_study(db)
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
    st.caption(
        f"Status: {escape_markdown(found.status)} · cap: {escape_markdown(found.cap or 'none')} · "
        f"definition version {int(found.version)}"
    )
    from ui.study_editor import base_url

    links = study.study_links(code, base_url=base_url())
    st.text("Participant link: " + links.participant)
    notice = st.session_state.pop("_monitor_notice", None)
    if notice:
        st.warning(escape_markdown(notice))
    link_controls(db, found, actor)
    live_tables(db, code)
    with st.expander("Message or remove a participant", icon=":material/support_agent:"):
        participant_controls(db, code, actor)
    with st.expander("Exports", icon=":material/download:"):
        from ui.study_exports import study_exports

        study_exports(db, code)


__all__ = [
    "MONITOR_SECONDS",
    "attrition_frame",
    "groups_frame",
    "live_tables",
    "monitor_page",
    "people_frame",
    "pick_study",
]
