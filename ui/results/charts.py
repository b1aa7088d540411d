"""Plotly figure builders for the Results page: pure functions from pandas DataFrames to figures
(the charts by condition are :mod:`ui.results.condition_charts`).

No Streamlit here, so every chart is unit-testable. Each builder accepts an empty frame and then
returns a figure that says there is nothing to show yet. Points carry ``customdata`` with the value a
click should filter on (a speaker, a room id, a condition, a stop reason); :func:`clicked_values`
reads it back from the selection Streamlit returns for ``st.plotly_chart(..., on_select="rerun")``.

Expected columns (as produced by :mod:`storage.research.frames`):
- events: ``room_id``, ``seq``, ``kind`` (human / agent / pass / system), ``state``, ``speaker``,
  ``words``,
  ``latency``, ``input_tokens``, ``output_tokens``, ``cost``; optional ``room`` (a label).
- rooms: ``room_id``, ``status``, ``stop_reason``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from conversation.termination.budget import format_cost
from conversation.vocabulary import EventKind, TurnState


def plain(text: Any) -> str:
    """``text`` as a chart label that shows literally: Plotly reads ``<b>``, ``<a href=...>``,
    ``<br>`` and the like in titles, tick labels, legends and hover text, and decodes entities,
    so ``&``, ``<`` and ``>`` of user or model text become entities. (Click filters read the
    raw value from ``customdata``, never the label.)"""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def empty_figure(title: str, message: str = "Nothing to show yet.") -> go.Figure:
    """A figure with no data that says why (``message``) under its ``title``."""
    fig = go.Figure()
    fig.update_layout(
        title=wrapped(title), xaxis={"visible": False}, yaxis={"visible": False}, height=320
    )
    fig.add_annotation(text=message, showarrow=False, font={"size": 14})
    return fig


#: Characters of a chart title's line: the charts stand two to a row on the Results page, and
#: a longer line ran past a chart's right edge, clipped.
TITLE_WIDTH = 48


def wrapped(title: str, width: int = TITLE_WIDTH) -> str:
    """``title`` (already ``plain``) on lines of at most ``width`` characters (Plotly never
    wraps a title): what it shows, then its parenthesis (the n, the interval) on a line of its
    own, each broken at spaces only where it is longer still."""
    head, found, rest = title.partition(" (")
    parts = [head, f"({rest}"] if found and len(title) > width else [title]
    lines = [line for part in parts for line in textwrap.wrap(part, width, break_long_words=False)]
    return "<br>".join(lines) or title


def laid_out(fig: go.Figure, title: str, **kw: Any) -> go.Figure:
    """``fig`` with its title (wrapped to the chart's width) and the Results page's chart size;
    a legend goes under the plot, where it covers no axis and no tick (at the top right it sat
    on the right-hand axis' top tick), and is drawn whenever the traces are named, one too:
    plotly leaves out the legend of a single trace, and a chart of one answer or one speaker
    did not say which. ``kw``: more layout."""
    text = wrapped(title)
    lines = text.count("<br>") + 1
    layout: dict[str, Any] = {
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0},
        "margin": {"t": 40 + 22 * lines, "b": 90},
        "showlegend": any(trace.name for trace in fig.data),
    }
    layout.update(kw)
    fig.update_layout(title={"text": text}, height=380, **layout)
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
        return empty_figure(title)
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
    return laid_out(
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
        return empty_figure(title)
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
    return laid_out(fig, f"{title} ({counted})", xaxis={"title": "seq"}, yaxis={"title": "words"})


def latency(events: pd.DataFrame) -> go.Figure:
    """Model latency per agent turn, by speaker (box plot with every point)."""
    title = "Latency per turn (s)"
    turns = (
        events[(events["kind"] == EventKind.AGENT) & events["latency"].notna()]
        if not events.empty
        else events
    )
    if turns.empty:
        return empty_figure(title, "No timed agent turns yet.")
    fig = go.Figure()
    for speaker, part in turns.groupby("speaker", sort=True):
        fig.add_box(
            y=part["latency"],
            name=plain(speaker),
            boxpoints="all",
            customdata=part[["speaker", "room_id"]].values,
        )
    return laid_out(
        fig, f"{title} ({_n(turns, 'turns')})", yaxis={"title": "seconds"}, showlegend=False
    )


def tokens_and_cost(events: pd.DataFrame) -> go.Figure:
    """Input and output tokens per speaker (stacked), with the cost in the hover text."""
    title = "Tokens and cost per speaker"
    if events.empty:
        return empty_figure(title)
    turns = events[events["kind"] == EventKind.AGENT]
    if turns.empty:
        return empty_figure(title, "No agent turns yet.")
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
    return laid_out(
        fig,
        f"{title} (total {total}; {_n(turns, 'turns')})",
        barmode="stack",
        yaxis={"title": "tokens"},
    )


def charted_reasons(rooms: pd.DataFrame) -> pd.Series:
    """Each room's stop reason as the chart shows it (and a click filters by): its reason, or
    its status in the words every page uses ("(ended)", "(running)"; never "terminated")."""
    from conversation.rooms.status_words import status_word

    words = rooms["status"].map(lambda s: f"({status_word(s)})")
    return rooms["stop_reason"].where(rooms["stop_reason"].notna(), words)


def stop_reasons(rooms: pd.DataFrame) -> go.Figure:
    """How rooms ended: count per stop reason (rooms still going are counted by status)."""
    title = "How rooms ended"
    if rooms.empty:
        return empty_figure(title)
    counts = charted_reasons(rooms).value_counts().sort_index()
    fig = go.Figure()
    fig.add_bar(
        x=counts.values,
        y=[plain(r) for r in counts.index],
        orientation="h",
        customdata=[[r] for r in counts.index],
        hovertemplate="%{y}: %{x} rooms<extra></extra>",
    )
    return laid_out(fig, f"{title} (n = {len(rooms):,} rooms)", xaxis={"title": "rooms"})


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
    "clicked_values",
    "empty_figure",
    "kept_clicks",
    "laid_out",
    "latency",
    "message_length",
    "plain",
    "speaker_activity",
    "stop_reasons",
    "tokens_and_cost",
]
