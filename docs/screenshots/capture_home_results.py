"""Regenerate the screenshots of Home, Results and the Room page's research tools.

    python docs/screenshots/capture_home_results.py            # every screen below
    python docs/screenshots/capture_home_results.py room_branches results_statistics  # some

Builds a temporary database (the README's first experiment: Mug negotiation, 3 conditions x 4
replicates, run to the end by a worker with the offline model, plus its deal question answered;
and a mug room with a settings change, two forks of it and coded messages), serves the app with
``streamlit run`` and photographs it in Debian's Chromium:

- home.png, results_charts.png, results_deal_rate.png: Home and the Results charts;
- room_branches.png: a fork's Room page, Branches tab (the branch tree, two branches compared);
- room_edit_settings.png: the Room page's Settings tab with *Edit settings* open;
- room_coding.png: *Code messages* open, the tags shown under the tagged messages;
- results_statistics.png: Results -> Statistics (means by condition with intervals and n).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def build(url: str) -> int:
    from conversation.sync import run_sync
    from conversation.worker import Worker
    from storage import Database
    from ui import experiments as ex
    from ui.results import tables
    from ui.room import rooms
    from ui.room.templates import MUG_NEGOTIATION, TEMPLATES

    db = Database(url)
    for template in TEMPLATES.values():
        room = rooms.create_room(db, rooms.draft_from_template(template), opening=template.opening)
        room.run(max_turns=4)
    template = ex.template_from_room_template(MUG_NEGOTIATION)
    conditions = [
        ex.Condition(label, traits) for label, traits in MUG_NEGOTIATION.conditions.items()
    ]
    experiment = ex.create(db, "Mug negotiation", ex.design(template, conditions, 4))
    run_sync(Worker(db, concurrency=12, poll_interval=0.05).run(until_idle=True))
    ex.catch_up(db)
    ids = [int(r.id) for r in db_rooms(db, experiment)]
    spec = tables.question_spec("Yes / no", "Was a deal reached?")
    tables.run_analysis(db, spec, ids, experiment_id=experiment)
    studio = studio_room(db)
    db.dispose()
    return experiment, studio


def studio_room(db):  # type: ignore[no-untyped-def]
    """A mug room with a settings change, an edited fork (returned) and a plain one, and coded
    messages: what the Room page's branch, settings and coding panels show."""
    from conversation.analysis import coding
    from ui.room import rooms
    from ui.room.templates import MUG_NEGOTIATION

    draft = rooms.draft_from_template(MUG_NEGOTIATION, name="Mug talk (studio)")
    room = rooms.create_room(db, draft, opening=MUG_NEGOTIATION.opening, speaker="ann")
    room.run(max_turns=3)
    room.update_config({"breakpoints": {"before": ["Seller"]}, "max_output_tokens": 300}, by="ann")
    branch = room.fork(
        2, name="Mug talk: a firmer buyer", edit="Five dollars, final offer.", by="ann"
    )
    room.fork(3, name="Mug talk: plain replay", by="ann")
    branch.resume(by="ann")
    branch.run()
    for label in ("offer", "concession", "hostile"):
        coding.add_label(db, label, room_id=branch.id)
    said = [
        e for e in branch.events() if e.kind in ("human", "agent") and e.state in (None, "done")
    ]
    coding.tag_message(db, said[1].id, "offer", by="ann", rating=3)
    coding.tag_message(db, said[1].id, "hostile", by="ann")
    coding.tag_message(db, said[2].id, "concession", by="bo", note="moves towards the middle")
    return int(branch.id)


def db_rooms(db, experiment):  # type: ignore[no-untyped-def]
    import storage

    return storage.list_rooms(db, experiment_id=experiment, limit=None)


