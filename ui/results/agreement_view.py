"""The agreement view under the Judges tab: for one dimension of a rubric version, the raters x
raters table of Krippendorff's alpha (or Cohen's kappa) with 95% intervals and n, a judge's
confusion matrix against the human coders, and the units they disagree on; selecting one shows
the message (plain text) with the judge's reason and a link to its room. Downloads: the pairwise
agreement table (CSV)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from conversation import browse
from conversation.analysis import judges
from conversation.analysis.judges.raters import HUMAN, ratings
from ui.widgets import escape_markdown


def cell(estimate: float, low: float, high: float, n: int) -> str:
    """``0.82 [0.70, 0.93] n=11``, or ``undefined (n=1)``."""
    if math.isnan(estimate):
        return f"undefined (n={n})"
    interval = "" if math.isnan(low) else f" [{low:.2f}, {high:.2f}]"
    return f"{estimate:.2f}{interval} n={n}"


def shown_table(table: Any) -> pd.DataFrame:
    """The raters x raters table as text cells (estimate, interval, n)."""
    names = [str(r) for r in table.raters]
    grid = pd.DataFrame("", index=names, columns=names)
    for (a, b), result in table.pairs.items():
        text = cell(result.estimate, result.low, result.high, result.n_units)
        grid.loc[str(a), str(b)] = grid.loc[str(b), str(a)] = text
    return grid


@st.cache_data(max_entries=32, show_spinner=False)
def _table(rows: tuple[Any, ...], level: str, order: tuple[Any, ...] | None, statistic: str, n_boot: int) -> Any:  # fmt: skip
    """The bootstrap is the costly part: the Results page reruns on every click, so the table of
    the same ratings is computed once (the ratings themselves are read each time)."""
    from conversation.analysis.agreement import agreement_table

    return agreement_table(list(rows), level, order=order, statistic=statistic, n_boot=n_boot, seed=0)  # type: ignore[arg-type]  # fmt: skip


def render(db: Any, stored: judges.StoredRubric, room_ids: list[int] | Any) -> None:
    """The agreement view for ``stored`` over the selected rooms."""
    from conversation.analysis.judges import tables as judge_tables

    st.subheader("Agreement")
    c1, c2, c3 = st.columns(3)
    dimension = c1.selectbox("Dimension", [d.name for d in stored.rubric.dimensions], key="ag-dim")
    statistic = c2.radio("Statistic", ["alpha", "kappa"], horizontal=True, key="ag-stat")
    n_boot = int(c3.number_input("Bootstrap samples", 100, 5000, 500, step=100, key="ag-boot"))
    rows = ratings(db, stored.id, dimension, room_ids=list(room_ids))
    raters = sorted({s.rater for s in rows})
    if len(raters) < 2:
        st.caption("Agreement needs two raters: score with a panel, or tag messages by hand.")
        return
    wanted = stored.rubric.dimension(dimension)
    order = tuple(wanted.order() or ()) or None
    try:
        table = _table(tuple((s.unit, s.rater, s.value) for s in rows), wanted.level, order, statistic, n_boot)  # fmt: skip
    except ValueError as exc:
        st.error(escape_markdown(exc))
        return
    st.text(f"{statistic} at the {table.level} level; 95% percentile bootstrap intervals; "
            "n = units rated by both raters")  # fmt: skip
    st.dataframe(shown_table(table), width="stretch", key="ag-table")
    if table.overall is not None:
        st.text(f"All raters: {table.overall.describe()}")
    st.download_button(
        "Agreement table (CSV)",
        lambda: judge_tables.export_agreement_csv(
            db, stored.id, dimension, room_ids=list(room_ids), statistic=statistic, n_boot=n_boot
        ),
        file_name=f"agreement-{stored.id}-{dimension}.csv", mime="text/csv",
        key="ag-dl", on_click="ignore",
    )  # fmt: skip
    _against_humans(db, rows, raters)


def _against_humans(db: Any, rows: list[Any], raters: list[str]) -> None:
    from conversation.analysis.judges import tables as judge_tables

    humans = [r for r in raters if r.startswith(HUMAN)]
    machines = [r for r in raters if not r.startswith(HUMAN)]
    if not humans or not machines:
        st.caption("A confusion matrix against the coders needs coders' tags and judge scores.")
        return
    judge = st.selectbox("Judge", machines, key="ag-judge")
    st.text(f"{judge} (rows) against the human coders (columns), one count per unit and coder")
    st.dataframe(judge_tables.confusion(rows, judge, humans), key="ag-confusion")
    differ = judge_tables.disagreements(rows, judge, humans)
    st.text(f"Units where {judge} and a coder disagree: {len(differ)} (select one to read it)")
    picked = st.dataframe(
        differ, hide_index=True, width="stretch", on_select="rerun",
        selection_mode="single-row", key="ag-differ",
    )  # fmt: skip
    chosen = picked.selection.rows if picked is not None else []
    if chosen:
        show_unit(db, differ.iloc[chosen[0]])


def show_unit(db: Any, row: pd.Series) -> None:
    """The message a disagreement is about (plain text), the judge's reason, a link to the room."""
    room_id = int(row["room_id"])
    seq = row.get("seq")
    if seq is not None and not pd.isna(seq):
        found = browse.events(db, room_id, after_seq=int(seq) - 1, limit=1)
        for event in found:
            st.text(f"Room {room_id}, message #{event.seq}, {event.speaker}:")
            st.code(event.content or "", language=None, wrap_lines=True)
    if isinstance(row.get("reason"), str):
        st.text(f"The judge's reason: {row['reason']}")
    st.page_link(
        "pages/room.py", label="Open the room", icon=":material/open_in_new:",
        query_params={"room": str(room_id)},
    )  # fmt: skip


__all__ = ["cell", "render", "shown_table", "show_unit"]
