"""The Room page's room picker: find a room by name, condition or #id, page through every room
(pages of 100), or start a new one ("+ New room").

A pick moves the page to the picked room in the select box's ``on_change`` callback, which runs
before the page's script: the page then draws the picked room at once, never the old one again.
That lets the page draw the picker after the shown room's messages (into a container it placed
above them): its query and its three widgets no longer stand between a person and the messages
(docs/deploy.md, "Sizing").

No status in the labels: other rooms change while the page shows one, and the picker is only
redrawn with the page (the status of the shown room is in the line under its title).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui.widgets import synced_selectbox

from . import rooms

#: Rooms listed per page of the picker.
PICKER_PAGE = 100
#: "+ New room" is an option of its own (0, never a room id): a None value would leave the
#: select box without a selection, showing Streamlit's "Choose an option" placeholder.
NEW_ROOM = 0
#: The select box's key (tests and the page read the picked room under it).
KEY = "room-pick"


def follow_pick() -> None:
    """``on_change`` of the select box: the page's URL names the picked room (none for
    "+ New room") before the page runs again."""
    picked = st.session_state.get(KEY)
    if picked in (None, NEW_ROOM):
        st.query_params.pop("room", None)
    else:
        st.query_params["room"] = str(picked)


def room_picker(db: Any, room_id: int | None, name: str | None = None) -> int | None:
    """Draw the picker showing ``room_id`` (None: "+ New room"; ``name``: its name, for the label
    when the room is not on the page of rooms listed). Returns the room picked, None for a new
    room: normally ``room_id``, a pick having moved the page in :func:`follow_pick`."""
    s1, s2 = st.columns([4, 1])
    find = s1.text_input(
        "Find a room",
        key="room-find",
        placeholder="name, condition or #id",
        icon=":material/search:",
    )
    page = int(st.session_state.get("room-find-page", 1))
    labels, matching = rooms.picker_labels(db, search=find, page=page, page_size=PICKER_PAGE)
    pages = max(1, -(-matching // PICKER_PAGE))
    if page > pages:  # the search narrowed the list: page 1
        st.session_state["room-find-page"] = page = 1
        labels, matching = rooms.picker_labels(db, search=find, page=1, page_size=PICKER_PAGE)
    if matching > PICKER_PAGE:
        s2.number_input(f"Page (of {pages:d})", 1, pages, key="room-find-page")
    if room_id is not None and room_id not in labels:
        labels[room_id] = f"#{room_id} {name or ''}".rstrip()
    picked = synced_selectbox(
        "Room",
        [NEW_ROOM, *labels],
        NEW_ROOM if room_id is None else room_id,
        format_func=lambda r: "+ New room" if r == NEW_ROOM else labels[r],
        key=KEY,
        on_change=follow_pick,
    )
    return None if picked == NEW_ROOM else picked


__all__ = ["KEY", "NEW_ROOM", "PICKER_PAGE", "follow_pick", "room_picker"]