def main(wanted: set[str]) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        url = f"sqlite:///{home / 'rooms.db'}"
        # No background warm-up: on a fresh server it can race the first deep-linked Room page's
        # imports (a circular-import error seen here); the screens do not need it.
        os.environ.update(
            HOME=str(home), ROOMS_DATABASE_URL=url, ROOMS_APP_RUNNER="0", ROOMS_APP_WARMUP="0"
        )
        experiment, studio = build(url)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
             "true", "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=home, env=os.environ.copy(),
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(200):
                try:
                    if urllib.request.urlopen(base + "/_stcore/health").read() == b"ok":
                        break
                except OSError:
                    time.sleep(0.2)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                page = browser.new_page(viewport={"width": 1500, "height": 1100})
                page.set_default_timeout(120_000)
                shots = {
                    "home": lambda: home_shot(page, base),
                    "results": lambda: results_shots(page, base, experiment),
                    "room_branches": lambda: room_shot(page, base, studio, "Branches"),
                    "room_edit_settings": lambda: room_shot(page, base, studio, "Settings"),
                    "room_coding": lambda: room_shot(page, base, studio, "Code messages"),
                    "results_statistics": lambda: statistics_shot(page, base, experiment),
                }
                for name, shoot in shots.items():
                    if not wanted or name in wanted:
                        shoot()
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)


TALL = {"width": 1500, "height": 1900}
TALLER = {"width": 1500, "height": 2600}
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def settle(page) -> None:  # type: ignore[no-untyped-def]
    page.locator(IDLE).wait_for()
    page.wait_for_timeout(1500)


def home_shot(page, base: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(base + "/")
    page.get_by_test_id("stDataFrame").first.wait_for()
    page.locator(IDLE).wait_for()
    page.screenshot(path=str(OUT / "home.png"), full_page=True)


def results_shots(page, base: str, experiment: int) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base}/results?experiment={experiment}")
    page.get_by_test_id("stDataFrame").first.wait_for()
    page.get_by_role("tab", name="Charts").click()  # Results' tabs are drawn when opened
    page.get_by_test_id("stPlotlyChart").nth(5).wait_for()
    settle(page)
    page.screenshot(path=str(OUT / "results_charts.png"), full_page=True)
    page.get_by_test_id("stPlotlyChart").nth(5).screenshot(path=str(OUT / "results_deal_rate.png"))


def to_top(locator) -> None:  # type: ignore[no-untyped-def]
    """Scroll the page's own container so that ``locator`` is at the top of the window."""
    locator.evaluate("e => e.scrollIntoView({block: 'start'})")


def room_shot(page, base: str, room: int, panel: str) -> None:  # type: ignore[no-untyped-def]
    """The Room page of ``room`` with one panel open (a tab, or the Code messages expander)."""
    # The page scrolls inside its own container: a tall window shows the panel and the
    # transcript beside it (the coding panel sits below the turn details, so taller still).
    page.set_viewport_size(TALLER if panel == "Code messages" else TALL)
    page.goto(f"{base}/room?room={room}")
    page.get_by_test_id("stChatMessage").first.wait_for()
    settle(page)
    if panel == "Code messages":
        page.get_by_text("Code messages (qualitative tags)").click()
        settle(page)
        page.get_by_label("Message", exact=True).click()  # the tagged message: its tags' table
        page.get_by_role("option").filter(has_text="#2 Buyer").click()
        name = "room_coding.png"
    elif panel == "Settings":
        page.get_by_role("tab", name=panel).click()
        settle(page)
        summary = page.get_by_text("Edit settings")
        summary.click()
        settle(page)
        to_top(summary)
        name = "room_edit_settings.png"
    else:
        page.get_by_role("tab", name=panel).click()
        name = "room_branches.png"
    settle(page)
    page.screenshot(path=str(OUT / name))


def statistics_shot(page, base: str, experiment: int) -> None:  # type: ignore[no-untyped-def]
    page.set_viewport_size(TALL)
    page.goto(f"{base}/results?experiment={experiment}")
    page.get_by_test_id("stDataFrame").first.wait_for()
    settle(page)
    tab = page.get_by_role("tab", name="Statistics")
    tab.click()
    page.get_by_test_id("stPlotlyChart").first.wait_for()
    settle(page)
    # A measure that varies between the rooms of a condition, so the intervals have a width.
    page.get_by_label("Per-room measure").click()
    page.get_by_role("option", name="words per room").click()
    settle(page)
    to_top(tab)
    page.wait_for_timeout(500)
    page.screenshot(path=str(OUT / "results_statistics.png"))


if __name__ == "__main__":
    main(set(sys.argv[1:]))
