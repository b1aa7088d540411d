"""The post form of a room that reached its turn limit says, before the person sends, that no
agent will answer, and offers to continue for more turns (recorded as a settings change)."""

from __future__ import annotations

import pytest

from conversation.rooms.room import Room
from storage import Database
from tests.app.page_support import app, mug_room, shown


def ended_room(db: Database) -> Room:
    room = mug_room(db, termination={"kind": "max_turns", "max_turns": 2})
    room.run()
    assert room.status == "terminated", room.stop_reason
    return room


def test_the_post_form_says_no_agent_answers_at_the_limit(db: Database) -> None:
    """The page said "Your message restarted the room" and promised that the agents answer; the
    room ended again at once with "max_turns reached"."""
    room = ended_room(db)
    at = app("pages/room.py", room=str(room.id))
    warned = [shown(w.value) for w in at.warning]
    assert any("reached its limit (max_turns reached (2))" in w for w in warned), warned
    assert at.checkbox(key=f"continue-{room.id}").value is False
    at.chat_input[0].set_value("One more question?").run()
    assert not at.exception
    notices = [shown(w.value) for w in at.warning]
    assert any("no agent will answer it" in n for n in notices), notices
    assert not any("restarted" in n for n in notices), notices
    assert room.run() == [] and room.status == "terminated"


def test_continue_raises_the_limit_with_the_message_and_the_agents_answer(db: Database) -> None:
    room = ended_room(db)
    at = app("pages/room.py", room=str(room.id))
    at.checkbox(key=f"continue-{room.id}").check().run()
    assert at.number_input(key=f"continue-turns-{room.id}").value == 2  # the original limit
    at.number_input(key=f"continue-turns-{room.id}").set_value(3).run()
    at.chat_input[0].set_value("Go on, please").run()
    assert not at.exception
    notices = [shown(w.value) for w in at.warning]
    assert any("continues for 3 more agent turns" in n for n in notices), notices
    assert room.config_versions()[-1]["config"]["termination"]["max_turns"] == 5
    answered = room.run()
    assert len([t for t in answered if t.result]) == 3
    assert room.stop_reason == "max_turns reached (5)"
    said = [m["text"] for m in room.transcript() if m["kind"] == "human"]
    assert said[-1] == "Go on, please"


def test_a_second_visit_reuses_the_note_until_the_room_changes(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note reads the whole log (0.5 s on 10,000 events): a second visitor of an unchanged
    room does not read it again, and a change of the room (its limit raised) is said at once."""
    import ui.room.rooms

    room = ended_room(db)
    reads = []
    real = ui.room.rooms.no_answer
    monkeypatch.setattr(ui.room.rooms, "no_answer", lambda *a: reads.append(1) or real(*a))
    first = app("pages/room.py", room=str(room.id))
    second = app("pages/room.py", room=str(room.id))
    for at in (first, second):
        assert any("reached its limit" in shown(w.value) for w in at.warning)
    assert len(reads) == 1
    room.extend_limit(3)
    third = app("pages/room.py", room=str(room.id))
    assert not any("reached its limit" in shown(w.value) for w in third.warning)
    assert len(reads) == 2
