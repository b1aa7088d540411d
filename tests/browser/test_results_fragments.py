"""Results in a real browser: the first view is the rooms table with no chart (the charts are
drawn when their tab is opened), and a widget of the Transcript tab (its room picker) reruns that
tab only (a fragment), not the rooms table above it (speed)."""

from __future__ import annotations

import pytest

import storage
from tests.browser.browser_helpers import (
    RerunRecorder,
    idle,
    open_page,
    until,
    wait_count,
    wait_text,
)
from ui.results.static_table import selector
from ui.results.tables import ROOMS_TABLE_KEY

pytestmark = pytest.mark.browser


def test_the_transcript_room_picker_reruns_only_its_tab(fresh_server, browser) -> None:  # type: ignore[no-untyped-def]
    # A server of its own: the page must list exactly these two rooms (the shared server's
    # database holds every other browser test's rooms).
    db = fresh_server.database()
    for name in ("first study room", "second study room"):
        storage.create_room(db, name, status="terminated")
    db.dispose()
    fresh_server.start()
    app_server = fresh_server
    page = browser.new_page()
    sent = RerunRecorder(page)
    try:
        open_page(page, app_server, "/results")
        wait_text(page, "Rooms (2 shown of 2)")
        page.get_by_role("tab", name="Transcript").click()
        idle(page)
        box = page.get_by_label("Room", exact=True).filter(visible=True).first
        other = "first" if "second" in (box.input_value() or box.inner_text()) else "second"

        def pick() -> None:
            box.click()
            box.press_sequentially(other)
            box.press("Enter")

        asked = sent.asked_after(pick)
        assert asked, f"no rerun was requested: {sent.reruns()}"
        assert all(fragment for fragment, _ in asked), "the transcript picker reran the page"
        assert until(lambda: other in (box.input_value() or box.inner_text()), timeout=10)
    finally:
        page.close()


def test_the_first_view_is_the_rooms_table_and_every_tab_is_reachable(
    fresh_server, browser
) -> None:  # type: ignore[no-untyped-def]
    """Issue 23: six Plotly figures and a 1,000-row messages table drawn on arrival kept Chromium
    2-3 s from showing the rooms table. The tabs are lazy: only the open one is drawn."""
    db = fresh_server.database()
    for name in ("first study room", "second study room"):
        storage.create_room(db, name, status="terminated")
    db.dispose()
    fresh_server.start()
    page = browser.new_page()
    try:
        open_page(page, fresh_server, "/results")
        page.locator(selector(ROOMS_TABLE_KEY)).wait_for()  # the first view: a static table
        wait_text(page, "Rooms (2 shown of 2)")
        idle(page)
        assert page.get_by_test_id("stPlotlyChart").count() == 0, "a chart on the first view"
        page.get_by_role("tab", name="Charts").click()
        assert wait_count(page, "stPlotlyChart", 5) >= 5  # speakers, lengths, latency, ...
        for name, shown in (
            ("Compare", "Show both transcripts"),
            ("Analysis", "Ask a question about each selected room"),
            ("Statistics", "Pick an experiment above: statistics compare its conditions."),
            ("Judges", "Pick an experiment above: judges score its rooms with a rubric."),
            ("Coding", "No message of these rooms is tagged yet"),
            ("Export", "Rooms (CSV)"),
            ("Transcript", "Open live"),
        ):
            page.get_by_role("tab", name=name).click()
            wait_text(page, shown)
    finally:
        page.close()
