"""Every screen through Streamlit's AppTest: no exception, the key widgets, and the actions that
matter (a human message stored once, moderation, imports rejected with a message, an experiment
made of rooms, charts built, an analysis stored).

The in-process runner is off here (``ROOMS_APP_RUNNER=0``) so each test decides when agents speak
(``room.run()``); ``test_runner_*`` covers the runner itself. ``st.cache_resource`` is cleared
after every test, which also stops any runner through ``on_release``.
"""

from __future__ import annotations

import json

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import storage
from conversation.worker import AnalysisRunner
from storage import Database
from tests.app.page_support import app, mug_room, open_section, shown
from ui.room import rooms
from ui.room.details import SAW_SHOWN
from ui.room.live import EARLIER_PAGE, FIRST_PAGE
from ui.room.templates import MUG_NEGOTIATION, PLANNER_CODER_REVIEWER


def texts(at: AppTest) -> list[str]:
    return [t.value for m in at.chat_message for t in m.text]


# --- Home -------------------------------------------------------------------------------------


def test_home_labels_the_offline_model_and_starts_a_template_room(db: Database) -> None:
    at = app()
    assert [t.value for t in at.title] == ["Conversation rooms"]
    assert any("not an LLM" in w.value for w in at.warning)
    assert any("not an LLM" in w.value for w in at.sidebar.warning)
    assert {b.key for b in at.button} >= {
        "start-car_buying",
        "start-mug_negotiation",
        "start-planner_coder_reviewer",
    }
    at.button(key="start-planner_coder_reviewer").click().run()
    assert not at.exception
    (room,) = storage.list_rooms(db)
    assert at.query_params["room"] == [str(room.id)] or at.query_params["room"] == str(room.id)
    assert [t.value for t in at.title] == [PLANNER_CODER_REVIEWER.title]
    first = storage.events(db, room.id)[0]
    assert (first.kind, first.content) == ("human", PLANNER_CODER_REVIEWER.opening)
    assert room.status == "running"  # the runner (not started here) would pick it up


def test_home_lists_rooms_with_status_and_last_message(db: Database) -> None:
    room = mug_room(db)
    room.run()
    at = app()
    (table,) = [d for d in at.dataframe if "last_message" in d.value.columns]
    row = table.value.iloc[0]
    assert row["room_id"] == room.id and row["status"] == "ended"  # the words every page uses
    assert row["last_message"].startswith("Buyer: ") and "8 works" in row["last_message"]


# --- Agents -----------------------------------------------------------------------------------


def test_agents_validate_per_field_and_save(db: Database) -> None:
    at = app("pages/agents.py")
    at.text_input(key="agent-name-new").set_value("two words")
    at.button(key="save-new").click().run()
    assert any("not a usable name" in e.value for e in at.error)
    assert storage.list_agent_profiles(db) == []

    at.session_state["agent-traits-new"] = {
        "edited_rows": {0: {"key": "role", "value": "buyer"}},
        "added_rows": [{"key": "role", "value": "again"}],
        "deleted_rows": [],
    }
    at.run()
    at.text_input(key="agent-name-new").set_value("Alice")
    at.button(key="save-new").click().run()
    assert any("appears twice" in e.value for e in at.error)
    assert storage.list_agent_profiles(db) == []

    at.session_state["agent-traits-new"] = {
        "edited_rows": {0: {"key": "role", "value": "buyer"}},
        "added_rows": [{"key": "budget", "value": "$25,000"}],
        "deleted_rows": [],
    }
    at.run()
    at.text_input(key="agent-name-new").set_value("Alice")
    at.text_area(key="agent-instruction-new").set_value("Be terse.")
    at.button(key="save-new").click().run()
    assert not at.exception and any("Saved Alice" in s.value for s in at.success)
    (alice,) = storage.list_agent_profiles(db)
    assert (alice.name, alice.traits, alice.instruction) == (
        "Alice",
        {"role": "buyer", "budget": "$25,000"},
        "Be terse.",
    )


