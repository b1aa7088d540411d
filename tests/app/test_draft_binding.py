"""A moderator's decision is bound to the draft they read: a draft replaced meanwhile (another
moderator denied it, the agent drafted again) is not approved, and a half-typed edit is kept."""

from __future__ import annotations

from conversation.rooms.room import Room
from storage import Database
from tests.app.page_support import app, mug_room, shown


def redrafted(db: Database) -> tuple[Room, int, str]:
    room = mug_room(db, moderated=True)
    room.run()
    draft = room.pending()
    assert draft is not None and draft.state == "waiting"
    return room, draft.id, draft.waiting[0]["draft"]


def deny_and_redraft(room: Room, turn_id: int, first: str) -> str:
    room.turn(turn_id).deny("try again", by="bob")  # the other moderator, in another browser
    room.run()
    again = room.turn(turn_id)
    assert again.state == "waiting"
    second = again.waiting[0]["draft"]
    assert second != first
    return second


def test_approve_of_a_replaced_draft_is_refused(db: Database) -> None:
    """Approve, clicked while the panel swapped to the agent's next draft, approved text the
    person never read."""
    room, turn_id, first = redrafted(db)
    at = app("pages/room.py", room=str(room.id))
    second = deny_and_redraft(room, turn_id, first)
    at.button(key=f"approve-{turn_id}-0").click().run()
    assert not at.exception
    told = [shown(w.value) for w in at.warning]
    assert "The draft changed; read it again." in told, told
    turn = room.turn(turn_id)
    assert turn.state == "waiting" and turn.waiting[0]["draft"] == second


def test_a_half_typed_edit_of_a_replaced_draft_is_kept(db: Database) -> None:
    room, turn_id, first = redrafted(db)
    at = app("pages/room.py", room=str(room.id))
    at.text_area(key=f"draft-{turn_id}-0").set_value("My careful edit")
    deny_and_redraft(room, turn_id, first)
    at.button(key=f"approve-{turn_id}-0").click().run()
    assert not at.exception
    assert room.turn(turn_id).state == "waiting"  # the edit was not published over the new draft
    assert "My careful edit" in [c.value for c in at.code]


def test_an_edit_is_kept_when_the_panel_swaps_without_a_click(db: Database) -> None:
    room, turn_id, first = redrafted(db)
    at = app("pages/room.py", room=str(room.id))
    at.text_area(key=f"draft-{turn_id}-0").set_value("Half typed")
    deny_and_redraft(room, turn_id, first)
    at.run()  # the live view reruns the page with the new draft
    assert not at.exception
    assert at.text_area(key=f"draft-{turn_id}-1").value != "Half typed"
    assert "Half typed" in [c.value for c in at.code]
