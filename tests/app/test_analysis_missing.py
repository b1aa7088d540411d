"""Analysis that counts what is missing (issue 24): the outcomes chart shows the answers there
are (a failed answer is not an answer, and does not hide the others), each condition's n says
answered of planned, and an analysis with a failed answer is still charted."""

from __future__ import annotations

import pandas as pd

from ui.results import condition_charts, tables


def test_the_chart_says_answered_of_planned_and_drops_no_condition() -> None:
    answers = pd.DataFrame(
        {"room_id": [1, 2, 3, 4], "condition": ["a", "a", "b", "b"],
         "answer": ["Yes", None, "Yes", "No"]}
    )  # fmt: skip
    rooms = pd.DataFrame({"room_id": [1, 2, 3, 4, 5], "condition": ["a", "a", "b", "b", "c"]})
    names = {"a": "value $10", "b": "value $6", "c": "value $2"}
    planned = tables.planned_by_label(rooms, names)
    assert planned == {"value $10": 2, "value $6": 2, "value $2": 1}
    fig = condition_charts.outcomes_by_condition(
        answers, question="deal", names=names, planned=planned
    )
    rates = {x: y for x, y in zip(fig.data[0].x, fig.data[0].y, strict=True) if y == y}
    assert rates == {"value $10": 1.0, "value $6": 0.5}  # value $2: no answer, no bar
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks == ["value $10 (n=1 of 2)", "value $6 (n=2)", "value $2 (n=0 of 1)"]
    # without a plan: the n of the answers, as before
    fig = condition_charts.outcomes_by_condition(answers, question="deal", names=names)
    assert list(fig.layout.xaxis.ticktext) == ["value $10 (n=1)", "value $6 (n=2)"]


def test_only_failed_answers_say_so() -> None:
    failed = pd.DataFrame({"room_id": [1], "condition": ["a"], "answer": [None]})
    fig = condition_charts.outcomes_by_condition(failed, question="deal")
    assert not fig.data and "1 failed" in fig.layout.annotations[0].text


def test_an_analysis_with_a_failed_answer_is_still_charted(db) -> None:  # type: ignore[no-untyped-def]
    import storage

    experiment = storage.create_experiment(db, "exp", {"conditions": []})
    question = {"text": "Was a deal reached?", "type": "yes_no"}
    assert tables.latest_analysis(db, experiment) is None
    done = storage.create_analysis(db, "first", question, experiment_id=experiment, status="done")
    assert tables.latest_analysis(db, experiment).id == done
    partly = storage.create_analysis(
        db, "second", question, experiment_id=experiment, status="failed"
    )
    assert tables.latest_analysis(db, experiment).id == partly  # its answers are shown
    storage.create_analysis(db, "third", question, experiment_id=experiment, status="running")
    assert tables.latest_analysis(db, experiment).id == partly  # not one still asking
