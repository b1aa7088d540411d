"""A long room in a real browser: the Room page opens on its newest messages only (the first
page, ``ui.room.live.FIRST_PAGE``), and "Show earlier messages" reaches the ones before them."""

from __future__ import annotations

import pytest

from conversation import OfflineModel, Room
from tests.browser.browser_helpers import open_page, until, wait_count, wait_text
from ui.room.live import FIRST_PAGE

pytestmark = pytest.mark.browser
OPENING = "The very first message of a long room."


def test_a_long_room_opens_on_its_newest_messages_and_reaches_earlier_ones(  # type: ignore[no-untyped-def]
    app_server, browser, db
) -> None:
    room = Room.create(
        db,
        name="long room",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        model=OfflineModel(seed=5, mention_probability=0),
        planner={"kind": "round_robin", "transitions": None},
        termination={"kind": "max_turns", "max_turns": 2 * FIRST_PAGE + 20},
    )
    room.post(OPENING)
    room.run()  # here, or by the server's runner: either way, done
    until(lambda: Room.open(db, room.id).status == "terminated", timeout=120)
    events = Room.open(db, room.id).events()
    newest = max(e.seq for e in events if e.kind == "agent")
    messages = sum(1 for e in events if e.kind == "human" or (e.kind, e.state) == ("agent", "done"))
    page = browser.new_page()
    try:
        open_page(page, app_server, f"/room?room={room.id}")
        wait_text(page, f"#{newest}")  # the newest message is drawn...
        earlier = page.get_by_role("button", name="Show earlier messages")
        earlier.wait_for()
        bubbles = page.get_by_test_id("stChatMessage").count()
        assert 0 < bubbles <= FIRST_PAGE, bubbles  # ...and only the newest page of them
        assert f"({len(events) - FIRST_PAGE:,} not shown)" in earlier.inner_text()
        bubbles_with_opening = page.get_by_test_id("stChatMessage").filter(has_text=OPENING)
        assert bubbles_with_opening.count() == 0

        earlier.click()
        bubbles_with_opening.first.wait_for()  # the first message is reachable
        assert wait_count(page, "stChatMessage", messages) == messages
        assert page.get_by_role("button", name="Show earlier messages").count() == 0
        assert f"#{newest}" in page.inner_text("body")  # the newest stay shown
    finally:
        page.close()
