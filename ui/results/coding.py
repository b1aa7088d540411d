"""Qualitative coding in the app: tag the selected message on the Room page (a codebook label,
an optional rating and note), and in Results filter messages by tag, chart tag counts by
condition and download the coding table. Every label, note and message is shown as plain text
(select-box options, ``st.text``, dataframes) or escaped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from conversation import browse
from conversation.access import Action
from conversation.analysis import coding
from conversation.vocabulary import MESSAGE_EVENT_KINDS, entry_of
from ui.access import current_actor
from ui.access import note as role_note
from ui.widgets import escape_markdown

from .charts import laid_out, plain
from .condition_charts import NO_CONDITION

PREVIEW_CHARS = 60
#: The rows a tag may be on: a message's (the vocabulary's set).
TAGGABLE_KINDS = MESSAGE_EVENT_KINDS


def _preview(event: Any) -> str:
    text = " ".join(str(event.content or "").split())
    short = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
    return f"#{event.seq} {event.speaker}: {short}"


@st.fragment
def tag_panel(db: Any, room_id: int, events: Sequence[Any], *, by: str) -> None:
    """Tag one message of the room as ``by`` (a fragment: choosing a message or a label reruns
    only this panel)."""
    me = current_actor()
    if not me.can(Action.RUN_ANALYSIS):
        role_note(Action.RUN_ANALYSIS)
        return
    messages = [e for e in map(entry_of, events) if e.is_message]
    labels = coding.codebook(db, room_id=room_id)
    with st.form(f"code-add-{room_id}", clear_on_submit=True, border=False):
        # One under the other: side by side in the Room page's narrow right column, the
        # button was cut to "Add l…".
        new_label = st.text_input(
            "New codebook label",
            key=f"code-new-{room_id}",
            placeholder="e.g. concession",
            help="A room in an experiment uses the experiment's codebook.",
        )
        if st.form_submit_button("Add label") and new_label.strip():
            try:
                labels = coding.add_label(db, new_label.strip(), room_id=room_id, actor=me)
            except ValueError as exc:
                st.error(escape_markdown(exc))
    if not messages:
        st.caption("No messages to tag yet.")
        return
    if not labels:
        st.caption("The codebook is empty: add a label above, then tag messages with it.")
        return
    by_id = {int(e.row.id): e for e in messages}
    event_id = st.selectbox(
        "Message",
        list(reversed(list(by_id))),
        format_func=lambda i: _preview(by_id[i]),
        key=f"code-msg-{room_id}",
    )
    label = st.selectbox("Label", labels, key=f"code-label-{room_id}")
    c1, c2 = st.columns([1, 3])
    rating = c1.number_input(
        "Rating", min_value=-100, max_value=100, value=None, step=1, key=f"code-rating-{room_id}"
    )
    note = c2.text_input("Note (optional)", key=f"code-note-{room_id}")
    if st.button("Tag message", key=f"code-tag-{room_id}", type="primary"):
        try:
            coding.tag_message(
                db,
                int(event_id),
                label,
                by=by,
                rating=int(rating) if rating is not None else None,
                note=note or None,
                actor=me,
            )
        except ValueError as exc:
            st.error(escape_markdown(exc))
        else:
            st.rerun()  # the whole page: the transcript shows the new tag under the message
    given = coding.tags(db, event_id=int(event_id))
    if given:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "label": t.label,
                        "rating": t.rating,
                        "note": t.note,
                        "by": t.by,
                        "when": t.updated_at,
                    }
                    for t in given
                ]  # fmt: skip
            ),
            hide_index=True,
            width="stretch",
        )
        mine = [t for t in given if t.by == by]
        if mine and st.button(
            f"Remove my {len(mine)} tag(s) of this message", key=f"code-untag-{room_id}"
        ):
            for tag in mine:
                coding.untag(db, tag.id, actor=me)
            st.rerun(scope="fragment")
    else:
        st.caption("This message has no tags yet.")


def labels_by_event(db: Any, events: Sequence[Any]) -> dict[int, list[str]]:
    """The distinct tag labels of each of ``events`` that has any (``{event id: labels}``, in
    the order they were given): one query for all of them, whatever their number."""
    rows = [entry_of(e).row for e in events]
    ids = [int(r.id) for r in rows if r.id is not None and r.kind in TAGGABLE_KINDS]
    if not ids:
        return {}
    labels: dict[int, list[str]] = {}
    for tag in browse.message_tags(db, event_ids=ids):
        seen = labels.setdefault(int(tag.event_id), [])
        if tag.label not in seen:
            seen.append(tag.label)
    return labels


def tags_line(labels: Sequence[str]) -> str:
    """The line under a tagged message in a transcript (plain text; escape it for a caption)."""
    return "tags: " + ", ".join(labels)


def tag_counts_chart(tags: pd.DataFrame) -> go.Figure:
    """Tags per label, grouped by condition (one bar group per label, one bar per condition)."""
    title = "Tags by condition"
    fig = go.Figure()
    if tags.empty:
        fig.update_layout(title=title, height=320, xaxis={"visible": False},
                          yaxis={"visible": False})  # fmt: skip
        fig.add_annotation(text="No tags yet.", showarrow=False, font={"size": 14})
        return fig
    conditions = tags["condition"].fillna(NO_CONDITION).astype(str)
    counts = (
        tags.assign(condition=conditions).groupby(["condition", "label"]).size().rename("n")
    ).reset_index()
    for condition, part in counts.groupby("condition", sort=True):
        fig.add_bar(
            x=[plain(v) for v in part["label"]],
            y=list(part["n"]),
            name=plain(condition),
            text=[f"n={n}" for n in part["n"]],
        )
    # laid out as Results' other charts: the legend (the conditions, one too) under the plot
    return laid_out(fig, title, barmode="group", yaxis_title="tags", xaxis_title="label")


def results_coding(db: Any, room_ids: Sequence[int]) -> None:
    """The Results page's coding section for the selected rooms: a filter of messages by tag,
    tag counts by condition, and the coding table as a CSV download."""
    st.subheader("Coding")
    tags = browse.tags_frame(db, list(room_ids))
    if tags.empty:
        st.caption("No message of these rooms is tagged yet (tag messages on the Room page).")
        return
    wanted = st.multiselect(
        "Messages tagged with",
        sorted(tags["label"].unique()),
        key="res-tag-filter",
        placeholder="any label",
    )
    shown = tags[tags["label"].isin(wanted)] if wanted else tags
    st.plotly_chart(tag_counts_chart(shown), key="chart-tags")
    st.dataframe(shown, hide_index=True, width="stretch")
    st.download_button(
        "Coding table (CSV)",
        lambda: browse.tags_frame(db, list(room_ids)).to_csv(index=False),
        file_name="coding.csv",
        mime="text/csv",
        key="dl-coding",
        on_click="ignore",
    )


__all__ = ["labels_by_event", "results_coding", "tag_counts_chart", "tag_panel", "tags_line"]
