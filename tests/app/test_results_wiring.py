"""Results' Statistics and Judges tabs as the page draws them (issue 35): the helpers that fix a
zero-variance interval, the design order and the scale's bounds are tested on their own in
``test_researcher_results``; these tests check that the page passes them what they need (a
Statistics table that says "no interval", a Judges chart in design order within its scale)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from streamlit.testing.v1 import AppTest

import storage
from conversation.analysis import judges
from storage import Database
from tests.app.page_support import app, open_section

#: A design whose order is not alphabetical: every table and chart lists "zeta" first.
DESIGN = {"conditions": [{"label": "zeta"}, {"label": "alpha"}]}


def _experiment(db: Database, messages: dict[str, list[int]]) -> tuple[int, list[int]]:
    """An ended experiment of DESIGN; per condition, one room per count with that many
    messages (each opening with "score low" or "score high" for the judge)."""
    experiment = storage.create_experiment(db, "order", DESIGN, status="done")
    rooms = []
    for condition, counts in messages.items():
        for i, count in enumerate(counts):
            room = storage.create_room(
                db,
                f"{condition} {i}",
                {"roster": []},
                experiment_id=experiment,
                condition=condition,
            )
            for k in range(count):
                word = "high" if (i % 2 and condition == "alpha") else "low"
                storage.append_message(db, room, "human", "user", f"score {word} {k}")
            rooms.append(room)
    return experiment, rooms


def _figure(at: AppTest, key: str) -> Any:
    """The plotly figure the page drew under ``key``."""
    import plotly.io

    [chart] = [c for c in at.get("plotly_chart") if key in c.proto.id]
    return plotly.io.from_json(chart.proto.spec)


def _numbers(values: Any) -> list[float]:
    """A figure's numbers, whether listed or sent as plotly's typed array (base64)."""
    import base64

    import numpy as np

    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), values["dtype"]).tolist()
    return [float(v) for v in values]


def test_the_statistics_table_says_no_interval_for_values_that_do_not_vary(db: Database) -> None:
    experiment, _ = _experiment(db, {"zeta": [3, 3], "alpha": [2, 4]})
    at = open_section(app("pages/results.py", experiment=str(experiment)), "Statistics")
    means = next(d.value for d in at.dataframe if "interval" in d.value.columns)
    assert list(means["condition"]) == ["zeta", "alpha"]  # the design's order
    assert list(means["interval"]) == ["no interval", means["interval"].iloc[1]]
    assert means["interval"].iloc[1].startswith("[")  # alpha's values vary: an interval
    assert pd.isna(means["low"].iloc[0]) and pd.isna(means["high"].iloc[0])  # not 3 = 3 = 3


def test_the_judges_chart_follows_the_design_within_the_scale(db: Database) -> None:
    from conversation.analysis.judges.rubrics import Dimension, Rubric
    from conversation.analysis.judges.scales import OrdinalScale
    from conversation.models import OfflineModel

    experiment, rooms = _experiment(db, {"zeta": [1, 1], "alpha": [1, 1]})
    tone = Dimension(name="tone", description="How warm the room is.", scale=OrdinalScale(points=5))
    rubric = Rubric(name="warmth", unit="room", dimensions=(tone,))

    def judge(prompt: str, system: str) -> str:  # 1 and 5 in alpha: a t interval of -22..28
        return ("5" if "score high" in prompt else "1") + "\nBecause."

    judges.run_judges(db, rubric, [judges.Judge("j", OfflineModel(func=judge))], rooms, experiment_id=experiment)  # fmt: skip
    at = open_section(app("pages/results.py", experiment=str(experiment)), "Judges")
    assert not at.exception, at.exception
    figure = _figure(at, "jd-chart")
    assert list(figure.layout.xaxis.categoryarray) == ["zeta", "alpha"]
    low, high = figure.layout.yaxis.range
    assert 0 < low <= 1 and 5 <= high < 6  # the 1..5 scale, not the t interval's -22..28
    bars = figure.data[0]
    means = _numbers(bars.y)
    assert list(bars.x) == ["zeta", "alpha"] and means == [1, 3]  # alpha: scores 1 and 5
    assert means[1] + _numbers(bars.error_y.array)[1] == 5  # its interval clipped to the scale
    assert means[1] - _numbers(bars.error_y.arrayminus)[1] == 1
