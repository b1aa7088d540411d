"""Charts by experiment condition for the Results page: an analysis question's answers and a
per-room statistic, each condition labelled with its short name and its n, with 95% intervals
(``conversation.analysis.statistics``). Pure functions from pandas DataFrames to Plotly figures,
like :mod:`ui.results.charts` (whose label escaping and empty figure they share): no Streamlit.

Expected columns: rooms ``room_id`` and the :data:`METRICS` columns (``rooms_summary``);
answers ``room_id``, ``answer``, optional ``state``; both optional ``condition``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from conversation.vocabulary import OPEN_ANSWER_STATES, AnswerState

from .charts import empty_figure, laid_out, plain

NO_CONDITION = "(none)"
YES = {"yes", "true", "1", "y"}
NO = {"no", "false", "0", "n"}


def answer_kind(answers: Iterable[Any]) -> str:
    """``yes_no``, ``numeric`` or ``categorical``: how a column of answers is best charted."""
    values = [a for a in answers if a is not None and not (isinstance(a, float) and math.isnan(a))]
    if not values:
        return "categorical"
    if all(isinstance(a, bool) or str(a).strip().lower() in YES | NO for a in values):
        return "yes_no"
    if all(isinstance(a, int | float) and not isinstance(a, bool) for a in values):
        return "numeric"
    return "categorical"


def condition_labels(
    frame: pd.DataFrame, names: Mapping[str, str] | None
) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` with a ``label`` column (the condition's short name) and the labels in design
    order (``names``: ``{condition: short name}`` in that order; conditions not in it after)."""
    out = frame.copy()
    if "condition" not in out:
        out["condition"] = NO_CONDITION
    out["condition"] = out["condition"].fillna(NO_CONDITION).astype(str)
    names = dict(names or {})
    out["label"] = out["condition"].map(lambda c: names.get(c, c))
    present = set(out["label"])
    order = [n for n in names.values() if n in present]
    order += sorted(present - set(order))
    return out, order


def n_ticks(
    labels: list[str], counts: Mapping[str, int], planned: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """An x axis whose tick under each condition says how many rooms it stands for:
    ``t0.7·gpt4o (n=10)``, or ``value $10 (n=1 of 2)`` when ``planned`` says more rooms were
    planned than answered (the missing ones are missing, never silently dropped); plain text,
    escaped for Plotly."""
    planned = planned or {}

    def tick(label: str) -> str:
        n, of = int(counts.get(label, 0)), int(planned.get(label, 0))
        return f"{plain(label)} (n={n} of {of})" if of > n else f"{plain(label)} (n={n})"

    return {
        "categoryorder": "array",
        "categoryarray": [plain(label) for label in labels],
        "tickvals": [plain(label) for label in labels],
        "ticktext": [tick(label) for label in labels],
    }


def padded_range(*series: Any, pad: float = 0.1) -> list[float] | None:
    """A y range holding every value of ``series`` (points, interval ends) with ``pad`` of the
    span free above and below, so the top point and its interval are never cut by the plot's
    edge; None when there is no number (then plotly chooses)."""
    values = pd.concat([pd.to_numeric(pd.Series(list(v)), errors="coerce") for v in series])
    values = values.dropna()
    if values.empty:
        return None
    low, high = float(values.min()), float(values.max())
    room = (high - low) * pad or max(abs(high) * pad, 1.0)
    return [low - room, high + room]


def _error_bars(low: pd.Series, high: pd.Series, centre: pd.Series) -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "array": (high - centre).fillna(0).clip(lower=0).tolist(),
        "arrayminus": (centre - low).fillna(0).clip(lower=0).tolist(),
    }


def _no_answers_yet(answers: pd.DataFrame) -> str:
    """Why an analysis chart is empty: its answers failed, are still being asked, or none was
    planned (a frame without ``state``: every row is a failed answer)."""
    failed_state = AnswerState.FAILED
    states = answers["state"] if "state" in answers else pd.Series([failed_state] * len(answers))
    failed = int((states == failed_state).sum())
    to_come = int(states.isin(sorted(OPEN_ANSWER_STATES)).sum())
    if not failed and not to_come:
        return "No answers yet: run an analysis first."
    parts = [f"{failed} failed (retry them in the Analysis tab)"] if failed else []
    parts += [f"{to_come} still being asked"] if to_come else []
    return "No answers yet: " + ", ".join(parts) + "."


