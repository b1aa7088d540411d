"""The Room page in a real browser: a change of the turn-details picker reruns only its panel (a
fragment); opening a right-hand tab reruns the page once (the tabs are lazy: only the open one is
drawn), and downloading an export asks for no rerun at all."""

from __future__ import annotations

import pytest

from conversation import OfflineModel, Room
from tests.browser.browser_helpers import RerunRecorder, idle, open_page, until, wait_text

pytestmark = pytest.mark.browser


def test_turn_picker_reruns_its_fragment_a_tab_reruns_once_and_exports_rerun_nothing(  # type: ignore[no-untyped-def]
    app_server, browser, db
) -> None:
    room = Room.create(
        db,
        name="panel check",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        model=OfflineModel(seed=5, mention_probability=0),
        planner={"kind": "round_robin", "transitions": None},
        termination={"kind": "max_turns", "max_turns": 2},
    )
    room.post("Two turns, please.")
    room.run()  # here, or by the server's runner: either way, done
    until(lambda: Room.open(db, room.id).status == "terminated", timeout=60)
    page = browser.new_page()
    sent = RerunRecorder(page)
    try:
        open_page(page, app_server, f"/room?room={room.id}")
        wait_text(page, "What the agent saw")
        idle(page)

        box = page.get_by_label("Turn", exact=True)
        shown = box.input_value() or box.inner_text()  # the turn shown: the latest, Bob's
        other = "Alice" if "Bob" in shown else "Bob"

        def pick_other_turn() -> None:
            box.click()
            box.press_sequentially(other)
            box.press("Enter")

        asked = sent.asked_after(pick_other_turn)
        assert asked, f"no rerun was requested: {sent.reruns()}"
        assert all(fragment for fragment, _ in asked), "the turn picker reran the whole page"
        idle(page)

        def open_exports_tab() -> None:
            page.get_by_role("tab", name="Fork & export").click()
            page.get_by_role("button", name="Export CSV", exact=True).wait_for()

        # One run of the page draws the tab that was opened (lazy tabs).
        assert sent.asked_after(open_exports_tab, tries=1) == [("", False)]
        idle(page)

        def download() -> None:
            with page.expect_download():
                page.get_by_role("button", name="Export CSV", exact=True).click()

        assert sent.asked_after(download, tries=1) == []
    finally:
        page.close()
