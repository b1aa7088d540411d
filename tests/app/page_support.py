"""Shared set-up of the page tests (AppTest): the app opened on a page, a lazy tab opened, a
room from the mug template, a two-condition experiment, and what the browser shows for text the
app escaped, the static tables a page drew. Test modules import these from here, never from one
another."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from conversation.rooms.room import Room
from storage import Database
from ui import experiments as ex
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "streamlit_app.py")  # the script app.py serves


def app(page: str | None = None, **params: str) -> AppTest:
    """The app run once, switched to ``page`` (``pages/room.py``) with ``params`` as its query."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if page:
        at.switch_page(page)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


class _Cells(HTMLParser):
    """The header and the rows of an HTML table, as the browser shows them (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def static_tables(at: AppTest) -> list[pd.DataFrame]:
    """The static tables (``ui.results.static_table``) the page drew, as frames of the texts
    shown (every value a string)."""
    frames = []
    for element in at.get("html"):
        cells = _Cells()
        cells.feed(element.proto.body)
        if cells.rows:
            frames.append(pd.DataFrame(cells.rows[1:], columns=cells.rows[0]))
    return frames


def results_rooms(at: AppTest) -> pd.DataFrame:
    """Results' rooms table as shown: the static table of the first view, or the grid once
    *Select rooms* is on."""
    grids = [d.value for d in at.dataframe if {"room_id", "stop_reason"} <= set(d.value.columns)]
    if grids:
        return grids[0]
    return next(t for t in static_tables(at) if {"room_id", "stop_reason"} <= set(t.columns))


def open_section(at: AppTest, name: str, key: str = "res-section") -> AppTest:
    """Opens one of a page's lazy tabs (only the open one is drawn) as a click on it would:
    Results' sections (``res-section``) or the Room page's right-hand tabs (``room-section``)."""
    at.session_state[key] = name
    at.run()
    assert not at.exception, at.exception
    return at


def open_coding(at: AppTest, room_id: int) -> AppTest:
    """Opens the Room page's "Code messages" expander (drawn only while open)."""
    at.session_state[f"code-open-{room_id}"] = True
    at.run()
    assert not at.exception, at.exception
    return at


def mug_room(db: Database, **changes: object) -> Room:
    """A room made from the mug negotiation template (``changes`` to its settings), opened."""
    draft = rooms.draft_from_template(MUG_NEGOTIATION, **changes)
    return rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening, request_id="open-1")


def two_condition_experiment(db: Database, name: str = "mugs", replicates: int = 1) -> int:
    """An experiment of the mug template with conditions ``a`` and ``b``; returns its id."""
    template = ex.template_from_room_template(MUG_NEGOTIATION)
    config = ex.design(template, [ex.Condition("a", {}), ex.Condition("b", {})], replicates)
    return ex.create(db, name, config)


def shown(markdown: str) -> str:
    """What the browser shows for a Markdown value the app escaped (``ui.widgets.escape_markdown``)."""
    literal = re.sub(r"\\(.)", r"\1", markdown.replace("&#58;", ":").replace("\u2060", ""))
    return literal.replace("  \n", "\n")


def titles(at: AppTest) -> list[str]:
    """The page's titles as the browser shows them: Markdown titles, and a room's title, drawn
    as plain text in an ``<h1>`` (``ui.widgets.text_title``)."""
    import html

    found = [shown(t.value) for t in at.title]
    for element in at.get("html"):
        body = str(element.proto.body)
        match = re.fullmatch(r'<h1 class="rooms-title">(.*)</h1>', body, re.DOTALL)
        if match:
            found.append(html.unescape(match.group(1)))
    return found


def captions(at: AppTest) -> list[str]:
    """The page's captions as the browser shows them."""
    return [shown(c.value) for c in at.caption]
