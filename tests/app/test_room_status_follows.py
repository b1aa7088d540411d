"""The Room page's status line and controls follow the room as its live transcript does."""

from __future__ import annotations

from typing import Any

import pytest

import storage
from conversation import browse
from storage import Database
from tests.app.page_support import app, mug_room, shown


@pytest.mark.parametrize("ends_at_read", [2, 3, 4, 5])
def test_status_and_controls_agree_with_the_live_banner_when_the_room_ends_mid_page(
    db: Database, monkeypatch: pytest.MonkeyPatch, ends_at_read: int
) -> None:
    """The header said "Status: running" with Pause enabled while the banner said "Ended": the
    header was drawn from one read of the room and the live view from a later one, and the live
    poll compared against the later read, so it never reran the page to bring the header along.
    The room ends just before the page's ``ends_at_read``-th read of it, wherever that falls."""
    room = mug_room(db)
    storage.update_room(db, room.id, status="running")
    at = app("pages/room.py", room=str(room.id))
    real = storage.get_room
    reads: list[int] = []

    def ending_mid_page(database: Any, room_id: int) -> Any:
        if room_id == room.id:
            reads.append(room_id)
            if len(reads) == ends_at_read:
                storage.update_room(
                    db, room.id, status="terminated", stop_reason="max_turns reached (9)"
                )
        return real(database, room_id)

    monkeypatch.setattr(storage, "get_room", ending_mid_page)
    monkeypatch.setattr(browse, "get_room", ending_mid_page)
    at.run()
    assert not at.exception
    [header] = [m.value for m in at.markdown if "**Status:**" in m.value]
    [banner] = [shown(i.value) for i in at.info if i.value.startswith(("Ended", "Running"))]
    ended = banner.startswith("Ended")
    assert ("**Status:** ended" in header) == ended, (header, banner)
    assert at.button(key="ctl-pause").disabled == ended
    assert at.button(key="ctl-stop").disabled == ended


@pytest.mark.parametrize("status", ["stopped", "settled", "terminated", "failed"])
def test_stop_is_disabled_on_an_ended_room(db: Database, status: str) -> None:
    room = mug_room(db)
    storage.update_room(db, room.id, status=status)
    at = app("pages/room.py", room=str(room.id))
    assert at.button(key="ctl-stop").disabled


def test_stop_is_enabled_on_a_room_that_may_take_turns(db: Database) -> None:
    room = mug_room(db)
    storage.update_room(db, room.id, status="running")
    at = app("pages/room.py", room=str(room.id))
    assert not at.button(key="ctl-stop").disabled
