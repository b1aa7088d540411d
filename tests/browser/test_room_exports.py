"""The Room page's exports are built when clicked (deferred downloads), and what the browser saves is
the whole log: CSV rows per event, and the versioned JSON export."""

from __future__ import annotations

import csv
import json

import pytest

from tests.browser.browser_helpers import idle, open_page, until, wait_text
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION

pytestmark = pytest.mark.browser


def test_room_exports_download_on_click(app_server, db, page, tmp_path) -> None:  # type: ignore[no-untyped-def]
    room = rooms.create_room(
        db, rooms.draft_from_template(MUG_NEGOTIATION, name="Export me"), opening="Hello"
    )
    assert until(lambda: room.status in ("terminated", "settled"), timeout=30)
    events = room.events()
    open_page(page, app_server, f"/room?room={room.id}")
    wait_text(page, "Export me")
    idle(page)
    page.get_by_role("tab", name="Fork & export").click()
    with page.expect_download() as got:
        page.get_by_role("button", name="Export CSV", exact=True).click()
    target = tmp_path / "room.csv"
    got.value.save_as(target)
    with target.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["seq"]) for r in rows] == [e.seq for e in events]
    with page.expect_download() as got:
        page.get_by_role("button", name="Export JSON", exact=True).click()
    exported = json.loads(got.value.path().read_text())
    assert exported == json.loads(rooms.export_text(room))
