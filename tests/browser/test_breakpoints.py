"""A live breakpoint in a real browser: a room the app's runner drives pauses before an agent
speaks, the page says so, and pressing Resume lets that agent speak (issue 10)."""

from __future__ import annotations

import pytest

from conversation import OfflineModel, Room
from tests.browser.browser_helpers import open_page, until, wait_text

pytestmark = pytest.mark.browser


def test_a_room_paused_before_an_agent_is_resumed_from_the_page(app_server, browser, db) -> None:  # type: ignore[no-untyped-def]
    room = Room.create(
        db,
        name="breakpoint room",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        model=OfflineModel(seed=4, mention_probability=0),
        planner={"kind": "round_robin", "transitions": None},
        termination={"kind": "max_turns", "max_turns": 3},
        breakpoints={"before": ["Bob"]},
    )
    room.post("Plan the launch.")
    page = browser.new_page()
    try:
        open_page(page, app_server, f"/room?room={room.id}")  # the visit starts the runner
        wait_text(page, "paused before Bob speaks (breakpoint)", timeout=60_000)
        assert room.status == "paused"
        assert [e.speaker for e in room.events() if e.kind == "agent"] == ["Alice"]
        page.get_by_role("button", name="Resume").click()
        bob = until(
            lambda: next(
                (e for e in room.events() if e.kind == "agent" and e.speaker == "Bob"), None
            ),
            timeout=60,
        )
        assert bob is not None, app_server.log()
        assert "breakpoint released" in bob.data["chosen_because"]
        wait_text(page, bob.content[:40], timeout=30_000)  # the page shows Bob's message live
        # Bob's next turn would pause again, but the room ends first (3 turns).
        until(lambda: room.status == "terminated", timeout=60)
        assert [e.speaker for e in room.events() if e.kind == "agent"] == ["Alice", "Bob", "Alice"]
    finally:
        page.close()
