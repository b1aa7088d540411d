"""The "Manage" panels: rename, archive and delete a room or an experiment, each delete after a
second, explicit click that says what goes with it. Names are shown with ``st.text`` only (user
text is never rendered as markdown)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from conversation import experiments as ex
from conversation.access import Action
from conversation.exceptions import ConversationError
from conversation.rooms import manage
from ui.access import current_actor, note
from ui.widgets import escape_markdown


def _confirm_key(kind: str, ident: int) -> str:
    return f"manage-confirm-{kind}-{ident}"


def _done(message: str) -> None:
    st.session_state["manage-notice"] = message
    st.rerun()


def show_notice() -> None:
    """The outcome of the last manage action (kept over the rerun that applied it)."""
    notice = st.session_state.pop("manage-notice", None)
    if notice:
        st.success(notice, icon=":material/check:")


def room_panel(db: Any, room: Any, *, key: str = "home") -> None:
    """Rename / archive / delete one stored room (``room``: its storage record)."""
    me = current_actor()
    if not me.can(Action.CREATE_ROOM):
        note(Action.CREATE_ROOM)
        return
    rid = int(room.id)
    st.text(f"Room #{rid}: {room.name}")
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    new_name = c1.text_input("New name", value=room.name, key=f"{key}-rename-{rid}")
    if c2.button("Rename", key=f"{key}-rename-btn-{rid}"):
        try:
            manage.rename_room(db, rid, new_name, actor=me)
        except ConversationError as exc:
            st.error(escape_markdown(exc), icon=":material/error:")
        else:
            _done(f"Room #{rid} renamed.")
    a1, a2 = st.columns(2)
    archived = room.archived_at is not None
    if a1.button("Unarchive" if archived else "Archive", key=f"{key}-archive-{rid}"):
        manage.archive_room(db, rid, not archived, actor=me)
        _done(f"Room #{rid} {'brought back' if archived else 'archived (hidden from Home)'}.")
    confirm = _confirm_key("room", rid)
    if a2.button("Delete…", key=f"{key}-delete-{rid}"):
        st.session_state[confirm] = True
    if st.session_state.get(confirm):
        impact = manage.deletion_impact(db, rid)
        if impact.blocked:
            st.warning(escape_markdown(f"Room #{rid} cannot be deleted now: {impact.blocked}."))
            st.session_state.pop(confirm, None)
            return
        st.warning(escape_markdown(impact.describe()), icon=":material/warning:")
        y, n = st.columns(2)
        if y.button("Yes, delete it", type="primary", key=f"{key}-delete-yes-{rid}"):
            st.session_state.pop(confirm, None)
            try:
                manage.delete_room(db, rid, actor=me)
            except ConversationError as exc:
                st.error(escape_markdown(exc), icon=":material/error:")
            else:
                _done(f"Room #{rid} deleted.")
        if n.button("Cancel", key=f"{key}-delete-no-{rid}"):
            st.session_state.pop(confirm, None)
            st.rerun()


def experiment_panel(db: Any, experiment: Any) -> None:
    """Rename / archive / delete one experiment (deleting it deletes its rooms: said first)."""
    me = current_actor()
    if not me.can(Action.CREATE_EXPERIMENT):
        note(Action.CREATE_EXPERIMENT)
        return
    eid = int(experiment.id)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    new_name = c1.text_input("New name", value=experiment.name, key=f"exp-rename-{eid}")
    if c2.button("Rename", key=f"exp-rename-btn-{eid}"):
        try:
            ex.rename_experiment(db, eid, new_name, actor=me)
        except ConversationError as exc:
            st.error(escape_markdown(exc), icon=":material/error:")
        else:
            _done(f"Experiment #{eid} renamed.")
    a1, a2 = st.columns(2)
    archived = experiment.archived_at is not None
    if a1.button("Unarchive" if archived else "Archive (with its rooms)", key=f"exp-archive-{eid}"):
        ex.archive_experiment(db, eid, not archived, actor=me)
        _done(f"Experiment #{eid} {'brought back' if archived else 'archived with its rooms'}.")
    confirm = _confirm_key("experiment", eid)
    if a2.button("Delete…", key=f"exp-delete-{eid}"):
        st.session_state[confirm] = True
    if st.session_state.get(confirm):
        plan = ex.experiment_deletion(db, eid)
        if plan.blocked:
            st.warning(escape_markdown(f"Experiment #{eid} cannot be deleted now: {plan.blocked}."))
            st.session_state.pop(confirm, None)
            return
        st.warning(escape_markdown(plan.describe()), icon=":material/warning:")
        y, n = st.columns(2)
        if y.button("Yes, delete it and its rooms", type="primary", key=f"exp-delete-yes-{eid}"):
            st.session_state.pop(confirm, None)
            try:
                ex.delete_experiment(db, eid, actor=me)
            except ConversationError as exc:
                st.error(escape_markdown(exc), icon=":material/error:")
            else:
                st.query_params.pop("experiment", None)
                _done(f"Experiment #{eid} and its rooms deleted.")
        if n.button("Cancel", key=f"exp-delete-no-{eid}"):
            st.session_state.pop(confirm, None)
            st.rerun()


__all__ = ["experiment_panel", "room_panel", "show_notice"]