def outcomes_by_condition(
    answers: pd.DataFrame,
    *,
    question: str = "answer",
    names: Mapping[str, str] | None = None,
    planned: Mapping[str, int] | None = None,
) -> go.Figure:
    """An analysis question's answers by experiment condition, in design order, each condition
    labelled with its short name (``names``) and its n: the rooms answered, ``of`` the rooms
    ``planned`` (by short name) when some have no answer (failed, or not asked yet).

    Yes/no answers: the share of "yes" per condition (e.g. the deal rate) with its 95% Wilson
    interval. Numbers: each room as a point and the mean with its 95% t interval. Anything
    else: stacked counts of each answer.
    """
    from conversation.analysis import statistics

    title = f"{plain(question)} by condition"
    answered = answers[answers["answer"].notna()] if "answer" in answers else answers
    if answered.empty:
        return empty_figure(title, _no_answers_yet(answers))
    frame, order = condition_labels(answered, names)
    planned = dict(planned or {})
    order += [label for label in planned if label not in order]
    kind = answer_kind(frame["answer"])
    fig = go.Figure()
    if kind == "yes_no":
        per = statistics.rates_by_condition(frame, "answer", by="label", order=order)
        per = per[per["condition"].isin(order)]
        fig.add_bar(
            x=[plain(c) for c in per["condition"]],
            y=per["rate"],
            error_y=_error_bars(per["low"], per["high"], per["rate"]),
            text=[f"{r:.0%} of {n}" for r, n in zip(per["rate"], per["n"], strict=True)],
            customdata=[[_condition_of(frame, c)] for c in per["condition"]],
            hovertemplate="%{x}: %{y:.0%} yes<extra></extra>",
            textposition="outside",
            cliponaxis=False,
        )
        counts = dict(zip(per["condition"], per["n"], strict=True))
        return laid_out(
            fig,
            f"{title}: share answering yes (95% Wilson CI)",
            # Room above 100% for the "100% of 5" label over a full bar and its interval.
            yaxis={"range": [0, 1.3], "tickformat": ".0%", "tickvals": [0, 0.25, 0.5, 0.75, 1]},
            xaxis=n_ticks(order, counts, planned),
        )
    if kind == "numeric":
        frame["value"] = pd.to_numeric(frame["answer"], errors="coerce")
        for label in order:
            part = frame[frame["label"] == label]
            fig.add_box(
                x=[plain(label)] * len(part),
                y=part["value"],
                name=plain(label),
                boxpoints="all",
                customdata=part[["condition", "room_id"]].values,
            )
        means = _means_trace(frame, "value", order)
        fig.add_trace(means)
        counts = frame.dropna(subset=["value"]).groupby("label").size().to_dict()
        return laid_out(
            fig,
            f"{title} (rooms, and the mean with its 95% t CI)",
            showlegend=False,
            xaxis=n_ticks(order, counts, planned),
            yaxis={"range": padded_range(frame["value"], *_interval_ends(means))},
        )
    frame["answer"] = frame["answer"].astype(str)
    counts_by = frame.groupby(["label", "answer"], sort=True).size().reset_index(name="rooms")
    for answer, part in counts_by.groupby("answer", sort=True):
        fig.add_bar(
            x=[plain(c) for c in part["label"]],
            y=part["rooms"],
            name=plain(str(answer)[:40]),
            customdata=[[_condition_of(frame, c)] for c in part["label"]],
        )
    counts = frame.groupby("label").size().to_dict()
    return laid_out(
        fig, title, barmode="stack", yaxis={"title": "rooms"}, xaxis=n_ticks(order, counts, planned)
    )


def _condition_of(frame: pd.DataFrame, label: str) -> str:
    """The stored condition behind a short name (what a click filters on)."""
    match = frame.loc[frame["label"] == label, "condition"]
    return str(match.iloc[0]) if len(match) else label


def _means_trace(
    frame: pd.DataFrame, column: str, order: list[str], method: str = "t"
) -> go.Scatter:
    from conversation.analysis import statistics

    means = statistics.means_by_condition(frame, column, by="label", order=order, method=method)
    return go.Scatter(
        x=[plain(c) for c in means["condition"]],
        y=means["mean"],
        mode="markers",
        marker={"symbol": "diamond", "size": 12, "color": "black"},
        error_y=_error_bars(means["low"], means["high"], means["mean"]),
        name="mean",
        hovertemplate="%{x}: mean %{y:.2f}<extra></extra>",
    )


def _interval_ends(means: go.Scatter) -> tuple[list[float], list[float]]:
    """The low and high ends of a means trace's error bars (mean - minus, mean + plus)."""
    centre = [float(y) for y in means.y]
    bars = means.error_y
    plus = list(bars.array or [0.0] * len(centre))
    minus = list(bars.arrayminus or [0.0] * len(centre))
    return (
        [c - m for c, m in zip(centre, minus, strict=False)],
        [c + p for c, p in zip(centre, plus, strict=False)],
    )


METRICS = {
    "messages": "messages per room",
    "agent_messages": "agent messages per room",
    "human_messages": "human messages per room",
    "words": "words per room",
    "passes": "passes per room",
    "failed_turns": "failed turns per room",
    "cost": "cost per room ($)",
    "output_tokens": "output tokens per room",
}


def metric_by_condition(
    rooms: pd.DataFrame,
    metric: str,
    *,
    names: Mapping[str, str] | None = None,
    method: str = "t",
) -> go.Figure:
    """A per-room statistic (``rooms_summary`` columns, see :data:`METRICS`) by condition: every
    room as a point, and the mean with its 95% interval (``method``: ``t`` or ``bootstrap``);
    each tick says its n (rooms)."""
    label = METRICS.get(metric, metric)
    title = f"{plain(label)} by condition"
    if rooms.empty:
        return empty_figure(title)
    frame, order = condition_labels(rooms, names)
    fig = go.Figure()
    for name in order:
        part = frame[frame["label"] == name]
        fig.add_scatter(
            x=[plain(name)] * len(part),
            y=part[metric],
            mode="markers",
            opacity=0.45,
            name=plain(name),
            customdata=part[["condition", "room_id"]].values,
            hovertemplate="room %{customdata[1]}: %{y}<extra></extra>",
        )
    means = _means_trace(frame, metric, order, method)
    fig.add_trace(means)
    counts = frame.groupby("label").size().to_dict()
    ci = "t" if method == "t" else "bootstrap"
    return laid_out(
        fig,
        f"{title} (mean and 95% {ci} CI)",
        showlegend=False,
        xaxis=n_ticks(order, counts),
        yaxis={"title": plain(label), "range": padded_range(frame[metric], *_interval_ends(means))},
    )


__all__ = [
    "METRICS",
    "NO_CONDITION",
    "answer_kind",
    "condition_labels",
    "metric_by_condition",
    "n_ticks",
    "outcomes_by_condition",
    "padded_range",
]
