"""Live view: how fast a committed turn shows in the browser, and what an idle open tab costs.

    python benchmarks/live_view.py [--samples 20] [--tabs 4] [--seconds 30]

What it does (offline model, temporary database and HOME, no network):
1. starts ``streamlit run app.py`` with its in-process runner off (``ROOMS_APP_RUNNER=0``), so the
   only writer is this script;
2. opens the Room page of a running room in Debian's Chromium (Playwright);
3. ``--samples`` times, at a random moment, takes one agent turn through the Room API
   (``room.step()``: claim, model call, fenced commit) in this process and measures the time from
   the commit returning to the new message appearing in the page (a ``requestAnimationFrame``
   poll of the DOM); prints the median and the spread;
4. pauses that room, opens ``--tabs`` tabs on a settled room (idle: nothing happens) and measures
   the server process's CPU time from ``/proc/<pid>/stat`` over ``--seconds`` once the tabs are
   drawn, minus the same server with no tab open, per tab, as a share of one core. The same for
   tabs on the Home page, and (for information) on a running room whose agents are silent, where
   the page polls fast.

Targets (docs/design.md, "Performance targets"): median <= 1.5 s; < 2% of a core per idle tab.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    folder: Path, db_url: str, *, runner: bool = False, app_dir: Path = ROOT
) -> tuple[subprocess.Popen[bytes], str]:
    """``streamlit run app.py`` of ``app_dir`` (this project's app by default) on a free port of
    127.0.0.1, with a temporary HOME under ``folder``; returns the process and its URL."""
    port = free_port()
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        ROOMS_DATA_DIR=str(folder / "data"),
        ROOMS_DATABASE_URL=db_url,
        ROOMS_APP_RUNNER="1" if runner else "0",
    )
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=app_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                if r.read() == b"ok":
                    return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"the server did not start; see {folder / 'server.log'}")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (fields 14 and 15 of /proc/<pid>/stat), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def cpu_share(pid: int, seconds: float) -> float:
    """The process's CPU use over ``seconds``, as a share of one core."""
    before, start = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - start)


def wait_messages(page, count: int, timeout_ms: int = 30_000) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(
        "n => document.querySelectorAll('[data-testid=\"stChatMessage\"]').length >= n",
        arg=count,
        polling="raf",
        timeout=timeout_ms,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--tabs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args()
    if not os.access(CHROMIUM, os.X_OK):
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")

    folder = Path(tempfile.mkdtemp(prefix="live-view-bench-"))
    os.environ["HOME"] = str(folder / "home")  # EDSL writes under HOME in this process too
    db_url = f"sqlite:///{folder / 'rooms.db'}"

    from playwright.sync_api import sync_playwright

    from storage import Database
    from ui.room import rooms
    from ui.room.templates import MUG_NEGOTIATION, PLANNER_CODER_REVIEWER

    db = Database(db_url)
    endless = rooms.draft_from_template(
        MUG_NEGOTIATION,
        name="benchmark: live",
        termination={"kind": "max_turns", "max_turns": 10_000},
    )
    live = rooms.create_room(db, endless, opening="Open the bidding.")
    idle = rooms.create_room(db, rooms.draft_from_template(PLANNER_CODER_REVIEWER), opening="Hi.")
    idle.run()
    assert idle.status == "settled", idle.status

    server, url = start_server(folder, db_url)
    print(f"server pid {server.pid} at {url}; database {db_url}")
    rng = random.Random(7)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)

            # 1. commit -> visible
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/room?room={live.id}")
            wait_messages(page, 1)
            shown = 1
            latencies = []
            for _ in range(args.samples):
                time.sleep(rng.uniform(0.3, 1.3))  # land at a random point of the poll cycle
                turn = live.step()
                committed = time.perf_counter()
                assert turn is not None and turn.state == "done", turn
                shown += 1
                wait_messages(page, shown)
                latencies.append(time.perf_counter() - committed)
            page.close()
            latencies.sort()
            print(
                f"\ncommit -> visible, {len(latencies)} turns: median {statistics.median(latencies):.3f} s, "
                f"min {latencies[0]:.3f} s, p90 {latencies[int(0.9 * (len(latencies) - 1))]:.3f} s, "
                f"max {latencies[-1]:.3f} s   (target <= 1.5 s)"
            )

            # 2. CPU per idle tab (the live room is paused: no room runs, every page is idle)
            live.pause()
            time.sleep(3)
            baseline = cpu_share(server.pid, args.seconds)
            print(f"\nserver CPU with no tab open: {baseline:.2%} of a core")
            for label, path in (
                ("a settled room (idle)", f"/room?room={idle.id}"),
                ("the Home page", "/"),
                ("a running room with silent agents (fast polling)", f"/room?room={live.id}"),
            ):
                if "running" in label:
                    live.resume()  # running again, but nothing drives it: polls, no new turns
                tabs = [browser.new_page() for _ in range(args.tabs)]
                for tab in tabs:
                    tab.goto(url + path, timeout=60_000)
                    tab.get_by_test_id("stSidebarNavLink").first.wait_for(timeout=60_000)
                for tab in tabs:
                    tab.locator(
                        '[data-testid="stApp"][data-test-script-state="notRunning"]'
                    ).wait_for(timeout=60_000)
                time.sleep(5)  # first renders and lazy script chunks are done
                share = cpu_share(server.pid, args.seconds)
                per_tab = max(0.0, share - baseline) / args.tabs
                target = "  (target < 2%)" if "idle" in label or "Home" in label else ""
                print(
                    f"{args.tabs} tabs on {label}: server {share:.2%} of a core, "
                    f"{per_tab:.2%} per tab{target}"
                )
                for tab in tabs:
                    tab.close()
                time.sleep(1)
            browser.close()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        db.dispose()


if __name__ == "__main__":
    main()
