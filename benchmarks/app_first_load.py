"""Home's first load on a fresh server, in a real browser: with and without the server's warm-up.

    python benchmarks/app_first_load.py [--rooms 1000] [--runs 3] [--settle 0]

A database with ``--rooms`` rooms (as ``app_pages.py`` builds it, one of them 2,000 messages long)
is served by a fresh ``streamlit run app.py`` for each run, with the in-process runner on. The
clock starts when the server answers ``/_stcore/health`` (the moment a person could open the URL;
a fresh browser, nothing cached, is already running) and stops when Home's content is visible (its
rooms table, or its empty-state text), in Debian's Chromium. ``--runs`` runs of each kind, median:

- ``no warm-up, at once``: ``ROOMS_APP_WARMUP=0``, the page opened as soon as the server is healthy
  (the baseline: the screens import pandas, plotly and the page helpers on the first visit);
- ``warm-up, at once``: the default, opened as soon as the server is healthy (the warm-up is still
  importing: the visitor waits only for what is left);
- ``warm-up, after N s`` (only with ``--settle N``): the default, opened ``N`` seconds after the
  server is healthy (a person who starts the server and then opens the browser).

Also printed: the seconds from starting the server to its first healthy answer (the warm-up of
Home's imports happens before it, so that figure grows by what Home's first load saves).

Target: < 3 s. The ratios are against the baseline of the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ["HOME"] = tempfile.mkdtemp(prefix="bench-home-")
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from app_pages import build  # noqa: E402
from live_view import CHROMIUM, LAUNCH_ARGS, start_server  # noqa: E402

#: Seconds from starting the server process to its first healthy answer, by warm-up on / off.
STARTS: dict[bool, list[float]] = {}


def first_load(db_url: str, *, warm_up: bool, settle: float) -> float:
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="bench-first-load-"))
    os.environ["ROOMS_APP_WARMUP"] = "1" if warm_up else "0"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        page = browser.new_page()  # a fresh profile: nothing of the app is cached
        starting = time.perf_counter()
        process, url = start_server(folder, db_url, runner=True)
        STARTS.setdefault(warm_up, []).append(time.perf_counter() - starting)
        try:
            time.sleep(settle)
            started = time.perf_counter()
            page.goto(url + "/")
            home = page.get_by_test_id("stDataFrame").or_(page.get_by_text("No rooms yet"))
            home.first.wait_for(timeout=120_000)
            elapsed = time.perf_counter() - started
        finally:
            process.terminate()
            process.wait(timeout=20)
            browser.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settle", type=float, default=0.0)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-first-load-db-"))
    db_url = f"sqlite:///{folder / 'rooms.db'}"
    print(f"building {args.rooms} rooms ({build(db_url, args.rooms, 2000):.1f} s)")
    kinds = {"no warm-up, at once": (False, 0.0), "warm-up, at once": (True, 0.0)}
    if args.settle:
        kinds[f"warm-up, after {args.settle:.0f} s"] = (True, args.settle)
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(args.runs):  # interleaved, so a busy moment of the machine hits every kind
        for kind, (warm_up, settle) in kinds.items():
            times[kind].append(first_load(db_url, warm_up=warm_up, settle=settle))
    print(
        f"Home's first load, {args.rooms} rooms, real browser, median of {args.runs} (target < 3 s)"
    )
    baseline = statistics.median(times["no warm-up, at once"])
    for kind, runs in times.items():
        median = statistics.median(runs)
        each = ", ".join(f"{t:.2f}" for t in runs)
        print(f"  {kind:24} {median:6.2f} s  ({median / baseline:.2f} x baseline; runs {each})")
    for warm_up, starts in sorted(STARTS.items()):
        label = "with" if warm_up else "without"
        print(
            f"  server start to its first answer, {label} warm-up: "
            f"{statistics.median(starts):.2f} s (median)"
        )


if __name__ == "__main__":
    main()
