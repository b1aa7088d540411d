"""What a researcher met on the Results page in a real browser (issue 35): chart titles clipped
at the right edge of the two-column grid, a legend over the words axis' top tick, the stored
analyses picker saying "(running)" above a finished chart, and the Room page's narrow column
cutting the coding panel's "Add label"."""

from __future__ import annotations

import pytest

from tests.browser.browser_helpers import idle, open_page, until, wait_count, wait_text
from ui.room import rooms
from ui.room.templates import MUG_NEGOTIATION

pytestmark = pytest.mark.browser

# Every chart's title inside its own box, and no legend over an axis' tick labels.
_CHART_FACTS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map(chart => {
    const box = chart.getBoundingClientRect();
    const title = chart.querySelector('.gtitle');
    const t = title ? title.getBoundingClientRect() : null;
    const legend = chart.querySelector('.legend');
    const l = legend ? legend.getBoundingClientRect() : null;
    const ticks = [...chart.querySelectorAll('.yaxislayer-above .ytick text, .yaxislayer-above text')]
        .map(e => e.getBoundingClientRect());
    const overlaps = l === null ? 0 : ticks.filter(k =>
        k.width > 0 && k.left < l.right && k.right > l.left && k.top < l.bottom && k.bottom > l.top
    ).length;
    return {
        title: title ? title.textContent : "",
        clipped: t !== null && (t.right > box.right + 1 || t.left < box.left - 1),
        overlaps: overlaps,
    };
})"""


def _mug_rooms(db, count: int = 2) -> list[int]:  # type: ignore[no-untyped-def]
    made = []
    for i in range(count):
        draft = rooms.draft_from_template(MUG_NEGOTIATION, name=f"results mug {i}")
        made.append(rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening).id)
    return made


def test_chart_titles_fit_their_half_and_legends_cover_no_tick(fresh_server, browser) -> None:  # type: ignore[no-untyped-def]
    fresh_server.folder.mkdir(parents=True, exist_ok=True)
    fresh_server.start()
    db = fresh_server.database()
    made = _mug_rooms(db)
    assert until(lambda: all(rooms_ended(db, made)), timeout=60)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        open_page(page, fresh_server, "/results")
        wait_text(page, "Rooms (2 shown of 2)")
        idle(page)
        page.get_by_role("tab", name="Charts").click()
        wait_count(page, "stPlotlyChart", 5)
        assert until(lambda: all(f["title"] for f in page.evaluate(_CHART_FACTS)))
        facts = page.evaluate(_CHART_FACTS)
        assert not [f["title"] for f in facts if f["clipped"]], facts
        assert not [f["title"] for f in facts if f["overlaps"]], facts
        assert any(f["title"].startswith("How rooms ended") for f in facts)
    finally:
        page.close()
        db.dispose()


def rooms_ended(db, ids: list[int]) -> list[bool]:  # type: ignore[no-untyped-def]
    import storage

    return [storage.get_room(db, i).status not in ("idle", "running") for i in ids]


def test_the_analyses_picker_says_done_once_the_answers_are_in(fresh_server, browser) -> None:  # type: ignore[no-untyped-def]
    fresh_server.folder.mkdir(parents=True, exist_ok=True)
    fresh_server.start()
    db = fresh_server.database()
    made = _mug_rooms(db, 2)
    assert until(lambda: all(rooms_ended(db, made)), timeout=60)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        open_page(page, fresh_server, "/results")
        wait_text(page, "Rooms (2 shown of 2)")
        idle(page)
        page.get_by_role("tab", name="Analysis").click()
        page.get_by_role("button", name="Run analysis").click()
        wait_text(page, "started:")
        picker = page.get_by_label("Stored analyses", exact=True)
        picker.wait_for()
        wait_text(page, "Done: 2 of 2 answered", timeout=60_000)  # the state, drawn anew
        page.get_by_test_id("stPlotlyChart").first.wait_for()
        idle(page)
        shown = str(picker.input_value() or picker.inner_text() or "")
        assert "running" not in shown and "Running" not in page.inner_text("body")
    finally:
        page.close()
        db.dispose()


def test_the_coding_panels_add_label_is_not_cut(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    made = _mug_rooms(db, 1)
    open_page(page, app_server, f"/room?room={made[0]}")
    idle(page)
    page.get_by_text("Code messages (qualitative tags)").click()
    button = page.get_by_role("button", name="Add label", exact=True)
    button.wait_for()
    cut = button.evaluate(
        "b => [b, ...b.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1)"
    )
    assert not cut
    assert button.inner_text().strip() == "Add label"


def test_the_branch_tree_says_each_branchs_status_whole(app_server, db, page) -> None:  # type: ignore[no-untyped-def]
    """Issue 35: in the Room page's narrow right column the tree's table cut a branch's status
    ("termi…"; then, in the branch's cell, "(fork at 2) (not…") and hid its "forked at"."""
    from conversation.rooms.room import Room

    draft = rooms.draft_from_template(MUG_NEGOTIATION, name="Mug negotiation with a long name")
    room = Room.open(db, rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening).id)
    room.run(max_turns=2)
    fork = room.fork(2)
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_page(page, app_server, f"/room?room={fork.id}")
    idle(page)
    page.get_by_role("tab", name="Branches").click()
    line = page.get_by_text(f"▶ #{fork.id} {fork.name} (not started), forked at #2")
    line.wait_for()
    cut = line.evaluate(
        "e => [e, ...e.querySelectorAll('*')].some(x => x.scrollWidth > x.clientWidth + 1)"
    )
    assert not cut
    box = line.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1400  # wrapped within the page
    parent = page.get_by_text(f"#{room.id} {room.name} (ended)", exact=True)
    assert parent.is_visible()
