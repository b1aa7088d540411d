"""A streaming reply in a real browser (issue 20): the Room page shows the draft growing in pieces
inside the live fragment before the commit, then the message in its place; the moderator's
"Stop drafting" button stops it (denied "stopped while drafting", by the person)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conversation import OfflineModel, Room
from conversation.rooms.engine.streaming_call import STOPPED_WHILE_DRAFTING
from tests.browser.browser_helpers import open_page, until, wait_text
from tests.browser.conftest import AppServer

pytestmark = pytest.mark.browser

DRAFT = "[class*='st-key-draft-']"


@pytest.fixture
def streaming_server(chromium_path: str, tmp_path: Path, monkeypatch) -> Any:
    # The offline model streams at 2 words a second (a loaded machine reruns pages slowly), in the server and in this test process
    # (which drives the room: the server's runner may take turns too, either way they stream).
    monkeypatch.setenv("ROOMS_OFFLINE_WORDS_PER_SECOND", "2")
    server = AppServer(tmp_path / "server")
    server.folder.mkdir()
    server.start(timeout=120)
    yield server
    server.stop()


def shown_draft(page: Any) -> tuple[int, str] | None:
    """The streaming bubble's turn seq and partial text, as the page shows them (or None)."""
    drafts = page.locator(DRAFT)
    texts = drafts.all_inner_texts() if drafts.count() else []
    found = (
        re.search(r"#(\d+) · drafting… \(\d+ characters\)\s+(.*) ▍", texts[0], re.S)
        if texts
        else None
    )
    return (int(found.group(1)), found.group(2)) if found else None


def committed(db: Any, room_id: int, seq: int) -> Any:
    """The room's event at ``seq`` once it is done, else None."""
    found = [e for e in Room.open(db, room_id).events() if e.seq == seq and e.state == "done"]
    return found[0] if found else None


def test_the_draft_grows_on_screen_then_becomes_the_message_and_stop_stops_it(
    streaming_server, browser
) -> None:
    db = streaming_server.database()
    room = Room.create(
        db,
        name="streaming",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        model=OfflineModel(seed=4, max_words=40, mention_probability=0),
        planner={"kind": "round_robin", "transitions": None},
        termination={"kind": "max_turns", "max_turns": 6},
        use_cache=False,
    )
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        open_page(page, streaming_server, f"/room?room={room.id}")
        wait_text(page, "Not started")
        room.post("Tell us your plan in detail.")  # the server's runner takes the turns
        seen: dict[int, list[str]] = {}

        def a_turn_seen_in_pieces() -> int | None:
            shown = shown_draft(page)
            if shown is not None and seen.setdefault(shown[0], [""])[-1] != shown[1]:
                seen[shown[0]].append(shown[1])
            return next((seq for seq, texts in seen.items() if len(texts) >= 4), None)

        seq = until(a_turn_seen_in_pieces, timeout=120, interval=0.05)
        assert seq, seen  # three partial lengths or more, before the commit
        turn = until(lambda: committed(db, room.id, seq), timeout=60)
        assert turn, "the turn did not commit"
        assert all(turn.content.startswith(text) for text in seen[seq])
        wait_text(page, turn.content[:40])  # the message, where the draft was

        # a later turn: the moderator (the local user here) stops it mid-draft
        stop = page.get_by_role("button", name="Stop drafting")

        def denied() -> Any:
            for one in Room.open(db, room.id).turns():
                if one.inputs["denials"]:
                    return one.inputs["denials"]
            return None

        # The bubble is redrawn every 0.3 s and its turn may commit under the click: click the
        # Stop of whichever turn is drafting until a stop lands (a second stop changes nothing).
        denials = None
        for _ in range(4):
            stop.first.wait_for(timeout=60_000)
            with contextlib.suppress(PlaywrightTimeout):
                stop.first.click(timeout=5_000)
            denials = until(denied, timeout=20)
            if denials:
                break
        assert denials, "the stop was not recorded"
        assert denials[0]["reason"] == STOPPED_WHILE_DRAFTING
        assert denials[0]["by"]  # the person's identity
    finally:
        page.close()
        db.dispose()
