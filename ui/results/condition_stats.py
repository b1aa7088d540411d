"""The Results page's "Statistics" tab: per-condition means and rates with their intervals, n on
every chart, and the difference between two chosen conditions. The maths is in
``conversation.analysis.statistics``; the figures in ``ui.results.charts``. Text is drawn with ``st.text``
or in dataframes (condition names are a researcher's text)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from conversation import browse

from . import condition_charts


@st.fragment
def render(
    db: Any,
    rooms: pd.DataFrame,
    names: dict[str, str],
    *,
    analysis: Any | None = None,
) -> None:
    """The tab for ``rooms`` (the rows the table selected or shows), labelled by ``names``
    (``{condition: short name}`` in design order); ``analysis``: the latest stored analysis of
    the experiment, whose yes/no answers are charted as rates. A fragment: picking a measure, an
    interval or two conditions reruns this tab only."""
    from conversation.analysis import statistics

    if rooms.empty or rooms["condition"].isna().all():
        st.info("Pick an experiment above: statistics compare its conditions.")
        return
    frame, order = condition_charts.condition_labels(rooms, names)
    m1, m2 = st.columns([2, 1])
    metric = m1.selectbox(
        "Per-room measure",
        list(condition_charts.METRICS),
        format_func=condition_charts.METRICS.__getitem__,
        key="stat-metric",
    )
    method = m2.radio("Interval", ["t", "bootstrap"], horizontal=True, key="stat-method")
    st.plotly_chart(
        condition_charts.metric_by_condition(rooms, metric, names=names, method=method),
        key="chart-metric",
    )
    means = statistics.means_by_condition(frame, metric, by="label", order=order, method=method)
    st.dataframe(_rounded(means), hide_index=True, width="stretch", key="stat-means")

    rates = None
    if analysis is not None:
        answers = browse.analysis_frame(db, int(analysis.id))
        answers = answers[answers["room_id"].isin(rooms["room_id"])]
        if not answers.empty and condition_charts.answer_kind(answers["answer"]) == "yes_no":
            st.text(f"Rates of yes: {analysis.name} (95% Wilson intervals)")
            coded, _ = condition_charts.condition_labels(answers, names)
            rates = (coded, statistics.rates_by_condition(coded, "answer", by="label", order=order))
            st.dataframe(_rounded(rates[1]), hide_index=True, width="stretch", key="stat-rates")

    if len(order) < 2:
        return
    st.text("Difference between two conditions")
    d1, d2 = st.columns(2)
    first = d1.selectbox("Condition A", order, index=0, key="stat-a")
    second = d2.selectbox("Condition B", order, index=1, key="stat-b")
    diff = statistics.mean_difference(frame, metric, first, second, by="label")
    st.text(f"{condition_charts.METRICS[metric]}: {diff.describe()}")
    if rates is not None:
        rate = statistics.rate_difference(rates[0], "answer", first, second, by="label")
        st.text(f"Rate of yes: {rate.describe(percent=True)}")


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.round(4)


__all__ = ["render"]