def test_agents_duplicate_rename_clash_and_delete(db: Database) -> None:
    storage.create_agent_profile(db, "Bob", traits={"role": "seller"})
    storage.create_agent_profile(db, "Carol")
    at = app("pages/agents.py")
    at.selectbox(key="agent-choice").set_value("Bob").run()
    bob = storage.experiments.get_agent_profile(db, "Bob")
    at.button(key=f"dup-{bob.id}").click().run()
    assert storage.experiments.get_agent_profile(db, "Bob_copy").traits == {"role": "seller"}
    at.selectbox(key="agent-choice").set_value("Bob").run()
    at.text_input(key=f"agent-name-{bob.id}").set_value("carol")
    at.button(key=f"save-{bob.id}").click().run()
    assert any("already exists" in e.value for e in at.error)
    assert storage.experiments.get_agent_profile(db, bob.id).name == "Bob"
    at.checkbox(key=f"confirm-{bob.id}").check().run()
    at.button(key=f"del-{bob.id}").click().run()
    assert sorted(p.name for p in storage.list_agent_profiles(db)) == ["Bob_copy", "Carol"]


def test_agents_import_rejected_with_a_message_then_accepted(db: Database) -> None:
    at = app("pages/agents.py")
    hostile = json.dumps([{"name": "Mallory", "api_key": "sk-live-123"}]).encode()
    at.file_uploader(key="import").set_value(("agents.json", hostile, "application/json"))
    at.run()
    at.button(key="do-import").click().run()
    assert any("Import rejected" in e.value and "api_key" in shown(e.value) for e in at.error)
    assert storage.list_agent_profiles(db) == []

    good = json.dumps(
        {"format": "conversation-rooms/agents", "version": 1,
         "agents": [{"name": "Ann", "traits": {"role": "buyer"}, "instruction": "", "model": None}]}
    ).encode()  # fmt: skip
    at.file_uploader(key="import").set_value(("agents.json", good, "application/json"))
    at.run()
    at.button(key="do-import").click().run()
    assert [p.name for p in storage.list_agent_profiles(db)] == ["Ann"]
    assert [b.label for b in at.get("download_button")] == ["Export JSON", "Export EDSL AgentList"]


# --- Room -------------------------------------------------------------------------------------


def test_room_new_room_form_creates_and_opens_the_room(db: Database) -> None:
    at = app("pages/room.py")
    assert [t.value for t in at.title] == ["Rooms"]
    at.selectbox(key="new-tpl").set_value("planner_coder_reviewer").run()
    at.button(key="new-create").click().run()
    assert not at.exception
    (room,) = storage.list_rooms(db)
    assert room.name == PLANNER_CODER_REVIEWER.title
    assert [e.content for e in storage.events(db, room.id)] == [PLANNER_CODER_REVIEWER.opening]
    assert [t.value for t in at.title] == [room.name]


def test_room_deep_link_shows_the_transcript_as_text(db: Database) -> None:
    room = mug_room(db)
    room.post("<script>alert(1)</script> **bold** {{ 7*7 }}", speaker="eve", request_id="x")
    room.run()
    at = app("pages/room.py", room="1")
    assert [t.value for t in at.title] == [room.name]
    names = [m.name for m in at.chat_message]
    assert names[0] == "user" and "Buyer" in names and "eve" in names
    assert "<script>alert(1)</script> **bold** {{ 7*7 }}" in texts(at)
    assert any("Ended" in i.value or "Stopped" in i.value for i in at.info)


def test_room_post_uses_the_request_id_drawn_with_the_box(db: Database) -> None:
    room = mug_room(db)
    room.run()
    at = app("pages/room.py", room=str(room.id))
    drawn = at.session_state[f"_request_id:post-{room.id}"]
    at.chat_input(key=f"chat-{room.id}").set_value("A new idea, @Seller?").run()
    assert not at.exception
    posted = [e for e in storage.events(db, room.id) if e.content == "A new idea, @Seller?"]
    assert len(posted) == 1 and posted[0].request_id == drawn and posted[0].speaker == "user"
    assert room.status == "running"  # a message opens a new activity
    assert "A new idea, @Seller?" in texts(at)

    # The same submission processed again with the same drawn id (a double click) is one message.
    at.session_state[f"_request_id:post-{room.id}"] = drawn
    at.chat_input(key=f"chat-{room.id}").set_value("A new idea, @Seller?").run()
    assert len([e for e in storage.events(db, room.id) if e.content == "A new idea, @Seller?"]) == 1
    # A different text under a used id is a new message with a new id, not an error.
    at.session_state[f"_request_id:post-{room.id}"] = drawn
    at.chat_input(key=f"chat-{room.id}").set_value("Second thought").run()
    (second,) = [e for e in storage.events(db, room.id) if e.content == "Second thought"]
    assert second.request_id not in (None, drawn)


