"""Regression tests for the bugs a real browser found in the web app and for the pages'
handling of links and long messages, through Streamlit's AppTest.

Each test fails on the code before its fix; the bug it pins is named in its docstring.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

import storage
from conversation.rooms.room import MAX_MESSAGE_CHARS, Room
from storage import Database
from tests.app.page_support import (
    app,
    mug_room,
    open_section,
    shown,
    titles,
    two_condition_experiment,
)
from ui.room import rooms
from ui.room.templates import CAR_BUYING, MUG_NEGOTIATION


def _rows(at: AppTest, key: str, rows: list[int]) -> None:
    """Tick rows of a selectable dataframe (AppTest cannot click them)."""
    at.session_state[key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception


# --- Experiments ------------------------------------------------------------------------------


def test_switching_the_template_switches_the_opening_of_the_rooms(db: Database) -> None:
    """The opening widget was keyed by the source only: the car-buying rooms were created with
    the mug negotiation's opening."""
    at = app("pages/experiments.py")
    assert at.text_area(key="exp-opening-tpl-mug_negotiation").value == MUG_NEGOTIATION.opening
    at.selectbox(key="exp-tpl").set_value("car_buying").run()
    (opening,) = [t for t in at.text_area if t.label == "Opening message of every room"]
    assert opening.value == CAR_BUYING.opening
    at.number_input(key="exp-reps").set_value(1).run()
    at.button(key="exp-run").click().run()
    assert not at.exception
    (experiment,) = storage.list_experiments(db)
    made = storage.list_rooms(db, experiment_id=experiment.id, limit=None)
    assert len(made) == len(CAR_BUYING.conditions)
    assert {storage.events(db, r.id)[0].content for r in made} == {CAR_BUYING.opening}


def test_the_pace_control_is_offered_for_every_template_on_the_offline_model(
    db: Database,
) -> None:
    """'Offline model: seconds per reply' appeared only for the mug negotiation."""
    at = app("pages/experiments.py")
    for key in ("car_buying", "planner_coder_reviewer", "mug_negotiation"):
        at.selectbox(key="exp-tpl").set_value(key).run()
        labels = [n.label for n in at.number_input]
        assert "Offline model: seconds per reply" in labels, key
    at.selectbox(key="exp-tpl").set_value("car_buying").run()
    at.number_input(key="exp-offline-tpl-car_buying-pace").set_value(1.5).run()
    at.number_input(key="exp-reps").set_value(1).run()
    at.button(key="exp-run").click().run()
    (experiment,) = storage.list_experiments(db)
    made = storage.list_rooms(db, experiment_id=experiment.id, limit=None)
    assert {r.config["model"]["parameters"]["latency"] for r in made} == {1.5}


def test_the_experiments_room_table_opens_a_room(db: Database) -> None:
    """README step 2: 'In the experiment's room table open a room'; the table could not."""
    experiment_id = two_condition_experiment(db)
    at = app("pages/experiments.py", experiment=str(experiment_id))
    assert any("Select a row to open the room" in c.value for c in at.caption)
    (table,) = [d for d in at.dataframe if "replicate" in d.value.columns]
    wanted = storage.get_room(db, int(table.value.iloc[1]["room_id"]))
    _rows(at, "exp-rooms", [1])
    assert at.query_params["room"] in ([str(wanted.id)], str(wanted.id))
    assert titles(at) == [wanted.name]
    assert at.selectbox(key="room-pick").value == wanted.id


def test_pickers_carry_no_status_that_could_go_stale(db: Database) -> None:
    """Room and experiment pickers said '(running)' after the rooms ended: they are drawn once
    per page run while the rooms go on, so their labels hold names only."""
    experiment_id = two_condition_experiment(db, name="stale")
    at = app("pages/experiments.py")
    assert at.selectbox(key="exp-pick").options == ["+ New experiment", f"#{experiment_id} stale"]
    room = storage.list_rooms(db, experiment_id=experiment_id)[0]
    at = app("pages/room.py", room=str(room.id))
    assert not [o for o in at.selectbox(key="room-pick").options if o.endswith("(running)")]


