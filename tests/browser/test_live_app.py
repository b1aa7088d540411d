"""The web app in a real browser (Debian Chromium via Playwright) against `streamlit run app.py`.

The flows a person does: build agents and a room, watch turns arrive without reloading, step in,
watch from a second tab, pause and stop, moderate, run an experiment, read results; plus the deep
link on a fresh server and message bodies shown as text. The server's own runner drives rooms with
the offline model; tests check what the browser shows and what the database holds.
"""

from __future__ import annotations

import contextlib
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import storage
from tests.browser.browser_helpers import (
    choose,
    fill,
    idle,
    open_page,
    post,
    until,
    wait_count,
    wait_query,
    wait_text,
)
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION, PLANNER_CODER_REVIEWER

pytestmark = pytest.mark.browser

SLOW_OFFLINE = {"service": "offline", "model": "offline", "parameters": {"latency": 0.4}}


def make_room(db, template=PLANNER_CODER_REVIEWER, opening=None, **changes):  # type: ignore[no-untyped-def]
    draft = rooms.draft_from_template(template, **changes)
    return rooms.create_room(db, draft, opening=opening or template.opening)


def test_deep_link_on_a_fresh_server_gets_the_room_page(fresh_server, browser) -> None:  # type: ignore[no-untyped-def]
    fresh_server.folder.mkdir(parents=True, exist_ok=True)
    db = fresh_server.database()
    room = make_room(db, name="Deep-linked room", opening="Hello from before the server started")
    db.dispose()
    fresh_server.start()
    page = browser.new_page()
    try:
        page.goto(f"{fresh_server.url}/room?room={room.id}")  # the server's very first visitor
        wait_text(page, "Deep-linked room")
        links = page.get_by_test_id("stSidebarNavLink").all_inner_texts()
        nav = [t.strip().split("\n")[-1] for t in links]  # the icon's ligature comes first
        screens = ["Home", "Agents", "Room", "Experiments", "Results", "Study monitor"]
        assert nav == screens  # not file names
        wait_text(page, "Your name in rooms")  # the shared sidebar
        assert page.get_by_test_id("stSidebar").get_by_role("textbox").count() == 1
        assert page.url.endswith(f"/room?room={room.id}")
        wait_text(page, "Hello from before the server started")
        # The first click on that first page is not lost (widget identities are stable). Pause,
        # not Stop: the room may have settled already, and Stop is disabled on a settled room.
        page.get_by_role("button", name="Pause", exact=True).click()
        db = fresh_server.database()
        assert until(lambda: storage.get_room(db, room.id).status == "paused")
        db.dispose()
    finally:
        page.close()


def test_create_agents_then_a_room_and_watch_turns_arrive(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, app_server, "/agents")
    for name, role in (("Ann", "product owner"), ("Ben", "developer")):
        choose(page, "Agent", "+ New agent")
        page.get_by_role("heading", name="New agent").wait_for()
        idle(page)
        fill(page, "Name", name)
        fill(page, "Persona instruction", f"You are a {role}. Keep it short.")
        page.get_by_role("button", name="Save", exact=True).click()
        wait_text(page, f"Saved {name}.")
    assert sorted(p.name for p in storage.list_agent_profiles(db)) == ["Ann", "Ben"]

    open_page(page, app_server, "/room")
    form = page.get_by_role("tabpanel", name="New room")
    form.get_by_text("Agents from the library", exact=True).click()
    for name in ("Ann", "Ben"):
        choose(page, "Agents (in speaking order)", name, scope=form)
    page.keyboard.press("Escape")
    fill(page, "Room name", "Ann and Ben", scope=form)
    fill(page, "Opening message (posted by you; it starts the room)", "Plan a tiny app.", form)
    form.get_by_role("button", name="Create room", exact=True).click()
    wait_query(page, "room=")
    wait_text(page, "Ann and Ben")
    # Round 0: both agents answer after the opening message, without any reload.
    wait_count(page, "stChatMessage", 3)
    (room,) = [r for r in storage.list_rooms(db) if r.name == "Ann and Ben"]
    speakers = [e.speaker for e in storage.events(db, room.id) if e.kind == "agent"]
    assert speakers[:2] == ["Ann", "Ben"]