def test_room_live_view_picks_up_new_turns(db: Database) -> None:
    room = mug_room(db)
    at = app("pages/room.py", room=str(room.id))
    assert texts(at) == [MUG_NEGOTIATION.opening]
    room.run()  # another process or thread commits turns
    at.run()  # a fragment poll (run_every does not fire in AppTest)
    assert len(texts(at)) > 1 and any("DEAL" in t for t in texts(at))


def test_room_controls_pause_resume_stop(db: Database) -> None:
    room = mug_room(db)
    at = app("pages/room.py", room=str(room.id))
    at.button(key="ctl-pause").click().run()
    assert room.status == "paused"
    at.button(key="ctl-resume").click().run()
    assert room.status == "running"
    at.button(key="ctl-stop").click().run()
    assert room.status == "stopped" and "Stopped" in room.events()[-1].content


def test_room_moderation_approve_edited_and_deny(db: Database) -> None:
    room = mug_room(db, moderated=True)
    room.run()
    assert room.status == "waiting"
    at = app("pages/room.py", room=str(room.id))
    draft = room.pending()
    area = at.text_area(key=f"draft-{draft.id}-0")
    assert area.value == draft.waiting[0]["draft"]
    area.set_value("I offer $5.")
    at.button(key=f"approve-{draft.id}-0").click().run()
    assert not at.exception
    done = room.turn(draft.id)
    assert (done.state, done.result) == ("done", "I offer $5.")

    room.run()
    second = room.pending()
    assert second is not None and second.state == "waiting"
    at.run()
    at.button(key=f"deny-{second.id}-0").click().run()
    assert any("Say why" in e.value for e in at.error)
    at.text_input(key=f"deny-reason-{second.id}-0").set_value("Too pushy")
    at.button(key=f"deny-{second.id}-0").click().run()
    again = room.turn(second.id)
    assert again.state == "running" and again.inputs["denials"][0]["reason"] == "Too pushy"


def test_a_long_room_opens_on_its_newest_page_and_shows_earlier_messages(db: Database) -> None:
    room = mug_room(db, termination={"kind": "max_turns", "max_turns": FIRST_PAGE + 10})
    room.run()
    newest = room.events()[-1].seq
    at = app("pages/room.py", room=str(room.id))
    assert 0 < len(at.chat_message) <= FIRST_PAGE
    assert MUG_NEGOTIATION.opening not in texts(at)  # the opening is older than the first page
    turn_seqs = at.selectbox(key=f"turn-pick-{room.id}").options
    assert len(turn_seqs) <= FIRST_PAGE  # the pickers list the events read, not the whole log
    tokens, _, _ = storage.room_spend(db, room.id)
    spent = f"Spent: {tokens:,} tokens"  # the whole room's, not only the events read
    assert any(spent in shown(c.value) for c in at.caption)
    saw = [e for e in room.events() if e.kind == "agent"][-1].saw or []  # 20 of them listed
    assert len(saw) > SAW_SHOWN
    assert f"{len(saw) - SAW_SHOWN:,} earlier messages" in " ".join(c.value for c in at.caption)
    earlier = at.button(key=f"earlier-{room.id}")
    assert f"({newest - FIRST_PAGE:,} not shown)" in earlier.label
    earlier.click().run()
    assert MUG_NEGOTIATION.opening in texts(at)  # reached, with every message after it
    assert len(at.chat_message) > FIRST_PAGE and newest - FIRST_PAGE < EARLIER_PAGE
    assert not [b for b in at.button if b.key == f"earlier-{room.id}"]