# --- Results ----------------------------------------------------------------------------------


def test_compare_shows_the_two_ticked_rooms(db: Database) -> None:
    """Ticking one row, then a second, left the first room on both sides."""
    for _ in range(3):
        mug_room(db).run()
    at = open_section(app("pages/results.py"), "Compare")
    at.toggle(key="res-select").set_value(True).run()  # the grid, whose rows can be ticked
    _rows(at, "res-rooms", [0])
    assert at.selectbox(key="cmp-a").value == at.selectbox(key="cmp-b").value
    _rows(at, "res-rooms", [0, 2])
    ids = sorted(r.id for r in storage.list_rooms(db))
    shown_ids = {at.selectbox(key="cmp-a").value, at.selectbox(key="cmp-b").value}
    table = at.dataframe[0].value
    assert shown_ids == {int(table.iloc[0]["room_id"]), int(table.iloc[2]["room_id"])}
    assert shown_ids <= set(ids)


def test_all_rooms_does_not_chart_one_experiments_outcomes(db: Database) -> None:
    """'All rooms' showed the latest analysis of one experiment as if it covered every room."""
    experiment_id = two_condition_experiment(db)
    mug_room(db).run()
    analysis = storage.create_analysis(
        db, "Was a deal reached?", {"type": "yes_no", "name": "answer",
                                    "text": "Was a deal reached?"},
        experiment_id=experiment_id, status="done",
    )  # fmt: skip
    for room in storage.list_rooms(db, experiment_id=experiment_id):
        storage.record_answer(db, analysis, room.id, "Yes")
    at = open_section(app("pages/results.py"), "Charts")
    assert any("Pick an experiment" in i.value for i in at.info)
    all_rooms = len(at.get("plotly_chart"))
    at = open_section(app("pages/results.py", experiment=str(experiment_id)), "Charts")
    assert not any("Pick an experiment" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == all_rooms + 1  # the outcomes chart, for this one


def test_a_filter_without_match_does_not_say_no_rooms_yet(db: Database) -> None:
    mug_room(db).run()
    at = app("pages/results.py")
    at.text_input(key="res-text").set_value("no such room").run()
    assert not any("No rooms yet" in i.value for i in at.info)
    assert any("No room matches these filters" in i.value for i in at.info)


# --- Room -------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["settled", "paused", "stopped"])
def test_the_resume_button_is_enabled_exactly_when_it_can_act(db: Database, status: str) -> None:
    """The first control said 'Run' and was never enabled."""
    room = mug_room(db, termination=None, planner={"kind": "round_robin_room"})
    room.run()
    if status == "paused":
        room.pause()
    elif status == "stopped":
        room.stop()
    assert room.status == status
    at = app("pages/room.py", room=str(room.id))
    button = at.button(key="ctl-resume")
    assert button.label == "Resume"
    assert button.disabled == (status != "paused")
    if status == "paused":
        button.click().run()
        assert room.status == "running"


def test_a_pass_is_a_notice_not_an_empty_bubble_labelled_stopped(db: Database) -> None:
    room = mug_room(db, moderated=True)
    room.run()
    pending = room.pending()
    assert pending is not None and pending.state == "waiting"
    at = app("pages/room.py", room=str(room.id))
    at.button(key="ctl-pass").click().run()
    assert room.turn(pending.id).state == "stopped"
    bubbles = [m for m in at.chat_message if any("stopped" in c.value for c in m.caption)]
    assert bubbles == []
    notes = [shown(c.value) for c in at.caption]
    assert any(f"{pending.speaker}'s turn was skipped" in n for n in notes)


def test_posting_into_a_stopped_room_says_it_restarts_it(db: Database) -> None:
    room = mug_room(db)
    room.run()
    room.stop()
    at = app("pages/room.py", room=str(room.id))
    assert any("Sending a message restarts it" in c.value for c in at.caption)
    at.chat_input(key=f"chat-{room.id}").set_value("Let us try again").run()
    assert room.status == "running"
    assert any("restarted the room" in shown(w.value) for w in at.warning)


def test_the_turn_picker_follows_new_turns_unless_an_older_one_was_chosen(
    db: Database,
) -> None:
    room = mug_room(db, termination=None, planner={"kind": "round_robin_room"})
    room.step()
    at = app("pages/room.py", room=str(room.id))
    picker = f"turn-pick-{room.id}"
    first = at.selectbox(key=picker).value
    room.step()
    at.run()
    newest = max(e.seq for e in room.events() if e.kind == "agent")
    assert newest != first and at.selectbox(key=picker).value == newest
    at.selectbox(key=picker).set_value(first).run()
    room.post("More, please", request_id="more")
    room.step()
    at.run()
    assert at.selectbox(key=picker).value == first  # a chosen older turn stays chosen


def test_switching_rooms_keeps_one_picker_with_one_key(db: Database) -> None:
    """The picker's key embedded the room id: a second dropdown flashed while switching, and a
    remembered state met the index default (Streamlit's duplicate-default warning)."""
    first, second = mug_room(db, name="first"), mug_room(db, name="second")
    at = app("pages/room.py", room=str(first.id))
    at.selectbox(key="room-pick").set_value(second.id).run()
    assert not at.exception
    assert titles(at) == ["second"]
    assert [s.key for s in at.selectbox if s.label == "Room"] == ["room-pick"]
    assert at.selectbox(key="room-pick").value == second.id
    at.switch_page("pages/home.py")
    at.run()
    at.switch_page("pages/room.py")
    at.query_params["room"] = str(first.id)
    at.run()
    assert at.selectbox(key="room-pick").value == first.id
    assert titles(at) == ["first"]


def test_a_redrawn_room_picker_falls_back_to_the_shown_room_not_new_room(db: Database) -> None:
    """In Chromium the picker, redrawn after a fragment's rerun without a remembered value, fell
    back to its default and sent it: the default was "+ New room", so an open room jumped to the
    new-room form (the URL lost its ?room=) and a message sent then was lost. After the first run
    the widget's default is the room it shows."""
    first, second = mug_room(db, name="first"), mug_room(db, name="second")
    at = app("pages/room.py", room=str(second.id))
    at.run()
    picker = at.selectbox(key="room-pick")
    assert picker.options[picker.proto.default] == f"#{second.id} second"
    at.selectbox(key="room-pick").set_value(first.id).run()
    at.run()
    picker = at.selectbox(key="room-pick")
    assert picker.options[picker.proto.default] == f"#{first.id} first"


def test_room_exports_are_built_on_click_not_on_every_rerun(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from storage.research import frames

    built: list[str] = []
    export_text, events_frame = rooms.export_text, frames.events_frame
    monkeypatch.setattr(rooms, "export_text", lambda r: built.append("json") or export_text(r))
    monkeypatch.setattr(
        frames, "events_frame", lambda *a, **k: built.append("csv") or events_frame(*a, **k)
    )
    room = mug_room(db)
    room.run()
    at = app("pages/room.py", room=str(room.id))
    open_section(at, "Fork & export", key="room-section")
    at.run()
    assert [b.label for b in at.get("download_button")] == ["Export JSON", "Export CSV"]
    assert built == []


def test_a_message_over_the_limit_is_refused_next_to_the_box_and_kept(db: Database) -> None:
    room = mug_room(db)
    room.run()
    before = len(room.events())
    at = app("pages/room.py", room=str(room.id))
    long = "x" * (MAX_MESSAGE_CHARS + 1)
    at.chat_input(key=f"chat-{room.id}").set_value(long).run()
    assert not at.exception
    assert len(room.events()) == before
    refusals = [e for e in at.error if "Not sent" in e.value]
    assert refusals and f"{MAX_MESSAGE_CHARS:,} characters" in refusals[0].value
    # In the bottom container with the box (st.bottom), not at the top of a long page.
    assert not any("Not sent" in e.value for e in [*at.main.error, *at.main.warning])
    box = at.chat_input(key=f"chat-{room.id}").proto
    assert (box.value, box.set_value) == (long, True)  # put back into the box
    at.run()  # a rerun (a new turn arrived) keeps the reason while the text waits
    assert any("Not sent" in e.value for e in at.error)
    at.chat_input(key=f"chat-{room.id}").set_value("Shorter now").run()
    assert not any("Not sent" in e.value for e in at.error)  # gone with the next submission
    assert "Shorter now" in [e.content for e in room.events()]


def test_importing_a_saved_chat_without_a_roster_is_refused(db: Database) -> None:
    """No roster chosen silently added a template's agents, who started talking."""
    at = app("pages/room.py")
    saved = [{"speaker": "user", "content": "Sell me the mug."}]
    at.text_area(key="import-text").set_value(json.dumps(saved)).run()
    at.button(key="import-go").click().run()
    assert any("needs a roster" in e.value for e in at.error)
    assert storage.list_rooms(db) == []


def test_importing_an_export_needs_no_roster(db: Database) -> None:
    room = mug_room(db)
    room.run()
    exported = rooms.export_text(room)
    at = app("pages/room.py")
    at.text_area(key="import-text").set_value(exported).run()
    at.button(key="import-go").click().run()
    assert not at.exception
    assert len(storage.list_rooms(db)) == 2


# --- links and names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["abc", "-1", "0", "1.5", "99999999999999999999999", "9223372036854775808", "²", "77"]
)
@pytest.mark.parametrize(
    ("page", "param"),
    [("pages/room.py", "room"), ("pages/experiments.py", "experiment"),
     ("pages/results.py", "experiment")],
)  # fmt: skip
def test_bad_ids_in_links_give_a_message_not_a_traceback(
    db: Database, page: str, param: str, value: str
) -> None:
    mug_room(db)
    at = app(page, **{param: value})  # asserts no exception
    said = [shown(m.value) for m in [*at.warning, *at.error]]
    assert any("id" in s or "There is no" in s for s in said), said
    assert not any(value in s for s in said if value != "77")  # the raw value is never quoted


def test_names_are_drawn_escaped(db: Database) -> None:
    hostile = "![x](http://127.0.0.1:9/i.png) <img src=x> :material/home: _it_"
    room = rooms.create_room(
        db, rooms.draft_from_template(MUG_NEGOTIATION, name=hostile), opening="hi"
    )
    Room.open(db, room.id).stop(reason=hostile)
    at = app("pages/room.py", room=str(room.id))
    import html as html_text

    assert [h.proto.body for h in at.get("html")][:1] == [
        f'<h1 class="rooms-title">{html_text.escape(hostile)}</h1>'
    ]  # the title as plain text (issue 35: no invisible joiner copied with a URL)
    assert any(shown(i.value) == f"Stopped: {hostile}." for i in at.info)


def test_the_room_picker_never_warns_of_a_default_and_a_state_value(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: the server log repeated "widget with key room-pick was created with a default
    value but also had its value set via the Session State API": a run that moved the picker
    to the linked room (through its state) and then reran (a button, the live view) drew it
    again with a default before Streamlit took the state in."""
    import logging

    from streamlit.elements.lib import policies

    monkeypatch.setattr(policies, "_shown_default_value_warning", False)  # once per process
    said: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger(policies.__name__)
    logger.addHandler(handler)
    try:
        first, second = mug_room(db), mug_room(db)
        at = app("pages/room.py", room=str(first.id))
        at.query_params["room"] = str(second.id)  # a link to another room, then a click
        at.button(key="ctl-pause").click().run()
        assert not at.exception
    finally:
        logger.removeHandler(handler)
    assert not [s for s in said if "room-pick" in s], said
