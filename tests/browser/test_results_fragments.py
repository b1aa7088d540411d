"""Results in a real browser: a widget of the Transcript tab (its room picker) reruns that tab
only (a fragment), not the rooms table and the charts above it (speed)."""

from __future__ import annotations

import pytest

import storage
from tests.browser.browser_helpers import RerunRecorder, idle, open_page, until, wait_text

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
