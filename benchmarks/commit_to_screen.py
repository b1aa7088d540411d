"""Commit to screen: how long after an event is committed its text is on the Room page.

    python benchmarks/commit_to_screen.py [--samples 20] [--poll 0.75]

What it does (offline model, temporary database and HOME, no network):
1. starts ``streamlit run app.py`` with its in-process runner off (``ROOMS_APP_RUNNER=0``) and
   the live view's fast poll interval set to ``--poll`` seconds (``ROOMS_UI_POLL_SECONDS``);
2. opens the Room page of a running room in Debian's Chromium (Playwright); a script in the page
   records, on every animation frame, the wall-clock time (``Date.now()``) at which each message
   text first appears;
3. ``--samples`` times, at a random moment of the poll cycle, takes one agent turn through the
   Room API in this process (``room.step()``), as a worker would;
4. reads the stored events back and, for each agent message, takes its commit time from the
   database (``updated_at``: the fenced commit that published the text; ``created_at`` is the
   claim, before the model was asked) and the time its text appeared in the page. The same
   machine's clock stamps both. Prints the median, p90 and max.

Target: median <= 1 s.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from live_view import CHROMIUM, LAUNCH_ARGS, start_server, wait_messages  # noqa: E402

from conversation.models import OfflineModel  # noqa: E402
from conversation.models.bindings import ModelCache  # noqa: E402

# Records the first time each chat message's body text is seen (one rAF loop, no server calls).
RECORDER = """
() => {
  window.__seen = {};
  const tick = () => {
    const now = Date.now();
    for (const el of document.querySelectorAll('[data-testid="stChatMessage"] [data-testid="stText"]')) {
      const text = el.innerText;
      if (!(text in window.__seen)) window.__seen[text] = now;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
"""


class _OneModel(ModelCache):
    """A model cache that answers every spec with one model object."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def get(self, spec: Any) -> Any:
        return self.model


def measure(samples: int, poll: float) -> list[float]:
    folder = Path(tempfile.mkdtemp(prefix="commit-to-screen-"))
    os.environ["HOME"] = str(folder / "home")  # EDSL writes under HOME in this process too
    os.environ["ROOMS_UI_POLL_SECONDS"] = str(poll)  # inherited by the server
    db_url = f"sqlite:///{folder / 'rooms.db'}"

    from playwright.sync_api import sync_playwright

    from storage import Database
    from ui.room import rooms
    from ui.room.templates import MUG_NEGOTIATION

    db = Database(db_url)
    endless = rooms.draft_from_template(
        MUG_NEGOTIATION,
        name="benchmark: commit to screen",
        termination={"kind": "max_turns", "max_turns": 10_000},
    )
    live = rooms.create_room(db, endless, opening="Open the bidding.")
    # Every reply a distinct text (the stand-in's negotiation lines repeat), so each one's first
    # appearance in the page belongs to exactly one commit.
    replies = itertools.count(1)
    unique = OfflineModel(func=lambda user_prompt, system_prompt: f"Offer no. {next(replies)}.")
    live._turn_engine().models = _OneModel(unique)
    server, url = start_server(folder, db_url)
    print(f"server pid {server.pid} at {url}; poll {poll} s; database {db_url}")
    rng = random.Random(11)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/room?room={live.id}")
            wait_messages(page, 1)
            page.evaluate(RECORDER)
            shown = 1
            for _ in range(samples):
                time.sleep(rng.uniform(0.3, 1.3))  # land at a random point of the poll cycle
                turn = live.step()
                assert turn is not None and turn.state == "done", turn
                shown += 1
                wait_messages(page, shown, timeout_ms=30_000)
            time.sleep(1.0)
            seen: dict[str, int] = page.evaluate("() => window.__seen")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    latencies = []
    messages = [e for e in live.events() if e.kind == "agent" and e.state == "done"]
    texts = [e.content for e in messages]
    for event in messages:
        if texts.count(event.content) > 1:
            continue  # a repeated text: its first appearance says nothing about this commit
        at = seen.get(event.content)
        if at is None:
            print(f"#{event.seq}: its text never appeared in the page")
            continue
        latencies.append(at / 1000 - event.updated_at.timestamp())
    db.dispose()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument(
        "--poll", type=float, default=float(os.environ.get("ROOMS_UI_POLL_SECONDS", "0.75"))
    )
    args = parser.parse_args()
    if not os.access(CHROMIUM, os.X_OK):
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")
    latencies = sorted(measure(args.samples, args.poll))
    if not latencies:
        raise SystemExit("no message was measured")
    median = statistics.median(latencies)
    print(
        f"\ncommit (updated_at) -> text on screen, {len(latencies)} messages, poll {args.poll} s: "
        f"median {median:.3f} s, min {latencies[0]:.3f} s, "
        f"p90 {latencies[int(0.9 * (len(latencies) - 1))]:.3f} s, max {latencies[-1]:.3f} s "
        f"(target: median <= 1 s) -> {'OK' if median <= 1.0 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
