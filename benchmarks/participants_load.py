"""Participants under load: a person's message, from send to the other person's screen.

    python benchmarks/participants_load.py [--participants 24] [--messages 3] [--poll 1.0]
        [--clients websocket|chromium] [--spread 1.0] [--wait 20]

What it does (offline model, temporary database and HOME, no network):
1. starts ``streamlit run app.py`` (with its in-process runner, which drives the agents) and
   launches the shipped example study (2 people + 1 agent mediator per room) with no pre-survey,
   enough groups for everyone and a long time limit;
2. opens ``--participants`` participant sessions through the join link; each consents and waits
   in the lobby until it is in a room (N/2 rooms). ``--clients websocket`` (the default): each
   session is a ``stream_client.StreamClient``, Streamlit's browser protocol spoken without a
   browser, all in this process, so the measure is the server's; ``--clients chromium``: each is
   a Chromium browser context of its own (on a small machine the browsers take the server's CPU);
3. each session records the wall-clock time at which each text first reaches it: the websocket
   client when the delta arrives, the Chromium page on every animation frame (``Date.now()``);
4. ``--messages`` rounds: every person sends one message (random order; websocket sends spread
   over ``--spread`` seconds a round), stamped just before it is sent; the agents answer as they
   would;
5. waits until every message is on its partner's screen (or ``--wait`` seconds), then prints the
   median and p95 of send-to-screen, the messages never seen (lost), and the server's CPU (share
   of one core, over the sending phase). The same machine's clock stamps both ends.

Target on the project's 2-core machine: 24 participants, p95 <= 2 s, 0 lost. The last line:
``PARTICIPANTS=<n> P50_SEND_TO_SCREEN_S=<x> P95_SEND_TO_SCREEN_S=<x> LOST=<n>``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from live_view import CHROMIUM, LAUNCH_ARGS, cpu_seconds, start_server  # noqa: E402

RECORDER = """
() => {
  window.__seen = window.__seen || {};
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


def launch(db_url: str, people: int) -> str:
    import tomllib

    from conversation import study
    from storage import Database

    data = tomllib.loads((ROOT / "examples" / "study.toml").read_text(encoding="utf-8"))
    data["pre_survey"] = []
    data["experiment"]["groups"] = max(1, -(-people // 4))  # 2 conditions x 2 people per room
    data["room"].update(time_limit_seconds=3600, words_per_minute=0)
    data["participants"].update(cap=people, dropout_seconds=600)
    db = Database(db_url)
    try:
        definition = study.load_definition(json.dumps(data), fmt="json")
        return study.launch_study(db, definition).code
    finally:
        db.dispose()


def join_all(browser: Any, url: str, code: str, people: int) -> list[Any]:
    """Everyone opens the link, then everyone consents (as people arriving together would)."""
    pages = []
    for number in range(people):
        context = browser.new_context(viewport={"width": 800, "height": 700})
        context.set_default_timeout(300_000)
        page = context.new_page()
        page.goto(f"{url}/participate?study={code}&PROLIFIC_PID=load-{number}")
        pages.append(page)
        say(f"person {number} opened the link")
    for page in pages:
        page.get_by_role("button", name="I agree").click()
    say("everyone consented")
    return pages


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def seat(page: Any) -> str:
    page.wait_for_function(
        "() => document.body.innerText.includes('in this conversation')", timeout=300_000
    )
    body = page.inner_text("body")
    return body.split("You are ", 1)[1].split(" in this conversation", 1)[0].strip()


def partners(db_url: str, code: str, people: int) -> dict[int, int]:
    """Each person's partner (the other person in their room), by the join order's number."""
    from conversation import study
    from storage import Database

    db = Database(db_url)
    try:
        pid = {r["pseudonym"]: r["PROLIFIC_PID"] for r in study.recruitment_table(db, code)}
        rooms: dict[Any, list[int]] = {}
        for row in study.participants_table(db, code):
            number = int(pid[row["pseudonym"]].split("-")[1])
            rooms.setdefault(row["room_id"], []).append(number)
    finally:
        db.dispose()
    found = {}
    for members in rooms.values():
        if len(members) == 2:
            a, b = members
            found[a], found[b] = b, a
    assert len(found) == people, f"not everyone has a partner: {rooms}"
    return found


def stored(db_url: str, code: str) -> int:
    """How many of the benchmark's messages the database holds (lost at sending vs on screen)."""
    from conversation import study
    from storage import Database

    db = Database(db_url)
    try:
        rows = study.transcripts_table(db, code)
    finally:
        db.dispose()
    return sum(1 for r in rows if str(r.get("content", "")).startswith("message "))


def send(page: Any, text: str) -> int:
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(text)
    sent = int(page.evaluate("Date.now()"))
    box.press("Enter")
    return sent


def measure(pages: list[Any], partner: dict[int, int], rounds: int, wait: float) -> tuple:
    sent: dict[str, tuple[int, int]] = {}  # text -> (receiver, send time)
    order = list(range(len(pages)))
    for k in range(rounds):
        random.shuffle(order)
        for n in order:
            text = f"message {k} from person {n} ({random.randrange(10**6):06d})"
            sent[text] = (partner[n], send(pages[n], text))
        time.sleep(1.0)
    deadline = time.monotonic() + wait
    seen: dict[int, dict[str, int]] = {}
    while True:
        seen = {n: page.evaluate("() => window.__seen") for n, page in enumerate(pages)}
        missing = [t for t, (to, _) in sent.items() if t not in seen[to]]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    delays = [(seen[to][t] - at) / 1000 for t, (to, at) in sent.items() if t in seen[to]]
    return delays, len(missing)


def run_chromium(url: str, code: str, db_url: str, args: Any, process: Any) -> tuple:
    """The Chromium mode: one browser context per person (the browsers share the server's CPU)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        pages = join_all(browser, url, code, args.participants)
        for page in pages:
            seat(page)
            page.evaluate(RECORDER)
        say("everyone is in a room; sending")
        partner = partners(db_url, code, args.participants)
        cpu_before, wall_before = cpu_seconds(process.pid), time.monotonic()
        delays, lost = measure(pages, partner, args.messages, args.wait)
        cpu = (cpu_seconds(process.pid) - cpu_before) / (time.monotonic() - wall_before)
        browser.close()
    return delays, lost, cpu


async def _ws_join(url: str, code: str, people: int) -> list[Any]:
    """Everyone opens the link, then everyone consents and waits to be seated."""
    import asyncio

    from stream_client import StreamClient

    clients = [
        StreamClient(url, "participate", f"study={code}&PROLIFIC_PID=load-{n}")
        for n in range(people)
    ]
    for client in clients:
        await client.open()
    say(f"{people} sessions opened the link")
    await asyncio.gather(*(client.click("I agree") for client in clients))
    say("everyone consented")
    await asyncio.gather(*(client.wait_for("in this conversation") for client in clients))
    await asyncio.gather(
        *(client.wait_until(lambda c=client: c.chat_id, 300, "chat box") for client in clients)
    )
    return clients


async def _ws_measure(
    clients: list[Any], partner: dict[int, int], args: Any, process: Any
) -> tuple:
    """``--messages`` rounds, each person's send spread over ``--spread`` seconds, then wait."""
    import asyncio

    sent: dict[str, tuple[int, float]] = {}
    order = list(range(len(clients)))
    cpu_before, wall_before = cpu_seconds(process.pid), time.monotonic()
    mine_before = time.process_time()
    for k in range(args.messages):
        random.shuffle(order)
        for n in order:
            text = f"message {k} from person {n} ({random.randrange(10**6):06d})"
            sent[text] = (partner[n], time.time())
            await clients[n].chat(text)
            await asyncio.sleep(args.spread / len(clients))
        await asyncio.sleep(1.0)
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        if all(t in clients[to].seen for t, (to, _) in sent.items()):
            break
        await asyncio.sleep(0.2)
    wall = time.monotonic() - wall_before
    cpu = (cpu_seconds(process.pid) - cpu_before) / wall
    say(
        f"the websocket clients' own CPU: {(time.process_time() - mine_before) / wall:.0%} of a core"
    )
    missing = [t for t, (to, _) in sent.items() if t not in clients[to].seen]
    closed = [n for n, client in enumerate(clients) if client.closed]
    if closed:
        say(f"sessions whose connection ended before the end: {closed}")
    if missing:
        say(f"never seen by their partner: {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        idle = sorted({sent[t][0] for t in missing if not clients[sent[t][0]].polling})
        if idle:
            say(f"of their partners, these had no fragment polling (no auto_rerun): {idle}")
    delays = [clients[to].seen[t] - at for t, (to, at) in sent.items() if t in clients[to].seen]
    return delays, len(missing), cpu


def run_websocket(url: str, code: str, db_url: str, args: Any, process: Any) -> tuple:
    """The websocket mode: each person a Streamlit session spoken to without a browser."""
    import asyncio

    async def run() -> tuple:
        clients = await _ws_join(url, code, args.participants)
        say("everyone is in a room; sending")
        try:
            partner = partners(db_url, code, args.participants)
            return await _ws_measure(clients, partner, args, process)
        finally:
            await asyncio.gather(*(client.close() for client in clients))

    return asyncio.run(run())


def report(args: Any, delays: list[float], lost: int, cpu: float, in_database: int) -> None:
    delays.sort()
    p50 = statistics.median(delays) if delays else float("nan")
    p95 = delays[min(len(delays) - 1, int(0.95 * len(delays)))] if delays else float("nan")
    print(f"clients: {args.clients}; the page's poll: {args.poll} s")
    print(
        f"messages sent: {len(delays) + lost}, seen: {len(delays)}, max {max(delays, default=0):.2f} s"
    )
    print(f"stored in the database: {in_database}")
    print(f"server CPU while sending: {cpu * 100:.0f}% of one core")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"PARTICIPANTS={args.participants} P50_SEND_TO_SCREEN_S={p50:.2f} "
        f"P95_SEND_TO_SCREEN_S={p95:.2f} LOST={lost}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--participants", type=int, default=24)
    parser.add_argument("--messages", type=int, default=3, help="rounds of one message each")
    parser.add_argument("--poll", type=float, default=1.0, help="the page's poll interval (s)")
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to wait for the last")
    parser.add_argument(
        "--clients",
        choices=("websocket", "chromium"),
        default="websocket",
        help="websocket: sessions without a browser (measures the server); chromium: a browser "
        "context per person (the browsers take CPU from the server on a small machine)",
    )
    parser.add_argument(
        "--spread", type=float, default=1.0, help="websocket: a round's sends over this many s"
    )
    args = parser.parse_args()
    if args.participants < 2 or args.participants % 2:
        raise SystemExit("--participants must be an even number >= 2")
    os.environ["ROOMS_PARTICIPANT_POLL_SECONDS"] = str(args.poll)
    # SIGTERM (timeout, Ctrl-C from a supervisor) ends through the finally below: the server
    # and the clients are stopped, never left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run = run_websocket if args.clients == "websocket" else run_chromium
    with tempfile.TemporaryDirectory(prefix="rooms-participants-") as tmp:
        folder = Path(tmp)
        db_url = f"sqlite:///{folder / 'rooms.db'}"
        process, url = start_server(folder, db_url, runner=True)
        try:
            code = launch(db_url, args.participants)
            delays, lost, cpu = run(url, code, db_url, args, process)
            in_database = stored(db_url, code)
        finally:
            process.terminate()
            process.wait(timeout=30)
            kept = Path(tempfile.gettempdir()) / "participants_load_server.log"
            kept.write_bytes((folder / "server.log").read_bytes())
            say(f"the server's log: {kept}")
    report(args, delays, lost, cpu, in_database)


if __name__ == "__main__":
    main()