def test_live_turns_second_tab_human_message_and_text_only(app_server, db, context) -> None:  # type: ignore[no-untyped-def]
    room = make_room(db, name="Two tabs", model=SLOW_OFFLINE)
    first, second = context.new_page(), context.new_page()
    alerts: list[str] = []
    for p in (first, second):
        p.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
        open_page(p, app_server, f"/room?room={room.id}")
    # Agent turns arrive in both tabs as they commit (0.4 s apart), no reload.
    for p in (first, second):
        wait_count(p, "stChatMessage", 3)
    until(lambda: room.status == "settled", timeout=30)
    wait_count(first, "stChatMessage", 4)
    hostile = "<script>alert(1)</script> @coder please add tests"
    post(first, hostile)
    # Sending once lost the page's ?room= (the room picker fell back to "+ New room") and the
    # message with it: the page must stay on its room.
    wait_text(first, "Activity 2")
    assert "room=" in first.url
    wait_text(second, "Activity 2")  # the other tab sees the new activity and its turns
    wait_text(second, "<script>alert(1)</script>")  # shown literally, as text
    messages = [e for e in storage.events(db, room.id) if e.kind == "human"]
    assert [m.content for m in messages][-1] == hostile and len(messages) == 2
    assert until(lambda: room.status == "settled", timeout=30)  # activity 2 ran its course
    shown = [e for e in storage.events(db, room.id) if e.kind in ("human", "agent")]
    assert len([e for e in shown if e.activity == 2]) > 1
    for p in (first, second):  # both tabs caught up with every message, without a reload
        wait_count(p, "stChatMessage", len(shown))
    assert alerts == []
    assert first.locator("script:text('alert(1)')").count() == 0


def press_until(page, name: str, done, tries: int = 4) -> None:  # type: ignore[no-untyped-def]
    """Click the button ``name`` until ``done()``. The live view redraws a running room's page as
    turns land; a click can meet a redraw and be lost, or wait for a button that never holds
    still (both seen in CI under load). Each action here is one write that a second click
    leaves as it is, so clicking again is safe."""
    url = page.url
    for _ in range(tries):
        assert page.url == url, f"the page left {url} for {page.url}"
        with contextlib.suppress(PlaywrightTimeout):
            page.get_by_role("button", name=name, exact=True).click(timeout=5_000, force=True)
        if until(done, timeout=8):
            return
    raise AssertionError(f"pressing {name!r} {tries} times did not take effect")


