"""Managing many rooms and experiments, short names and statistics, through AppTest: Home's
search, filters and pages; archive and a confirmed delete; the Room picker reaching any room; a
design's short names in Results; intervals and n on the charts."""

from __future__ import annotations

import zlib

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import storage
from storage import Database
from tests.app.page_support import APP, app, mug_room, open_section, results_rooms, titles
from ui.results import charts, condition_charts
from ui.room.templates import MUG_NEGOTIATION


def _home_table(at: AppTest) -> pd.DataFrame:
    (table,) = [d.value for d in at.dataframe if "last_message" in d.value.columns]
    return table


def test_home_searches_filters_pages_and_hides_experiment_and_archived_rooms(db: Database) -> None:
    for i in range(30):
        storage.create_room(db, f"plain {i}")
    target = storage.create_room(db, "Needle in a haystack")
    experiment = storage.create_experiment(db, "study", status="done")
    for i in range(3):
        storage.create_room(db, f"exp room {i}", experiment_id=experiment, condition="c")
    archived = storage.create_room(db, "old stuff")
    storage.set_room_archived(db, archived)

    at = app()
    table = _home_table(at)
    assert len(table) == 25  # one page
    assert not set(table["name"]) & {"exp room 0", "old stuff"}
    assert any("3 experiment room(s) not listed" in c.value for c in at.caption)
    at.number_input(key="home-page").set_value(2).run()
    assert len(_home_table(at)) == 31 - 25  # 30 plain rooms and the needle

    at.text_input(key="home-search").set_value("NEEDLE").run()
    assert list(_home_table(at)["room_id"]) == [target]
    at.text_input(key="home-search").set_value("").run()
    at.selectbox(key="home-experiment").set_value(f"#{experiment} study").run()
    assert set(_home_table(at)["name"]) == {"exp room 0", "exp room 1", "exp room 2"}
    at.selectbox(key="home-experiment").set_value("Rooms outside experiments").run()
    at.toggle(key="home-archived").set_value(True).run()
    at.selectbox(key="home-sort").set_value("name").run()
    assert "old stuff" in set(_home_table(at)["name"])
    at.text_input(key="home-search").set_value("no such room").run()
    assert any("No room matches these filters" in i.value for i in at.info)


def test_home_manage_renames_archives_and_deletes_after_a_second_click(db: Database) -> None:
    room = mug_room(db)
    room.run()
    at = app()
    at.number_input(key="home-manage-id").set_value(room.id).run()
    at.text_input(key=f"home-rename-{room.id}").set_value("Renamed room").run()
    at.button(key=f"home-rename-btn-{room.id}").click().run()
    assert storage.get_room(db, room.id).name == "Renamed room"
    assert any("renamed" in s.value for s in at.success)

    at.button(key=f"home-archive-{room.id}").click().run()
    assert storage.get_room(db, room.id).archived_at is not None
    at.button(key=f"home-archive-{room.id}").click().run()  # now "Unarchive"
    assert storage.get_room(db, room.id).archived_at is None

    at.button(key=f"home-delete-{room.id}").click().run()
    assert storage.get_room(db, room.id)  # the first click only asks
    assert any("removes its" in w.value and "for good" in w.value for w in at.warning)
    at.button(key=f"home-delete-no-{room.id}").click().run()
    assert storage.get_room(db, room.id)
    at.button(key=f"home-delete-{room.id}").click().run()
    at.button(key=f"home-delete-yes-{room.id}").click().run()
    assert not at.exception
    assert storage.count_rooms(db) == 0 and storage.events(db, room.id) == []


def test_home_refuses_to_delete_a_room_a_worker_holds(db: Database) -> None:
    room_id = storage.create_room(db, "busy", status="running")
    storage.acquire_lease(db, room_id, "worker-1", 60)
    at = app()
    at.number_input(key="home-manage-id").set_value(room_id).run()
    at.button(key=f"home-delete-{room_id}").click().run()
    assert any("stop the room first" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == f"home-delete-yes-{room_id}"]
    assert storage.get_room(db, room_id)


def test_room_picker_reaches_rooms_beyond_the_newest_hundreds(db: Database) -> None:
    oldest = mug_room(db, name="the very first room").id
    with db.write_connection() as conn:  # 250 newer rooms, quickly
        conn.execute(
            storage.Room.__table__.insert(),
            [
                {"name": f"filler {i}", "status": "idle", "config": {}, "created_at": db.now(),
                 "updated_at": db.now()}
                for i in range(250)
            ],
        )  # fmt: skip
    at = app("pages/room.py")
    picker = at.selectbox(key="room-pick")
    assert oldest not in picker.options and len(picker.options) == 101  # "+ New room" and 100
    at.number_input(key="room-find-page").set_value(3).run()
    assert f"#{oldest} the very first room" in at.selectbox(key="room-pick").options
    at.text_input(key="room-find").set_value("very first").run()
    assert at.selectbox(key="room-pick").options == ["+ New room", f"#{oldest} the very first room"]
    at.selectbox(key="room-pick").set_value(oldest).run()
    assert not at.exception
    assert titles(at) == ["the very first room"]


