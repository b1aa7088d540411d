"""Home's first load on a fresh server, in a real browser: with and without the server's warm-up.

    python benchmarks/app_first_load.py [--rooms 1000] [--settle 15]

A database with ``--rooms`` rooms (as ``app_pages.py`` builds it, one of them 2,000 messages long)
is served by a fresh ``streamlit run app.py`` for each run, with the in-process runner on. The
time measured is from ``page.goto('/')`` to Home's rooms table being drawn, in Debian's Chromium:

- ``no warm-up, at once``: ``ROOMS_APP_WARMUP=0``, the page opened as soon as the server is healthy
  (the baseline: the screens import pandas, plotly and the page helpers on the first visit);
- ``warm-up, at once``: the default, opened as soon as the server is healthy (the warm-up is still
  importing: the visitor waits only for what is left);
- ``warm-up, after N s``: the default, opened ``--settle`` seconds after the server is healthy (a
  person who starts the server and then opens the browser).

Target (issue 10): < 3 s. The ratios are against the baseline of the same run.
"""

from __future__ import annotations

import argparse
import os
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


def first_load(db_url: str, *, warm_up: bool, settle: float) -> float:
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="bench-first-load-"))
    os.environ["ROOMS_APP_WARMUP"] = "1" if warm_up else "0"
    process, url = start_server(folder, db_url, runner=True)
    try:
        time.sleep(settle)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = browser.new_page()
            started = time.perf_counter()
            page.goto(url + "/")
            page.get_by_test_id("stDataFrame").first.wait_for(timeout=120_000)
            elapsed = time.perf_counter() - started
            browser.close()
        return elapsed
    finally:
        process.terminate()
        process.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--settle", type=float, default=15.0)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-first-load-db-"))
    db_url = f"sqlite:///{folder / 'rooms.db'}"
    print(f"building {args.rooms} rooms ({build(db_url, args.rooms, 2000):.1f} s)")
    baseline = first_load(db_url, warm_up=False, settle=0)
    at_once = first_load(db_url, warm_up=True, settle=0)
    settled = first_load(db_url, warm_up=True, settle=args.settle)
    print(f"Home's first load, {args.rooms} rooms, real browser (target < 3 s)")
    print(f"  no warm-up, at once:      {baseline:6.2f} s")
    print(f"  warm-up, at once:         {at_once:6.2f} s  ({at_once / baseline:.2f} x baseline)")
    print(
        f"  warm-up, after {args.settle:.0f} s:     {settled:6.2f} s  "
        f"({settled / baseline:.2f} x baseline)"
    )


if __name__ == "__main__":
    main()
