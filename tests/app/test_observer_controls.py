"""An observer (sign-in roles) on the Room page gets no settings-edit form and no fork or
edit-and-replay controls, only a note why; the engine refuses the same acts from an observer
called directly."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import storage
from conversation.access import Actor, Role
from conversation.exceptions import PermissionDenied
from conversation.rooms.room import Room
from storage import Database
from tests.app.page_support import mug_room, open_section
from tests.app.sign_in_support import plain, signed_in_app, user

OBSERVER = Actor("olga@lab.org", Role.OBSERVER, signed_in=True)


def widget_keys(at: AppTest) -> set[str]:
    kinds = ("button", "selectbox", "multiselect", "text_area", "text_input", "checkbox",
             "number_input", "radio", "toggle")  # fmt: skip
    return {str(w.key) for kind in kinds for w in getattr(at, kind) if w.key}


def keys_and_text_of_every_tab(at: AppTest) -> tuple[set[str], str]:
    """The widget keys and the text of the Room page with each of its lazy right-hand tabs
    opened in turn (only the open one is drawn)."""
    keys, text = widget_keys(at), plain(at)
    for section in ("Settings", "Fork & export", "Branches"):
        open_section(at, section, key="room-section")
        keys |= widget_keys(at)
        text += plain(at)
    return keys, text


def ran_room(db: Database) -> Room:
    room = mug_room(db)
    room.run(max_turns=2)
    return room


def test_an_observer_sees_no_settings_form_and_no_fork_controls(db: Database) -> None:
    room = ran_room(db)
    at = signed_in_app(user("olga@lab.org", "Olga"), "pages/room.py", room=str(room.id))
    keys, text = keys_and_text_of_every_tab(at)
    assert not [k for k in keys if k.startswith(f"edit-{room.id}-")]  # no settings form
    assert not [k for k in keys if k.startswith(("fork-", "fork-at-", "fork-text-"))]
    assert "cannot create, import or fork rooms" in text
    assert any(m.name == "user" for m in at.chat_message)  # the room itself is still shown


def test_a_researcher_gets_both_panels(db: Database) -> None:
    room = ran_room(db)
    at = signed_in_app(user("ana@lab.org", "Ana"), "pages/room.py", room=str(room.id))
    keys, _ = keys_and_text_of_every_tab(at)
    assert f"edit-{room.id}-v1-apply" in keys
    assert {f"fork-at-{room.id}", f"fork-{room.id}"} <= keys


def test_the_engine_refuses_an_observer_called_directly(db: Database) -> None:
    room = ran_room(db)
    with pytest.raises(PermissionDenied):
        room.update_config({"moderated": True}, actor=OBSERVER)
    with pytest.raises(PermissionDenied):
        room.fork(2, actor=OBSERVER)
    with pytest.raises(PermissionDenied):
        room.fork(2, edit="Something else.", actor=OBSERVER)
    assert len(Room.open(db, room.id).config_versions()) == 1
    assert len(storage.list_rooms(db)) == 1  # no fork was made
