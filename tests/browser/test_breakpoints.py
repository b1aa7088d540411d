"""A live breakpoint in a real browser: a room the app's runner drives pauses before an agent
speaks, the page says so, and pressing Resume lets that agent speak."""

from __future__ import annotations

from typing import Any

import pytest

from conversation import OfflineModel, Room
from tests.browser.browser_helpers import RerunRecorder, idle, open_page, until, wait_text

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


def test_a_widget_change_in_a_panel_reruns_only_its_fragment(app_server, browser, db) -> None:  # type: ignore[no-untyped-def]
    room = Room.create(
        db,
        name="fragment room",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        model=OfflineModel(seed=5, mention_probability=0),
        planner={"kind": "round_robin", "transitions": None},
        termination={"kind": "max_turns", "max_turns": 2},
    )
    room.post("Two turns, please.")
    room.run()  # here, or by the server's runner (it starts with the server): either way, done
    until(lambda: Room.open(db, room.id).status == "terminated", timeout=60)
    page = browser.new_page()
    sent = RerunRecorder(page)
    try:
        open_page(page, app_server, f"/room?room={room.id}")
        page.get_by_role("tab", name="Settings").click()
        wait_text(page, "Preview the next prompt of")
        idle(page)

        def rerun_asked_by(action: Any) -> list[tuple[str, bool]]:
            # The live view redraws the page on its own every second or so (see asked_after).
            return sent.asked_after(action, timeout=15)

        def pick(label: str, name: str, *, close: bool = False) -> Any:
            def action() -> None:
                box = page.get_by_label(label, exact=True)
                box.click()
                box.press_sequentially(name)
                box.press("Enter")
                if close:
                    box.press("Escape")  # a multiselect sends its value when its list closes

            return action

        shown = page.get_by_test_id("stSelectbox").filter(has_text="Preview the next prompt of")
        target = "Alice" if "Bob" in shown.inner_text() else "Bob"
        asked = rerun_asked_by(pick("Preview the next prompt of", target))
        assert asked, f"no rerun was requested: {sent.reruns()}"
        assert asked[0][0], "the preview picker reran the whole page"
        # A widget of the page itself (not in a panel) reruns the page: the check can fail.
        idle(page)
        asked = rerun_asked_by(pick("Send privately to (optional)", "Alice", close=True))
        assert asked, f"no rerun was requested: {sent.reruns()}"
        assert asked[0][0] == ""
    finally:
        page.close()