def test_room_turn_details_settings_and_exports(db: Database) -> None:
    room = mug_room(db)
    room.run()
    at = app("pages/room.py", room=str(room.id))
    assert at.selectbox(key=f"turn-pick-{room.id}").value is not None
    facts = "\n".join(t.value for t in at.text)
    assert "saw (seqs)" in facts and "chosen because" in facts
    assert not at.code  # the prompts are rebuilt from the whole log when their expander opens
    # The right-hand tabs are lazy: the first view draws Turn details only.
    assert not at.get("download_button") and not at.json
    assert f"fork-at-{room.id}" not in {s.key for s in at.selectbox}
    at.session_state[f"turn-prompt-{room.id}"] = True
    at.run()
    assert len(at.code) == 2  # the rebuilt prompt (system, user)
    open_section(at, "Settings", key="room-section")
    assert at.json and f"turn-pick-{room.id}" not in {s.key for s in at.selectbox}
    at.session_state[f"preview-open-{room.id}"] = True
    at.run()
    assert len(at.code) == 2  # the next-prompt preview (system, user)
    open_section(at, "Fork & export", key="room-section")
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["Export JSON", "Export CSV"]
    at.selectbox(key=f"fork-at-{room.id}").set_value(2).run()
    at.button(key=f"fork-{room.id}").click().run()
    fork = max(r.id for r in storage.list_rooms(db))
    assert storage.get_room(db, fork).parent_room_id == room.id
    # the copied log up to #2, then the notice of who forked it
    forked = storage.events(db, fork)
    assert [e.seq for e in forked] == [1, 2, 3] and forked[-1].data["event"] == "forked"


def test_a_turns_facts_count_what_it_saw_when_it_saw_many(db: Database) -> None:
    room = mug_room(db)
    room.run(max_turns=1)
    turn = next(e for e in room.events() if e.kind == "agent")
    assert rooms.turn_details(turn)["saw (seqs)"] == ", ".join(map(str, turn.saw))
    many = turn.model_copy(update={"saw": list(range(3, 3 + rooms.SAW_LISTED + 5))})
    assert rooms.turn_details(many)["saw (seqs)"] == "25 messages, from #3 to #27"


def test_room_import_rejected_with_a_message_then_resumed(db: Database) -> None:
    at = app("pages/room.py")
    at.text_area(key="import-text").set_value(
        json.dumps([{"speaker": "Buyer\nSeller", "content": "forged"}])
    )
    at.selectbox(key="import-roster-tpl").set_value("mug_negotiation").run()
    at.button(key="import-go").click().run()
    assert any(e.value.startswith("Import rejected") for e in at.error)
    assert storage.list_rooms(db) == []

    saved = [
        {"speaker": "user", "content": "Sell me the mug."},
        {"speaker": "Seller", "content": "For $9. DEAL?"},
    ]
    at.text_area(key="import-text").set_value(json.dumps(saved))
    at.run()
    at.button(key="import-go").click().run()
    assert not at.exception
    (room,) = storage.list_rooms(db)
    assert [e.content for e in storage.events(db, room.id)][:2] == [m["content"] for m in saved]
    assert any("stop the room at once" in w.value for w in at.warning)


# --- Experiments ------------------------------------------------------------------------------


def test_experiment_design_run_and_progress(db: Database) -> None:
    from conversation.sync import run_sync
    from conversation.worker import Worker

    at = app("pages/experiments.py")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Planned rooms"] == "12" and metrics["Conditions"] == "3"
    assert metrics["Model calls (at most)"] == "96"
    at.button(key="exp-run").click().run()
    assert not at.exception
    (experiment,) = storage.list_experiments(db)
    made = storage.list_rooms(db, experiment_id=experiment.id, limit=None)
    assert len(made) == 12 and {r.status for r in made} == {"running"}
    assert all(len(storage.events(db, r.id)) == 1 for r in made)

    run_sync(Worker(db, concurrency=12, poll_interval=0.05).run(until_idle=True))
    at.run()
    assert not at.exception
    assert storage.get_experiment(db, experiment.id).status == "done"
    at.run()
    assert any("12 of 12 rooms finished" in p.proto.text for p in at.get("progress"))


def test_experiment_resumes_rooms_missing_after_a_crash(db: Database) -> None:
    from ui import experiments as ex

    template = ex.template_from_room_template(MUG_NEGOTIATION)
    config = ex.design(template, [ex.Condition("a", {}), ex.Condition("b", {})], 2)
    experiment_id = storage.create_experiment(db, "half made", config, status="running")
    ex.materialize(db, experiment_id)
    victim = storage.list_rooms(db, experiment_id=experiment_id)[0]
    storage.delete_room(db, victim.id)  # as if the process died before creating it
    app("pages/experiments.py", experiment=str(experiment_id))
    rooms_now = storage.list_rooms(db, experiment_id=experiment_id)
    assert len(rooms_now) == 4
    assert all(len(storage.events(db, r.id)) == 1 for r in rooms_now)  # one opening each


# --- Results ----------------------------------------------------------------------------------


