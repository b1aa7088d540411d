"""The transcript's provenance in a real browser: a private message and to whom, who denied and
who edited a draft, the original draft one click away, a coordinator's pick and a pass."""

from __future__ import annotations

import json

import pytest

from conversation.rooms.room import Room
from storage import Database
from tests.browser.browser_helpers import open_page, wait_text
from tests.support.provenance_room import studied_room

pytestmark = pytest.mark.browser


def test_the_transcript_shows_provenance_and_the_original_draft_on_click(  # type: ignore[no-untyped-def]
    app_server, db, page, tmp_path
) -> None:
    # Built apart and imported whole (stopped): the server's runner never drives it.
    elsewhere = Database(f"sqlite:///{tmp_path / 'built.db'}")
    exported = studied_room(elsewhere).export()
    elsewhere.dispose()
    room = Room.import_messages(db, json.dumps(exported))
    assert room.status == "stopped"

    open_page(page, app_server, f"/room?room={room.id}")
    wait_text(page, "Short and edited.")
    for text in (
        "private to Bob",
        "Alice picked Bob to speak next.",
        "Cara passed",
        "edited and approved by mod at",
    ):
        wait_text(page, text)
    body = page.locator("body").inner_text()
    assert "denied by mod at" in body
    assert "a draft, attempt 2" not in body  # the original draft waits behind its click
    page.get_by_text("Original draft (edited by mod)", exact=True).click()
    wait_text(page, "a draft, attempt 2")
    page.get_by_text("Denied drafts (1)", exact=True).click()
    wait_text(page, "Denied by mod: too long")
