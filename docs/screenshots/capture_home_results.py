"""Regenerate docs/screenshots/home.png, results_charts.png and results_deal_rate.png.

    python docs/screenshots/capture_home_results.py

Builds a temporary database (the README's first experiment: Mug negotiation, 3 conditions x 4
replicates, run to the end by a worker with the offline model, plus its deal question answered),
serves the app with ``streamlit run`` and photographs Home and Results in Debian's Chromium.
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
    from ui import results, rooms
    from ui.templates import MUG_NEGOTIATION, TEMPLATES

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
    spec = results.question_spec("Yes / no", "Was a deal reached?")
    results.run_analysis(db, spec, ids, experiment_id=experiment)
    db.dispose()
    return experiment


def db_rooms(db, experiment):  # type: ignore[no-untyped-def]
    from storage import repository as repo

    return repo.list_rooms(db, experiment_id=experiment, limit=None)


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        url = f"sqlite:///{home / 'rooms.db'}"
        os.environ.update(HOME=str(home), ROOMS_DATABASE_URL=url, ROOMS_APP_RUNNER="0")
        experiment = build(url)
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
                idle = '[data-testid="stApp"][data-test-script-state="notRunning"]'
                page.goto(base + "/")
                page.get_by_test_id("stDataFrame").first.wait_for()
                page.locator(idle).wait_for()
                page.screenshot(path=str(OUT / "home.png"), full_page=True)
                page.goto(f"{base}/results?experiment={experiment}")
                page.get_by_test_id("stPlotlyChart").nth(5).wait_for()
                page.locator(idle).wait_for()
                page.wait_for_timeout(1500)
                page.screenshot(path=str(OUT / "results_charts.png"), full_page=True)
                page.get_by_test_id("stPlotlyChart").nth(5).screenshot(
                    path=str(OUT / "results_deal_rate.png")
                )
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