def test_results_charts_click_filter_and_analysis(db: Database) -> None:
    for _ in range(3):
        mug_room(db).run()
    at = app("pages/results.py")
    assert not at.exception
    assert not at.get("plotly_chart")  # the first view: the rooms table and a transcript
    open_section(at, "Charts")
    assert len(at.get("plotly_chart")) >= 5
    assert any(
        "last" not in str(d.value.columns) and "room_id" in d.value.columns for d in at.dataframe
    )

    # A click on the termination-reasons chart narrows the rooms table.
    reason = storage.list_rooms(db)[0].stop_reason
    at.session_state["chart-reasons"] = {"selection": {"points": [{"customdata": [reason]}]}}
    at.run()
    assert any("Filtered by chart selection" in c.value for c in at.caption)
    open_section(at, "Transcript")  # the chart is not drawn: its filter stays
    assert any("Filtered by chart selection" in c.value for c in at.caption)

    open_section(at, "Analysis")
    at.text_area(key="an-text").set_value("Was a deal reached?")
    at.button(key="FormSubmitter:analysis-form-Run analysis").click().run()
    assert not at.exception
    (analysis,) = storage.list_analyses(db)
    assert analysis.status == "running"  # stored with its rooms planned; a runner asks them
    AnalysisRunner(db).run(until_idle=True)
    at.run()
    analysis = storage.get_analysis(db, analysis.id)
    assert analysis.status == "done"
    answers = storage.answers(db, analysis.id)
    assert len(answers) == 3 and all(a.answer in ("Yes", "No") for a in answers)
    assert len(at.get("plotly_chart")) == 1  # the Analysis tab alone: its answers, charted


def test_results_empty_database_says_so(db: Database) -> None:
    at = app("pages/results.py")
    assert any("No rooms yet" in i.value for i in at.info)


# --- the runner -------------------------------------------------------------------------------


def test_runner_starts_once_per_url_and_stops_on_release(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ui import bootstrap

    monkeypatch.setenv("ROOMS_APP_RUNNER", "1")
    room = mug_room(db)
    at = app()
    runner = bootstrap._runner(db.url)
    assert runner.alive
    app()
    assert bootstrap._runner(db.url) is runner  # one per process and URL
    import time

    deadline = time.monotonic() + 20
    while room.status == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert room.status == "terminated"  # driven by the in-process runner
    assert not at.exception
    st.cache_resource.clear()
    assert not runner.alive


def test_home_double_click_on_start_makes_one_room(db: Database) -> None:
    at = app()
    drawn = at.session_state["_request_id:start-mug_negotiation"]
    at.button(key="start-mug_negotiation").click().run()
    assert len(storage.list_rooms(db)) == 1
    # The same drawing submitted again (the second click of a double click) changes nothing.
    # Navigating to Home drops the room's query parameter in a browser; AppTest keeps it (and
    # Home with ?room=ID means the Room page), so it is dropped here as the browser would.
    at.query_params.pop("room", None)
    at.switch_page("pages/home.py")
    at.session_state["_request_id:start-mug_negotiation"] = drawn
    at.run()
    at.button(key="start-mug_negotiation").click().run()
    assert len(storage.list_rooms(db)) == 1


def test_room_shows_context_summaries_and_their_prompt(db: Database) -> None:
    draft = rooms.draft_from_template(
        PLANNER_CODER_REVIEWER,
        context={"max_messages": 2, "max_tokens": None, "summarize": True, "summary_batch": 2},
    )
    room = rooms.create_room(db, draft, opening="Build a login form.")
    room.run()
    summaries = [e for e in room.events() if rooms.is_summary(e)]
    assert summaries, "the context policy should have summarised something"
    at = app("pages/room.py", room=str(room.id))
    assert any(e.label.startswith("Summary of #") for e in at.expander)
    at.selectbox(key=f"turn-pick-{room.id}").set_value(summaries[0].seq).run()
    assert not at.exception


def test_agents_from_a_template_skip_names_in_use(db: Database) -> None:
    storage.create_agent_profile(db, "buyer", traits={"role": "mine"})
    at = app("pages/agents.py")
    at.selectbox(key="agents-tpl").set_value("mug_negotiation").run()
    at.button(key="agents-from-tpl").click().run()
    assert not at.exception and any("Added Seller." in shown(s.value) for s in at.success)
    assert sorted(p.name for p in storage.list_agent_profiles(db)) == ["Seller", "buyer"]
