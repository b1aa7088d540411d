"""Regression tests for the page defects of issue 19 (what a researcher met in the browser),
through Streamlit's AppTest. Each test fails on the code before its fix."""

from __future__ import annotations

from storage import Database
from tests.app.test_pages import app


def test_the_room_picker_reads_new_room_not_choose_an_option(db: Database) -> None:
    """With no room chosen the picker had no selection (its value was None), so it showed
    Streamlit's placeholder "Choose an option" instead of "+ New room"."""
    at = app("pages/room.py")
    picker = at.selectbox(key="room-pick")
    assert picker.index == 0
    assert picker.options[0] == "+ New room"
    assert picker.value is not None
