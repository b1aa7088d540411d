"""The Results page's Judges tab: a rubric from the codebook or by hand, a panel run with its
spend, scores by condition, the agreement view (raters x raters with intervals, a judge against
the coders, the units they disagree on with the message shown), and the downloads. Labels and
reasons are shown literally, never as markdown."""

from __future__ import annotations

from typing import Any

import pandas as pd
from streamlit.testing.v1 import AppTest

import storage
from conversation.analysis import coding, judges
from storage import Database
from tests.app.page_support import app, open_section, shown

HOSTILE = "**bold** [x](http://127.0.0.1:9/p.png)"
MESSAGES = ["I give up 5 dollars", "Pay or else", "What is your price?"]
REASON = "**bold** ![img](http://127.0.0.1:9/r.png) <b>x</b>"


def _study(db: Database) -> tuple[int, list[int]]:
    experiment = storage.create_experiment(db, "mugs", {}, status="done")
    for label in ("concession", HOSTILE):
        coding.add_label(db, label, experiment_id=experiment)
    rooms = []
    for i in range(2):
        room = storage.create_room(db, f"r{i}", {"roster": []}, experiment_id=experiment, condition=f"c{i}")  # fmt: skip
        for text in MESSAGES:
            event = storage.append_message(db, room, "human", "user", text)
        rooms.append(room)
        coding.tag_message(db, storage.events(db, room)[0].id, "concession", by="ann")
        coding.tag_message(db, event.id, HOSTILE, by="ann")
    return experiment, rooms


def _frames(at: AppTest) -> list[pd.DataFrame]:
    return [d.value for d in at.dataframe]


def _no_markup(at: AppTest) -> None:
    shown_as_markdown = [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert not [m for m in shown_as_markdown if "**bold**" in m or "](http" in m or "<b>" in m]


def test_a_codebook_rubric_is_scored_by_a_panel_and_compared_with_the_coders(db: Database) -> None:
    experiment, rooms = _study(db)
    at = open_section(app("pages/results.py", experiment=str(experiment)), "Judges")
    assert at.selectbox(key="jd-pick").options == []
    at.button(key="jd-from-book").click().run()
    assert not at.exception, at.exception
    [stored] = judges.stored_rubrics(db, experiment_id=experiment)
    assert stored.rubric.dimension("code").scale.labels == ("concession", HOSTILE, "none")
    at.number_input(key="jd-count").set_value(2).run()
    at.text_input(key="jd-jname-1").set_value("second").run()
    at.button(key="jd-run").click().run()
    assert not at.exception, at.exception
    assert any("12 asked" in s.value for s in at.success)  # 6 messages x 2 judges
    [run] = judges.runs(db, stored.id)
    assert (run.asked, run.failed, run.cost) == (12, 0, 0.0)
    scores = next(f for f in _frames(at) if "rater" in f.columns and "reason" in f.columns)
    assert {"human:ann", "panel", "second"} <= set(scores["rater"])
    assert HOSTILE in set(scores["value"])  # the coder's label, literally, in a dataframe
    assert at.get("plotly_chart")  # scores by condition
    table = next(f for f in _frames(at) if "human:ann" in f.index and "second" in f.columns)
    assert "n=6" in table.loc["human:ann", "second"]  # the estimate, its interval and n
    confusion = next(f for f in _frames(at) if "(rows)" in str(f.index.name))
    assert confusion.to_numpy().sum() == 6  # each unit the judge and ann both rated
    _no_markup(at)


def test_selecting_a_disagreement_shows_the_message_and_the_reason_literally(db: Database) -> None:
    from conversation.models import OfflineModel

    experiment, rooms = _study(db)
    rubric = coding_rubric(db, experiment)

    def hostile(prompt: str, system: str) -> str:  # a judge whose reason holds markup
        return REASON if "why?" in prompt else "concession"

    judge = judges.Judge("j", OfflineModel(func=hostile))
    judges.run_judges(db, rubric, [judge], rooms, experiment_id=experiment)
    at = open_section(app("pages/results.py", experiment=str(experiment)), "Judges")
    differ = at.dataframe(key="ag-differ").value
    assert len(differ) == 4  # "Pay or else" and the threat, in both rooms
    at.session_state["ag-differ"] = {"selection": {"rows": [0], "columns": []}}
    at.run()
    assert not at.exception, at.exception
    seq = int(differ.iloc[0]["seq"])
    assert any(c.value == MESSAGES[seq - 1] for c in at.code)  # the message, as plain text
    assert any(t.value == f"The judge's reason: {REASON}" for t in at.text)
    _no_markup(at)


def coding_rubric(db: Database, experiment: int) -> Any:
    from conversation.analysis.judges.rubrics import Rubric

    return Rubric.from_codebook("book", coding.codebook(db, experiment_id=experiment), none_label="none")  # fmt: skip


def test_a_rubric_written_by_hand_is_saved_as_a_new_version(db: Database) -> None:
    experiment, _ = _study(db)
    at = open_section(app("pages/results.py", experiment=str(experiment)), "Judges")
    at.text_input(key="jd-name").set_value("tone").run()
    at.session_state["jd-rows"] = {
        "edited_rows": {0: {"levels": "3", "anchors": "1: cold; 3: warm"}},
        "added_rows": [
            {"name": "deal", "description": "A deal?", "kind": "nominal", "levels": "yes, no"}
        ],  # fmt: skip
        "deleted_rows": [],
    }
    at.button(key="jd-save").click().run()
    assert not at.exception, at.exception
    [stored] = judges.stored_rubrics(db, experiment_id=experiment)
    tone = stored.rubric.dimension("tone")
    assert (tone.scale.points, tone.anchors) == (3, {"1": "cold", "3": "warm"})
    assert stored.rubric.dimension("deal").scale.labels == ("yes", "no")
    at.session_state["jd-rows"] = {"edited_rows": {0: {"levels": "zero"}}, "added_rows": [], "deleted_rows": []}  # fmt: skip
    at.button(key="jd-save").click().run()
    assert any("dimensions[0].scale" in shown(e.value) for e in at.error)  # the field is named