def test_experiment_short_names_reach_results_with_intervals_and_n(db: Database) -> None:
    from conversation.sync import run_sync
    from conversation.worker import Worker

    at = app("pages/experiments.py")
    at.number_input(key="exp-reps").set_value(2).run()
    labels = list(MUG_NEGOTIATION.conditions)  # the template's suggested conditions
    key = f"exp-shorts-{zlib.crc32(chr(0).join(labels).encode())}"
    at.session_state[key] = {
        "edited_rows": {0: {"short name": "first"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    at.button(key="exp-run").click().run()
    assert not at.exception
    (experiment,) = storage.list_experiments(db)
    shorts = [c["short"] for c in experiment.config["conditions"]]
    assert shorts[0] == "first" and shorts[1:] == [None, None]
    run_sync(Worker(db, concurrency=6, poll_interval=0.05).run(until_idle=True))

    at = open_section(app("pages/results.py", experiment=str(experiment.id)), "Statistics")
    rooms_table = results_rooms(at)
    assert "first" in set(rooms_table["short"])
    means = next(d.value for d in at.dataframe if {"mean", "low", "high"} <= set(d.value.columns))
    assert means["condition"].iloc[0] == "first" and list(means["n"]) == [2, 2, 2]
    assert any("Difference between two conditions" in t.value for t in at.text)
    assert any(t.value.startswith("messages per room: first - ") for t in at.text)


def test_outcome_chart_has_wilson_error_bars_and_n_on_each_tick() -> None:
    answers = pd.DataFrame(
        {
            "room_id": range(20),
            "condition": ["temp=0.7"] * 10 + ["temp=0.2"] * 10,
            "answer": ["Yes"] * 7 + ["No"] * 3 + ["Yes"] * 3 + ["No"] * 7,
        }
    )
    names = {"temp=0.2": "t0.2", "temp=0.7": "t0.7"}  # design order: t0.2 first
    fig = condition_charts.outcomes_by_condition(answers, question="deal", names=names)
    bar = fig.data[0]
    assert list(bar.x) == ["t0.2", "t0.7"] and list(bar.y) == [0.3, 0.7]
    assert list(fig.layout.xaxis.ticktext) == ["t0.2 (n=10)", "t0.7 (n=10)"]
    assert bar.error_y.array[1] == pytest.approx(0.8922 - 0.7, abs=1e-4)
    assert bar.error_y.arrayminus[1] == pytest.approx(0.7 - 0.3968, abs=1e-4)
    assert [c[0] for c in bar.customdata] == ["temp=0.2", "temp=0.7"]  # clicks filter the stored
    rooms = answers.assign(messages=list(range(20)))
    metric = condition_charts.metric_by_condition(rooms, "messages", names=names)
    assert list(metric.layout.xaxis.ticktext) == ["t0.2 (n=10)", "t0.7 (n=10)"]
    assert "95% t CI" in metric.layout.title.text


def test_every_chart_says_its_n() -> None:
    events = pd.DataFrame(
        {
            "room_id": [1, 1, 2], "seq": [1, 2, 1], "kind": ["human", "agent", "agent"],
            "state": [None, "done", "done"], "speaker": ["u", "A", "A"], "words": [3, 4, 5],
            "latency": [None, 0.5, 0.7], "input_tokens": [0, 3, 4], "output_tokens": [0, 2, 2],
            "cost": [0, 0.1, 0.1],
        }
    )  # fmt: skip
    rooms = pd.DataFrame({"room_id": [1, 2], "status": ["settled"] * 2, "stop_reason": [None] * 2})
    titles = [
        charts.speaker_activity(events).layout.title.text,
        charts.message_length(events).layout.title.text,
        charts.latency(events).layout.title.text,
        charts.tokens_and_cost(events).layout.title.text,
        charts.stop_reasons(rooms).layout.title.text,
    ]
    assert "n = 3 messages in 2 rooms" in titles[0] and "n = 2 turns in 2 rooms" in titles[2]
    assert all("n = " in t for t in titles), titles
    assert APP  # the app under test is the same one test_pages drives


def test_experiment_manage_renames_archives_and_deletes_it_with_its_rooms(db: Database) -> None:
    from ui import experiments as ex

    template = ex.template_from_room_template(MUG_NEGOTIATION)
    config = ex.design(template, [ex.Condition("a", {}), ex.Condition("b", {})], 1)
    experiment = storage.create_experiment(db, "study", config, status="done")
    rooms_of = [
        storage.create_room(db, f"r{c}", experiment_id=experiment, condition=c, replicate=1)
        for c in ("a", "b")
    ]
    at = app("pages/experiments.py", experiment=str(experiment))
    at.text_input(key=f"exp-rename-{experiment}").set_value("Study two").run()
    at.button(key=f"exp-rename-btn-{experiment}").click().run()
    assert storage.get_experiment(db, experiment).name == "Study two"
    at.button(key=f"exp-archive-{experiment}").click().run()
    assert storage.get_experiment(db, experiment).archived_at is not None
    assert storage.count_rooms(db, archived=True) == 2
    assert not at.exception  # still shown: its link reaches it
    at.button(key=f"exp-delete-{experiment}").click().run()
    assert any("also deletes its 2 room" in w.value for w in at.warning)
    at.button(key=f"exp-delete-yes-{experiment}").click().run()
    assert not at.exception
    assert storage.list_experiments(db) == [] and storage.count_rooms(db) == 0
    assert all(storage.events(db, r) == [] for r in rooms_of)
