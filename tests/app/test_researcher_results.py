"""Results as a researcher reads them (issue 35): statuses in the words every page uses, a means
plot whose last tick is at or above its highest mean, "no interval" where values do not vary,
the Judges chart in design order with a legend and its axis within the scale, the answers table
with the answer first, and a branch's status in its own cell of the tree."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd

from ui.results import charts, condition_charts, tables
from ui.results.coding import tag_counts_chart
from ui.results.condition_stats import with_intervals
from ui.results.judges import condition_chart


def test_statuses_are_in_the_words_every_page_uses() -> None:
    rooms = pd.DataFrame(
        {"room_id": [1, 2], "name": ["a", "b"], "status": ["terminated", "running"],
         "stop_reason": [None, None], "condition": [None, None]}
    )  # fmt: skip
    assert list(tables.rooms_table(rooms)["status"]) == ["ended", "running"]
    assert list(charts.charted_reasons(rooms)) == ["(ended)", "(running)"]
    figure = charts.stop_reasons(rooms)
    assert "(ended)" in list(figure.data[0].y) and "terminated" not in str(figure.data[0].y)
    assert list(tables.filter_rooms(rooms, stop_reasons=["(ended)"])["room_id"]) == [1]


def test_the_means_axis_ends_on_a_tick_at_or_above_the_highest_mean() -> None:
    rooms = pd.DataFrame(
        {"room_id": range(6), "condition": ["a"] * 3 + ["b"] * 3,
         "messages": [9, 10, 11, 17, 18, 19]}
    )  # fmt: skip
    figure = condition_charts.metric_by_condition(rooms, "messages")
    axis = figure.layout.yaxis
    top_tick = axis.tick0 + axis.dtick * math.floor((axis.range[1] - axis.tick0) / axis.dtick)
    assert top_tick >= 19 and axis.range[1] > top_tick  # the highest point under a tick, drawn
    bounded = condition_charts.nice_axis([1, 5], [-22, 28], bounds=(1.0, 5.0))
    assert bounded["range"][0] > 0 and bounded["range"][1] < 6  # a 1..5 scale's axis


def test_a_condition_whose_values_do_not_vary_says_no_interval() -> None:
    means = pd.DataFrame(
        {"condition": ["a", "b"], "n": [3, 3], "mean": [4.0, 2.5],
         "low": [float("nan"), 1.9], "high": [float("nan"), 3.1]}
    )  # fmt: skip
    assert list(with_intervals(means)["interval"]) == ["no interval", "[1.9, 3.1]"]


def test_the_judges_chart_is_in_design_order_with_a_legend_within_the_scale() -> None:
    per = pd.DataFrame(
        {"condition": ["zeta", "alpha"], "label": [None, None], "n": [2, 2],
         "estimate": [3.0, 4.5], "low": [1.0, 4.0], "high": [5.0, 5.0]}
    )  # fmt: skip
    names = {"zeta": "z", "alpha": "a"}  # the design's order: zeta first
    figure = condition_chart(per, "warmth", "panel", names, (1.0, 5.0))
    assert list(figure.layout.xaxis.categoryarray) == ["z", "a"]
    assert figure.layout.showlegend is True and figure.data[0].name == "mean"
    low, high = figure.layout.yaxis.range
    assert 0 < low <= 1 and 5 <= high < 6


def test_the_answers_table_puts_the_answer_first() -> None:
    answers = pd.DataFrame(
        {"room_id": [3], "name": ["a long room name " * 4], "experiment_id": [1],
         "condition": ["value $10, cost $4"], "replicate": [0], "status": ["terminated"],
         "state": ["answered"], "answer": ["Yes"], "comment": [None], "model": ["m"],
         "cost": [0.0], "error_type": [None], "error_message": [None]}
    )  # fmt: skip
    table = tables.answers_table(answers, {"value $10, cost $4": "v$10"})
    assert list(table.columns[:4]) == ["answer", "state", "error_message", "comment"]
    assert table["short"].iloc[0] == "v$10"


def test_a_branch_carries_its_status_on_its_own_line() -> None:
    from ui.room.branches import tree_line, tree_rows

    family = [
        SimpleNamespace(
            id=1, name="mug", parent_room_id=None, parent_seq=None, status="terminated"
        ),
        SimpleNamespace(id=2, name="fork", parent_room_id=1, parent_seq=3, status="running"),
    ]
    rows = tree_rows(family, 2)
    assert [r["branch"].strip() for r in rows] == ["#1 mug (ended)", "└ ▶ #2 fork (running)"]
    assert all("status" not in r for r in rows)
    assert [tree_line(r).strip() for r in rows] == [
        "#1 mug (ended)",
        "└ ▶ #2 fork (running), forked at #3",
    ]  # one line of plain text each, which wraps in the narrow column


def test_a_chart_of_one_answer_or_one_speaker_has_its_legend() -> None:
    """Issue 35: plotly leaves out the legend of a single trace, so a chart whose one bar or
    series was an answer or a speaker did not say which."""
    answers = pd.DataFrame({"room_id": [1, 2], "condition": ["a", "b"], "answer": ["Seller"] * 2})
    figure = condition_charts.outcomes_by_condition(answers, question="who gave in")
    assert figure.layout.showlegend is True and [t.name for t in figure.data] == ["Seller"]
    events = pd.DataFrame(
        {"room_id": [1, 1], "seq": [1, 2], "kind": ["agent"] * 2, "state": ["done"] * 2,
         "speaker": ["Buyer"] * 2, "words": [4, 6]}
    )  # fmt: skip
    figure = charts.message_length(events)
    assert figure.layout.showlegend is True and [t.name for t in figure.data] == ["Buyer"]
    rooms = pd.DataFrame(
        {"room_id": [1], "name": ["a"], "status": ["terminated"], "stop_reason": [None],
         "condition": [None]}
    )  # fmt: skip
    assert not charts.stop_reasons(rooms).layout.showlegend  # an unnamed bar: no "trace 0"
    tags = pd.DataFrame({"condition": ["price $8"] * 2, "label": ["concession", "threat"]})
    figure = tag_counts_chart(tags)
    assert figure.layout.showlegend is True and [t.name for t in figure.data] == ["price $8"]
