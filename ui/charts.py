"""Plotly figure builders for the Results page: pure functions from pandas DataFrames to figures.

No Streamlit here, so every chart is unit-testable. Each builder accepts an empty frame and then
returns a figure that says there is nothing to show yet. Points carry ``customdata`` with the value a
click should filter on (a speaker, a room id, a condition, a stop reason); :func:`clicked_values`
reads it back from the selection Streamlit returns for ``st.plotly_chart(..., on_select="rerun")``.

Expected columns (as produced by :mod:`storage.research.frames`):
- events: ``room_id``, ``seq``, ``kind`` (human / agent / pass / system), ``state``, ``speaker``,
  ``words``,
  ``latency``, ``input_tokens``, ``output_tokens``, ``cost``; optional ``room`` (a label).
- rooms: ``room_id``, ``status``, ``stop_reason``; optional ``condition``.
- answers: ``room_id``, ``answer``; optional ``condition``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from conversation.termination.budget import format_cost
from conversation.vocabulary import OPEN_ANSWER_STATES, AnswerState, EventKind, TurnState

NO_CONDITION = "(none)"
YES = {"yes", "true", "1", "y"}
NO = {"no", "false", "0", "n"}


def plain(text: Any) -> str:
    """``text`` as a chart label that shows literally: Plotly reads ``<b>``, ``<a href=...>``,
    ``<br>`` and the like in titles, tick labels, legends and hover text, and decodes entities,
    so ``&``, ``<`` and ``>`` of user or model text become entities. (Click filters read the
    raw value from ``customdata``, never the label.)"""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _empty(title: str, message: str = "Nothing to show yet.") -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False}, height=320)
    fig.add_annotation(text=message, showarrow=False, font={"size": 14})
    return fig


def _layout(fig: go.Figure, title: str, **kw: Any) -> go.Figure:
    fig.update_layout(title=title, height=360, margin={"t": 60, "b": 40}, **kw)
    return fig


def _n(frame: pd.DataFrame, what: str) -> str:
    """``n = 120 messages in 10 rooms``: every chart says how much data it shows."""
    rooms = frame["room_id"].nunique() if "room_id" in frame else 0
    return f"n = {len(frame):,} {what} in {rooms:,} room{'s' if rooms != 1 else ''}"


def _messages(events: pd.DataFrame) -> pd.DataFrame:
    """Human messages and finished agent messages (the counting rule of :mod:`storage.research.frames`)."""
    if events.empty or "kind" not in events:
        return events.iloc[0:0]
    done = events["state"].eq(TurnState.DONE) if "state" in events else True
    return events[
        (events["kind"] == EventKind.HUMAN) | ((events["kind"] == EventKind.AGENT) & done)
    ]


def speaker_activity(events: pd.DataFrame) -> go.Figure:
    """Messages and words per speaker (grouped bars; click a bar to filter by its speaker)."""
    title = "Messages and words per speaker"
    msgs = _messages(events)
    if msgs.empty:
        return _empty(title)
    per = (
        msgs.groupby("speaker", sort=True)
        .agg(messages=("seq", "size"), words=("words", "sum"))
        .reset_index()
    )
    fig = go.Figure()
    fig.add_bar(
        x=per["speaker"],
        y=per["messages"],
        name="messages",
        customdata=per[["speaker"]].values,
        offsetgroup="messages",
    )
    fig.add_bar(
        x=per["speaker"],
        y=per["words"],
        name="words",
        yaxis="y2",
        customdata=per[["speaker"]].values,
        offsetgroup="words",
        opacity=0.6,
    )
    return _layout(
        fig,
        f"{title} ({_n(msgs, 'messages')})",
        barmode="group",
        yaxis={"title": "messages"},
        yaxis2={"title": "words", "overlaying": "y", "side": "right"},
        clickmode="event+select",
    )


#: Points the message-length chart draws at most (a sample of every k-th message past it).
MAX_POINTS = 2_000


def message_length(events: pd.DataFrame) -> go.Figure:
    """Words per message by seq, one colour per speaker (points from every room; click a point:
    its speaker)."""
    title = "Message length over turns"
    msgs = _messages(events)
    if msgs.empty:
        return _empty(title)
    msgs = msgs.sort_values(["room_id", "seq"])
    counted = _n(msgs, "messages")
    # A point per message: a 10,000-message room made a figure of megabytes that the browser
    # waited seconds for. Past MAX_POINTS, every k-th message is drawn, and the title says so.
    step = -(-len(msgs) // MAX_POINTS)
    if step > 1:
        msgs = msgs.iloc[::step]
        counted += f"; every {step}th drawn"
    fig = go.Figure()
    for speaker, part in msgs.groupby("speaker", sort=True):
        fig.add_scatter(
            x=part["seq"],
            y=part["words"],
            mode="markers",
            name=plain(speaker),
            customdata=part[["speaker", "room_id"]].values,
            hovertemplate="room %{customdata[1]} seq %{x}: %{y} words<extra>%{customdata[0]}</extra>",
        )
    return _layout(fig, f"{title} ({counted})", xaxis={"title": "seq"}, yaxis={"title": "words"})


def latency(events: pd.DataFrame) -> go.Figure:
    """Model latency per agent turn, by speaker (box plot with every point)."""
    title = "Latency per turn (s)"
    turns = (
        events[(events["kind"] == EventKind.AGENT) & events["latency"].notna()]
        if not events.empty
        else events
    )
    if turns.empty:
        return _empty(title, "No timed agent turns yet.")
    fig = go.Figure()
    for speaker, part in turns.groupby("speaker", sort=True):
        fig.add_box(
            y=part["latency"],
            name=plain(speaker),
            boxpoints="all",
            customdata=part[["speaker", "room_id"]].values,
        )
    return _layout(
        fig, f"{title} ({_n(turns, 'turns')})", yaxis={"title": "seconds"}, showlegend=False
    )


def tokens_and_cost(events: pd.DataFrame) -> go.Figure:
    """Input and output tokens per speaker (stacked), with the cost in the hover text."""
    title = "Tokens and cost per speaker"
    if events.empty:
        return _empty(title)
    turns = events[events["kind"] == EventKind.AGENT]
    if turns.empty:
        return _empty(title, "No agent turns yet.")
    per = (
        turns.groupby("speaker", sort=True)
        .agg(
            input_tokens=("input_tokens", "sum"),
            output_tokens=("output_tokens", "sum"),
            cost=("cost", "sum"),
            unpriced=("cost", lambda c: int(c.isna().sum())),
        )
        .reset_index()
    )
    per["cost_text"] = [
        format_cost(c, n) for c, n in zip(per["cost"], per["unpriced"], strict=True)
    ]
    fig = go.Figure()
    for column, label in (("input_tokens", "input tokens"), ("output_tokens", "output tokens")):
        fig.add_bar(
            x=per["speaker"],
            y=per[column],
            name=label,
            customdata=per[["speaker", "cost_text"]].values,
            hovertemplate="%{x}: %{y} " + label + " (cost %{customdata[1]})<extra></extra>",
        )
    total = format_cost(float(per["cost"].fillna(0).sum()), int(per["unpriced"].sum()))
    return _layout(
        fig,
        f"{title} (total {total}; {_n(turns, 'turns')})",
        barmode="stack",
        yaxis={"title": "tokens"},
    )


def stop_reasons(rooms: pd.DataFrame) -> go.Figure:
    """How rooms ended: count per stop reason (rooms still going are counted by status)."""
    title = "Termination reasons"
    if rooms.empty:
        return _empty(title)
    reason = rooms["stop_reason"].where(rooms["stop_reason"].notna(), "(" + rooms["status"] + ")")
    counts = reason.value_counts().sort_index()
    fig = go.Figure()
    fig.add_bar(
        x=counts.values,
        y=[plain(r) for r in counts.index],
        orientation="h",
        customdata=[[r] for r in counts.index],
        hovertemplate="%{y}: %{x} rooms<extra></extra>",
    )
    return _layout(fig, f"{title} (n = {len(rooms):,} rooms)", xaxis={"title": "rooms"})


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
        return _empty(title, _no_answers_yet(answers))
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
        return _layout(
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
        return _layout(
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
    return _layout(
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
        return _empty(title)
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
    return _layout(
        fig,
        f"{title} (mean and 95% {ci} CI)",
        showlegend=False,
        xaxis=n_ticks(order, counts),
        yaxis={"title": plain(label), "range": padded_range(frame[metric], *_interval_ends(means))},
    )


def clicked_values(selection: Mapping[str, Any] | None, index: int = 0) -> list[Any]:
    """The ``customdata[index]`` of every point selected in a chart (de-duplicated, in order).

    ``selection`` is what ``st.plotly_chart(..., on_select="rerun")`` returns (or its
    ``session_state`` entry): ``{"selection": {"points": [{"customdata": [...]}, ...]}}``.
    """
    if not selection:
        return []
    points = (selection.get("selection") or {}).get("points") or []
    seen: list[Any] = []
    for point in points:
        data = point.get("customdata")
        if isinstance(data, list | tuple) and len(data) > index:
            value = data[index]
        elif data is not None and not isinstance(data, list | tuple) and index == 0:
            value = data
        else:
            continue
        if value not in seen:
            seen.append(value)
    return seen


def kept_clicks(state: Any, charts: Iterable[str], store: str) -> dict[str, list[Any]]:
    """The values clicked in each chart of ``charts`` (their keys in ``state``: st.session_state),
    kept in ``state[store]`` while the charts are not drawn: Streamlit drops the selection of a
    chart that the last run did not draw (its tab closed), and the filter it set must not vanish
    with it. A chart drawn on the last run has its entry and replaces what was kept, so a click
    on its background clears it."""
    kept = dict(state.get(store) or {})
    for key in charts:
        if key in state:
            kept[key] = clicked_values(state[key])
    state[store] = kept
    return {key: list(kept.get(key, [])) for key in charts}


__all__ = [
    "answer_kind",
    "plain",
    "clicked_values",
    "kept_clicks",
    "condition_labels",
    "latency",
    "METRICS",
    "message_length",
    "metric_by_condition",
    "n_ticks",
    "outcomes_by_condition",
    "speaker_activity",
    "stop_reasons",
    "tokens_and_cost",
]
