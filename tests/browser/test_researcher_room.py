"""What a researcher met on the Room page in a real browser (issue 35): the name in rooms that
went back to ``user`` on every reload, link, tab and restart; a half-typed edit that vanished when
another moderator decided the draft; a new room opened at the form's scroll position; a repeated
"room-pick" warning in the server's log."""

from __future__ import annotations

import re

import pytest

import storage
from tests.browser.browser_helpers import fill, idle, open_page, until, wait_text
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION

pytestmark = pytest.mark.browser


def name_field(page):  # type: ignore[no-untyped-def]
    return page.get_by_test_id("stSidebar").get_by_label("Your name in rooms", exact=True)


def moderated_room(db):  # type: ignore[no-untyped-def]
    draft = rooms.draft_from_template(MUG_NEGOTIATION, name="moderated mug", moderated=True)
    return rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening)


def test_the_name_in_rooms_is_kept_across_reloads_links_tabs_and_restarts(
    fresh_server, browser
) -> None:  # type: ignore[no-untyped-def]
    fresh_server.start()
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        open_page(page, fresh_server, "/")
        assert until(lambda: name_field(page).input_value() == "user")
        fill(page, "Your name in rooms", "ann")
        assert until(lambda: "rooms_name=ann" in page.evaluate("document.cookie"))
        page.reload()
        open_page(page, fresh_server, "/")
        assert until(lambda: name_field(page).input_value() == "ann")  # a reload
        db = fresh_server.database()
        room = moderated_room(db)
        other = context.new_page()  # a new tab, by a deep link
        open_page(other, fresh_server, f"/room?room={room.id}")
        assert until(lambda: name_field(other).input_value() == "ann")
        wait_text(other, "Acting as ann")  # beside Approve and Deny
        other.get_by_role("button", name=re.compile(r"^Approve\b")).click()
        assert until(lambda: _decided_by(db, room.id) == ["ann"])  # recorded under the name
        db.dispose()
        fresh_server.stop()
        fresh_server.start()  # a restart: the browser still knows the name
        page.reload()
        open_page(page, fresh_server, "/")
        assert until(lambda: name_field(page).input_value() == "ann")
    finally:
        context.close()


def _decided_by(db, room_id: int) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        d["by"]
        for e in storage.events(db, room_id)
        if e.kind == "agent"
        for d in (e.data or {}).get("decisions", [])
    ]


def test_a_half_typed_edit_survives_another_moderators_decision(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    room = moderated_room(db)
    assert until(lambda: room.pending() is not None and room.pending().entry.is_draft)
    pending = room.pending()
    open_page(page, app_server, f"/room?room={room.id}")
    box = page.get_by_label("Message (edit before approving if you like)", exact=True).first
    box.wait_for()
    idle(page)
    box.click()
    box.press("End")
    box.type(" -- my half-typed edit")  # focused, never committed (no Tab, no click away)
    room.turn(pending.id).approve(by="bob")  # the other moderator, in another browser
    wait_text(page, "approved by bob")
    kept = page.get_by_label("Message (edit before approving if you like)", exact=True).first
    assert kept.input_value().endswith(" -- my half-typed edit")
    wait_text(page, "Your edit was not applied")


def test_a_new_room_opens_at_the_top_of_its_page(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, app_server, "/room")
    create = page.get_by_role("button", name="Create room", exact=True)
    create.scroll_into_view_if_needed()
    idle(page)
    assert page.evaluate(_SCROLL) > 100  # the form's button is far down its page
    name = page.get_by_label("Room name", exact=True).first  # the Import tab has one too
    name.fill("opened at the top")
    name.press("Tab")
    idle(page)
    create.scroll_into_view_if_needed()
    create.click()
    wait_text(page, "opened at the top")
    page.get_by_role("heading", name="opened at the top").wait_for()
    assert until(lambda: page.evaluate(_SCROLL) == 0)
    assert "room-pick" not in app_server.log()  # no widget-state warning on the way


_SCROLL = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    return Math.max(main ? main.scrollTop : 0, window.scrollY);
}"""


def test_the_readmes_tour_works_as_written(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    """Issue 35: the README said to open a running room and type a message, but with the
    instant offline model all 12 rooms ended within half a second. As the README says now: set
    "Offline model: seconds per reply" to 2, Create and run, open a running room, step in."""
    before = {e.id for e in storage.list_experiments(db)}
    open_page(page, app_server, "/experiments")
    pace = page.get_by_label("Offline model: seconds per reply", exact=True)
    pace.fill("2")
    pace.press("Tab")
    idle(page)
    page.get_by_role("button", name="Create and run", exact=True).click()
    made = until(lambda: [e for e in storage.list_experiments(db) if e.id not in before])
    assert made
    running = until(
        lambda: [
            r.id for r in storage.list_rooms(db, experiment_id=made[0].id) if r.status == "running"
        ]
    )
    assert running, "no room of the tour's experiment was still running"
    open_page(page, app_server, f"/room?room={running[0]}")
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill("Could you both meet at $7?")
    box.press("Enter")
    wait_text(page, "Could you both meet at $7?")
    assert until(
        lambda: any(
            e.content == "Could you both meet at $7?" for e in storage.events(db, running[0])
        )
    )


def test_a_room_title_with_a_url_copies_as_typed(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    """Issue 35: a title holding a URL carried an invisible U+2060 into copied text."""
    name = "Pricing per https://example.org/mugs and www.example.org"
    draft = rooms.draft_from_template(MUG_NEGOTIATION, name=name)
    room = rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening)
    open_page(page, app_server, f"/room?room={room.id}")
    heading = page.get_by_role("heading", name=name, exact=True)
    heading.wait_for()
    assert heading.inner_text() == name and "\u2060" not in heading.inner_text()
    assert heading.locator("a").count() == 0  # shown as text, not as a link
