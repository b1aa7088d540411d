"""A frame as a static, read-only HTML table: what a first view shows instead of a data grid.

Why: Streamlit's data grid (``st.dataframe``) loads and compiles 1.2 MB of JavaScript on a page's
first grid, and no page that holds one shows it sooner than about 1.7 s on the development
machine (docs/deploy.md, "Sizing"); ``st.table`` renders every cell as Markdown (2,000 cells cost
more than the grid). A plain HTML table of the same rows is drawn with the page. It cannot be
sorted or selected: the page offers the grid for that when a person asks for it.

What is guaranteed: every header and cell is the value's text escaped with ``html.escape``
(quotes included), so nothing a person or a model wrote is ever markup: ``<img src=...>`` shows as
those characters and makes the browser fetch nothing. Values are shown as the grid shows them
(integers without decimals, missing values empty, times to the second).
"""

from __future__ import annotations

import html
import math
from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st

#: Height of the table's scroll box, in pixels (the grid's default height, about 10 rows).
HEIGHT_PX = 400
#: Scoped to the table's own class: it changes nothing else on the page.
_STYLE = """<style>
.rooms-static {max-height: %dpx; overflow: auto; border: 1px solid rgba(49, 51, 63, 0.1);
  border-radius: 0.5rem; font-size: 14px;}
.rooms-static table {border-collapse: collapse; width: max-content; min-width: 100%%;}
.rooms-static th {position: sticky; top: 0; background: #f8f9fb; font-weight: 400;
  color: rgba(49, 51, 63, 0.6); text-align: left;}
.rooms-static th, .rooms-static td {padding: 0.35rem 0.6rem; white-space: nowrap;
  border-bottom: 1px solid rgba(49, 51, 63, 0.1);}
.rooms-static td.n {text-align: right; font-variant-numeric: tabular-nums;}
</style>"""


def cell_text(value: Any) -> str:
    """``value`` as the table shows it, not yet escaped: missing values (None, NaN, NaT) empty,
    whole numbers without decimals, other floats to 4 significant decimals, times to the second."""
    if value is None or value is pd.NaT:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:d}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):  # a list or a dict: shown as its text
        pass
    return str(value)


def _numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def html_table(frame: pd.DataFrame) -> str:
    """``frame``'s columns and rows as an escaped HTML table (see the module doc), numbers
    right-aligned. Program text only: every header and value goes through ``html.escape``."""
    numeric = [_numeric(frame[c]) for c in frame.columns]
    head = "".join(f"<th>{html.escape(str(c), quote=True)}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False, name=None):
        cells = "".join(
            f'<td class="n">{html.escape(cell_text(v), quote=True)}</td>'
            if right
            else f"<td>{html.escape(cell_text(v), quote=True)}</td>"
            for v, right in zip(values, numeric, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def static_table(frame: pd.DataFrame, *, key: str, height: int = HEIGHT_PX) -> None:
    """Draw ``frame`` as a static table in a scroll box ``height`` pixels high at most, in a
    container keyed ``key`` (its CSS class is ``st-key-<key>``: what a browser test waits for)."""
    with st.container(key=key):
        st.html(  # markup-ok: html_table escapes every header and value (html.escape)
            _STYLE % height + f'<div class="rooms-static">{html_table(frame)}</div>'
        )


def selector(key: str) -> str:
    """The CSS selector of the table :func:`static_table` draws under ``key``: what a browser
    waits for to know the rows are on screen."""
    return f".st-key-{key} table"


__all__ = ["HEIGHT_PX", "cell_text", "html_table", "selector", "static_table"]