def test_pause_resume_and_stop(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    room = make_room(
        db,
        MUG_NEGOTIATION,
        name="Long haggle",
        model={"service": "offline", "model": "offline", "parameters": {"latency": 0.3}},
        termination={"kind": "max_turns", "max_turns": 200},
    )
    open_page(page, app_server, f"/room?room={room.id}")
    wait_count(page, "stChatMessage", 3)
    press_until(page, "Pause", lambda: room.status == "paused")
    wait_text(page, "Paused: resume to let the agents go on.")
    assert room.status == "paused"
    settled = until(lambda: room.pending() is None, timeout=5)  # a turn in flight still lands
    assert settled
    held = len(room.events())
    page.wait_for_timeout(1500)
    assert len(room.events()) == held  # no new turn while paused
    press_until(page, "Resume", lambda: len(room.events()) > held)
    press_until(page, "Stop", lambda: room.status == "stopped")
    wait_text(page, "Stopped: stopped by a person")
    assert room.status == "stopped"


def test_moderated_room_approve_with_edit_and_deny(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    room = make_room(db, name="Moderated", moderated=True)
    open_page(page, app_server, f"/room?room={room.id}")
    wait_text(page, "draft is waiting for approval", timeout=30_000)
    first = room.pending()
    box = page.get_by_label("Message (edit before approving if you like)")
    box.fill("Step 1: a form with two fields. @coder")
    box.press("Tab")
    page.get_by_role("button", name=re.compile(r"^Approve\b")).click()
    assert until(lambda: room.turn(first.id).state == "done")
    assert room.turn(first.id).result == "Step 1: a form with two fields. @coder"
    wait_text(page, "Step 1: a form with two fields.")

    assert until(
        lambda: (t := room.pending()) is not None and t.state == "waiting" and t.id != first.id
    )
    second = room.pending()
    wait_text(page, f"{second.speaker}'s draft is waiting for approval.")
    # The first draft's form stays on screen (faded) until the run that replaces it ends: seen
    # as two reason boxes in a full CI run. Fill the one that is left.
    page.wait_for_function(
        "l => document.querySelectorAll(`input[aria-label='${l}']`).length === 1",
        arg="Reason (the agent is told)",
        timeout=20_000,
        polling=100,
    )
    fill(page, "Reason (the agent is told)", "Please be more specific")
    page.get_by_role("button", name=re.compile(r"^Deny\b")).click()
    turn = until(lambda: (t := room.turn(second.id)).inputs["denials"] and t)
    assert turn.inputs["denials"][0]["reason"] == "Please be more specific"


def test_small_experiment_runs_to_completion_with_progress(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, app_server, "/experiments")
    fill(page, "Experiment name", "Browser mug test")
    replicates = page.get_by_label("Replicates per condition")
    replicates.fill("1")
    replicates.press("Tab")
    wait_text(page, "Planned rooms")
    page.get_by_role("button", name="Create and run", exact=True).click()
    wait_query(page, "experiment=")
    page.get_by_test_id("stProgress").first.wait_for()
    wait_text(page, "3 of 3 rooms finished", timeout=60_000)
    (experiment,) = [e for e in storage.list_experiments(db) if e.name == "Browser mug test"]
    assert until(lambda: storage.get_experiment(db, experiment.id).status == "done")
    assert len(storage.list_rooms(db, experiment_id=experiment.id)) == 3


def test_results_chart_and_csv_download(app_server, db, page, tmp_path) -> None:  # type: ignore[no-untyped-def]
    room = make_room(db, MUG_NEGOTIATION, name="For results")
    until(lambda: room.status in ("terminated", "settled"))
    open_page(page, app_server, "/results")
    page.get_by_role("tab", name="Charts").click()  # a lazy tab: drawn when opened
    wait_count(page, "stPlotlyChart", 4)
    page.get_by_role("tab", name="Export").click()
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Rooms (CSV)", exact=True).click()
    download = download_info.value
    target = tmp_path / "rooms.csv"
    download.save_as(target)
    header, *rows = target.read_text().splitlines()
    assert header.startswith("room_id,name,status") and rows
    assert any(line.startswith(f"{room.id},For results,") for line in rows)


#: How far (px) an element's end is below the end of the box that scrolls it (0 when it is not
#: clipped, or when the page itself is that box).
CLIPPED_BY_ITS_BOX = """e => {
    let box = e.parentElement;
    while (box && !["auto", "scroll"].includes(getComputedStyle(box).overflowY)) {
        box = box.parentElement;
    }
    if (!box || box.matches('[data-testid="stMain"]')) return 0;
    return e.getBoundingClientRect().bottom - box.getBoundingClientRect().bottom;
}"""


def test_moderation_controls_stay_in_view_beside_the_newest_message(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    """Issue 19: with a long log, reading the newest message scrolled Approve / Deny out of view.
    The log scrolls in its own box, so the page does not move while reading it: both are on
    screen at once, and Alt+A approves from the keyboard."""
    room = make_room(db, name="Long log", moderated=True)
    open_page(page, app_server, f"/room?room={room.id}")
    wait_text(page, "draft is waiting for approval", timeout=30_000)
    draft = room.pending()
    for i in range(40):
        storage.append_message(db, room.id, "system", "room", f"Notice {i}: " + "long line " * 30)
    open_page(page, app_server, f"/room?room={room.id}")  # a long log, opened afresh
    wait_text(page, "draft is waiting for approval", timeout=30_000)
    newest = page.locator("p", has_text="Notice 39:")
    newest.wait_for(timeout=30_000)
    idle(page)
    approve = page.get_by_role("button", name="Approve")
    height = page.viewport_size["height"]

    def on_screen(locator) -> bool:  # type: ignore[no-untyped-def]
        box = locator.bounding_box()
        return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height

    # Reading the newest message scrolls the log's box (and the page, if the box's end is below
    # the window) until its last line is at the bottom of the window. The box may still be
    # moving (it scrolls smoothly, and lines drawn late move it): each try scrolls it again.
    # Then the page itself, as a person scrolls it (the wheel over the log does not always pass
    # on to the page in headless Chromium), only once the box is at its end and only as far as
    # the newest message's end needs. (scrollIntoView alone once left the page where it was
    # when a line drawn above the log after the page settled pushed the box's end 55 px below a
    # 1000 px window; scrolling the page while the box was still moving took the controls out.)
    def read_newest() -> bool:
        newest.evaluate("e => e.scrollIntoView({block: 'end'})")
        clipped = newest.evaluate(CLIPPED_BY_ITS_BOX)
        box = newest.bounding_box()
        below = box["y"] + box["height"] - height if box else 0
        if clipped <= 1 and below > 0:
            page.evaluate(
                "d => document.querySelector('[data-testid=\"stMain\"]').scrollBy(0, d)",
                below + 8,
            )
        return on_screen(newest) and on_screen(approve.first)

    assert until(read_newest), (
        newest.bounding_box(),
        approve.first.bounding_box(),
        height,
    )
    page.keyboard.press("Alt+a")
    assert until(lambda: room.turn(draft.id).state == "done")
