"""Regression tests for page defects a researcher met in the browser,
through Streamlit's AppTest. Each test fails on the code before its fix."""

from __future__ import annotations

import storage
from storage import Database
from tests.app.page_support import app, mug_room, shown, two_condition_experiment
from ui.room.templates import CAR_BUYING, MUG_NEGOTIATION


def test_the_room_picker_reads_new_room_not_choose_an_option(db: Database) -> None:
    """With no room chosen the picker had no selection (its value was None), so it showed
    Streamlit's placeholder "Choose an option" instead of "+ New room"."""
    at = app("pages/room.py")
    picker = at.selectbox(key="room-pick")
    assert picker.index == 0
    assert picker.options[0] == "+ New room"
    assert picker.value is not None


def test_home_counts_the_rooms_it_lists(db: Database) -> None:
    """Home said "Rooms (3)" above a list of one room: the other two were experiment rooms,
    left out of the list by default but counted in the heading."""
    mug_room(db)
    two_condition_experiment(db)  # two rooms, one per condition
    at = app()
    assert [s.value for s in at.subheader if s.value.startswith("Rooms")] == [
        "Rooms (1; 2 more in experiments)"
    ]
    (table,) = [d for d in at.dataframe if "room_id" in d.value.columns]
    assert len(table.value) == 1
    at.selectbox(key="home-experiment").set_value("All rooms").run()
    assert [s.value for s in at.subheader if s.value.startswith("Rooms")] == ["Rooms (3)"]


def test_a_notice_names_who_acted_once(db: Database) -> None:
    """A notice read "Resumed by ann." and, under it, "by ann" again."""
    room = mug_room(db)
    room.pause(by="ann")
    room.resume(by="ann")
    at = app("pages/room.py", room=str(room.id))
    said = [shown(c.value) for c in at.caption if "ann" in c.value]
    assert any(s.endswith("Paused by ann.") for s in said), said
    assert any(s.endswith("Resumed by ann.") for s in said), said
    assert not [s for s in said if s == "by ann"], said


def test_a_room_link_without_the_page_path_opens_the_room(db: Database) -> None:
    """``/?room=1`` silently showed Home; it opens the room, as ``/room?room=1`` does."""
    room = mug_room(db, name="Linked room")
    at = app(room=str(room.id))
    assert [t.value for t in at.title] == ["Linked room"]
    assert at.selectbox(key="room-pick").value == room.id


def test_the_experiment_name_follows_a_template_switch_until_typed(db: Database) -> None:
    """The opening followed a template switch but the name stayed "Mug negotiation", so a
    car-buying experiment was stored under the mug negotiation's name."""
    at = app("pages/experiments.py")
    assert at.text_input(key="exp-name").value == MUG_NEGOTIATION.title
    at.selectbox(key="exp-tpl").set_value("car_buying").run()
    assert at.text_input(key="exp-name").value == CAR_BUYING.title
    at.number_input(key="exp-reps").set_value(1).run()
    at.button(key="exp-run").click().run()
    assert not at.exception
    assert [e.name for e in storage.list_experiments(db)] == [CAR_BUYING.title]


def test_a_typed_experiment_name_survives_a_template_switch(db: Database) -> None:
    at = app("pages/experiments.py")
    at.text_input(key="exp-name").input("My study").run()
    at.selectbox(key="exp-tpl").set_value("car_buying").run()
    assert at.text_input(key="exp-name").value == "My study"


def test_an_agent_form_error_goes_once_the_field_is_fixed(db: Database) -> None:
    """ "not a usable name" stayed under the Name field after the name was fixed, until the next
    Save."""
    at = app("pages/agents.py")
    at.text_input(key="agent-name-new").set_value("two words")
    at.button(key="save-new").click().run()
    assert any("not a usable name" in e.value for e in at.error)
    at.text_input(key="agent-name-new").set_value("still bad!").run()
    assert any("not a usable name" in e.value for e in at.error)
    at.text_input(key="agent-name-new").set_value("Alice").run()
    assert not at.exception
    assert not [e.value for e in at.error]
    assert (
        storage.list_agent_profiles(db) == []
    )  # fixed, not saved: Save is still the person's call


def test_a_second_moderator_is_told_who_decided_the_draft_first(db: Database) -> None:
    """Two moderators on one draft: ann approves it; the other still sees it and clicks Approve.
    The engine refused with TurnAlreadyDecided, but the page, redrawn without that draft, dropped
    the click and said nothing."""
    room = mug_room(db, moderated=True)
    room.run()
    draft = room.pending()
    assert draft is not None and draft.state == "waiting"
    text = draft.waiting[0]["draft"]
    at = app("pages/room.py", room=str(room.id))
    draft.approve(by="ann")  # the other moderator, in another browser
    at.button(key=f"approve-{draft.id}-0").click().run()
    assert not at.exception
    decided = room.turn(draft.id).event.data["decisions"][-1]
    hhmm = str(decided["at"])[11:16]
    told = [shown(w.value) for w in at.warning]
    assert any(f"already approved by ann at {hhmm}" in t for t in told), told
    assert room.turn(draft.id).result == text  # ann's decision stands


def test_the_sidebar_shows_the_database_url_literally(db: Database, db_url: str) -> None:
    """The sidebar showed ``sqlite:\\u2060////...``: an invisible WORD JOINER, copied along with the
    URL, broke a pasted URL. It is plain text now, exactly the URL."""
    from storage import display_url

    at = app()
    shown_texts = [t.value for t in at.sidebar.text] + [c.value for c in at.sidebar.caption]
    assert f"Database: {display_url(db_url)}" in shown_texts
    assert not [t for t in shown_texts if "\u2060" in t]


def _orphan_turn(db: Database, room_id: int) -> None:
    """Leave ``room_id`` as a ``kill -9`` does: a turn in flight whose process is gone."""
    import socket
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    owner = f"app:{socket.gethostname()}:{child.pid}:dead0001"
    token = storage.acquire_lease(db, room_id, owner, 600)
    last = storage.latest_seq(db, room_id)
    claimed = storage.claim_turn(
        db,
        room_id,
        token=token,
        expected_last_seq=last,
        speaker="Buyer",
        request_id=f"{room_id}:{last + 1}:Buyer",
        activity=1,
        round=0,
    )
    assert claimed is not None


def test_the_room_page_says_it_is_recovering_after_a_restart(db: Database) -> None:
    """After ``kill -9`` of the server the page said "Buyer is answering…" for the ~20 s the
    restarted server took to reclaim the turn. It says what is happening."""
    room = mug_room(db)
    _orphan_turn(db, room.id)
    at = app("pages/room.py", room=str(room.id))
    said = [shown(i.value) for i in at.info]
    assert any(
        s.startswith("Recovering after a restart: Buyer's turn lost its process") for s in said
    ), said


def test_the_experiment_page_says_its_rooms_are_recovering(db: Database) -> None:
    experiment = two_condition_experiment(db)
    storage.update_experiment(db, experiment, status="running")
    room = storage.create_room(db, "r1", status="running", experiment_id=experiment)
    storage.append_message(db, room, "human", "user", "hello")
    _orphan_turn(db, room)
    at = app("pages/experiments.py", experiment=str(experiment))
    said = [shown(w.value) for w in at.warning]
    assert any(s.startswith("Recovering after a restart: 1 room's turn") for s in said), said
