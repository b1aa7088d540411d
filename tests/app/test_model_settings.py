"""The model settings and the model cache in the app: the room form stores the output limit,
timeout, context window and cache switch; turn details say whether an answer came from the
cache; an experiment is re-run from the cache with one button."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic.fields import FieldInfo
from streamlit.testing.v1 import AppTest

import storage
from conversation.models.settings import DEFAULT_MAX_OUTPUT_TOKENS
from conversation.sync import run_sync
from conversation.worker import Worker
from storage import Database
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION

APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")  # what app.py serves


def app(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(page)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_room_form_stores_the_model_settings(db: Database) -> None:
    at = app("pages/room.py")
    at.selectbox(key="new-tpl").set_value("planner_coder_reviewer").run()
    at.number_input(key="new-model-settings-max-output").set_value(200).run()
    at.number_input(key="new-model-settings-timeout").set_value(45.0).run()
    at.number_input(key="new-model-settings-window-tokens").set_value(6000).run()
    at.checkbox(key="new-model-settings-use-cache").uncheck().run()
    at.button(key="new-create").click().run()
    assert not at.exception, at.exception
    (room,) = storage.list_rooms(db)
    config = room.config
    assert (config["max_output_tokens"], config["request_timeout"]) == (200, 45.0)
    assert (config["context_window"], config["use_cache"]) == (6000, False)


def test_the_form_defaults_keep_the_cache_on_and_the_window_the_models(db: Database) -> None:
    at = app("pages/room.py")
    at.selectbox(key="new-tpl").set_value("planner_coder_reviewer").run()
    at.button(key="new-create").click().run()
    (room,) = storage.list_rooms(db)
    assert room.config["use_cache"] is True and room.config["context_window"] is None
    assert room.config["max_output_tokens"] == DEFAULT_MAX_OUTPUT_TOKENS == 200


def test_turn_details_say_whether_the_answer_came_from_the_cache(db: Database) -> None:
    draft = rooms.draft_from_template(MUG_NEGOTIATION)
    room = rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening, request_id="o-1")
    room.run()
    at = app("pages/room.py", room=str(room.id))
    facts = "\n".join(t.value for t in at.text)  # the turn's facts: "name  value" lines
    assert re.search(r"^from the model cache +False$", facts, re.MULTILINE), facts


def test_an_experiment_is_rerun_from_the_cache_with_one_button(db: Database) -> None:
    at = app("pages/experiments.py")
    at.number_input(key="exp-reps").set_value(1).run()
    at.button(key="exp-run").click().run()
    (experiment,) = storage.list_experiments(db)
    run_sync(Worker(db, concurrency=4, poll_interval=0.05).run(until_idle=True))
    at.run()
    at.button(key="exp-rerun").click().run()
    assert not at.exception, at.exception
    rerun = max(e.id for e in storage.list_experiments(db))
    assert rerun != experiment.id
    assert at.query_params["experiment"] in (str(rerun), [str(rerun)])
    run_sync(Worker(db, concurrency=4, poll_interval=0.05).run(until_idle=True))
    turns = [
        e
        for r in storage.list_rooms(db, experiment_id=rerun, limit=None)
        for e in storage.events(db, r.id)
        if e.kind == "agent"
    ]
    assert turns and all(e.data["cache_hit"] for e in turns)


def test_the_form_defaults_come_from_the_settings_declaration(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new-room form reads each default from ``RoomConfigBase``: change the declared
    default and the form shows the new one."""
    from conversation.rooms.config import settings

    declared = settings.FIELDS["max_output_tokens"]
    monkeypatch.setitem(
        settings.FIELDS, "max_output_tokens", FieldInfo.merge_field_infos(declared, default=321)
    )
    at = app("pages/room.py")
    at.selectbox(key="new-tpl").set_value("planner_coder_reviewer").run()
    assert at.number_input(key="new-model-settings-max-output").value == 321
    assert at.number_input(key="new-model-settings-timeout").value == settings.setting_default(
        "request_timeout"
    )
    assert at.checkbox(key="new-model-settings-use-cache").value is settings.setting_default(
        "use_cache"
    )
