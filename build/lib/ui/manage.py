"""The "Manage" panels: rename, archive and delete a room or an experiment, each delete after a
second, explicit click that says what goes with it. Names are shown with ``st.text`` only (user
text is never rendered as markdown)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class _Kind:
    """What differs between managing a room and an experiment (one panel serves both)."""

    noun: str  # "Room" / "Experiment"
    needs: Action  # the role's action that allows it
    #: rename(db, id, name, actor=), archive(db, id, flag, actor=), impact(db, id) -> a plan with
    #: ``blocked`` and ``describe()``, delete(db, id, actor=)
    verbs: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]]
    title: bool = False  # name the record above the form
    archive_label: str = "Archive"
    archived_note: str = "archived"
    delete_label: str = "Yes, delete it"
    deleted_note: str = "deleted"
    forget_param: str | None = None  # a query parameter that named the deleted record


_ROOM = _Kind(
    "Room",
    Action.CREATE_ROOM,
    (manage.rename_room, manage.archive_room, manage.deletion_impact, manage.delete_room),
    title=True,
    archived_note="archived (hidden from Home)",
)
_EXPERIMENT = _Kind(
    "Experiment",
    Action.CREATE_EXPERIMENT,
    (ex.rename_experiment, ex.archive_experiment, ex.experiment_deletion, ex.delete_experiment),
    forget_param="experiment",
    archive_label="Archive (with its rooms)",
    archived_note="archived with its rooms",
    delete_label="Yes, delete it and its rooms",
    deleted_note="and its rooms deleted",
)


def _panel(db: Any, record: Any, kind: _Kind, key: str) -> None:
    """Rename / archive / delete ``record`` (a room's or an experiment's storage record), the
    delete after a second click that says what goes with it."""
    me = current_actor()
    if not me.can(kind.needs):
        note(kind.needs)
        return
    rename, archive, impact_of, delete = kind.verbs
    ident = int(record.id)
    what = f"{kind.noun} #{ident}"
    if kind.title:
        st.text(f"{what}: {record.name}")
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    new_name = c1.text_input("New name", value=record.name, key=f"{key}-rename-{ident}")
    if c2.button("Rename", key=f"{key}-rename-btn-{ident}"):
        try:
            rename(db, ident, new_name, actor=me)
        except ConversationError as exc:
            st.error(escape_markdown(exc), icon=":material/error:")
        else:
            _done(f"{what} renamed.")
    a1, a2 = st.columns(2)
    archived = record.archived_at is not None
    archive_label = "Unarchive" if archived else kind.archive_label
    # markup-ok: the labels are program text (_ROOM, _EXPERIMENT), never a user's
    if a1.button(archive_label, key=f"{key}-archive-{ident}"):
        archive(db, ident, not archived, actor=me)
        _done(f"{what} {'brought back' if archived else kind.archived_note}.")
    confirm = _confirm_key(kind.noun.lower(), ident)
    if a2.button("Delete…", key=f"{key}-delete-{ident}"):
        st.session_state[confirm] = True
    if not st.session_state.get(confirm):
        return
    impact = impact_of(db, ident)
    if impact.blocked:
        st.warning(escape_markdown(f"{what} cannot be deleted now: {impact.blocked}."))
        st.session_state.pop(confirm, None)
        return
    st.warning(escape_markdown(impact.describe()), icon=":material/warning:")
    y, n = st.columns(2)
    # markup-ok: the label is program text (_ROOM, _EXPERIMENT), never a user's
    if y.button(kind.delete_label, type="primary", key=f"{key}-delete-yes-{ident}"):
        st.session_state.pop(confirm, None)
        try:
            delete(db, ident, actor=me)
        except ConversationError as exc:
            st.error(escape_markdown(exc), icon=":material/error:")
        else:
            if kind.forget_param:
                st.query_params.pop(kind.forget_param, None)
            _done(f"{what} {kind.deleted_note}.")
    if n.button("Cancel", key=f"{key}-delete-no-{ident}"):
        st.session_state.pop(confirm, None)
        st.rerun()


def room_panel(db: Any, room: Any, *, key: str = "home") -> None:
    """Rename / archive / delete one stored room (``room``: its storage record)."""
    _panel(db, room, _ROOM, key)


def experiment_panel(db: Any, experiment: Any) -> None:
    """Rename / archive / delete one experiment (deleting it deletes its rooms: said first)."""
    _panel(db, experiment, _EXPERIMENT, "exp")


__all__ = ["experiment_panel", "room_panel", "show_notice"]
