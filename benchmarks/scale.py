"""Scale: a database of N rooms and M events, and what a person and a worker see at that size.

    python benchmarks/scale.py --db sqlite:///big.db --rooms 10000 --events 1000000
    python benchmarks/scale.py --db postgresql://postgres@127.0.0.1:5432/big --rooms 1000 ...

The database must be empty (a new SQLite file, or an empty PostgreSQL database). Steps, each timed:

1. a fast generator (bulk inserts, no per-row validation) builds ``--rooms`` finished rooms in
   experiments of 1,000 (valid designs), with ``--events`` events between them; one room holds
   10,000 of them (fewer when ``--events`` is small): the long room;
2. ``CREATE_S``: a design of ``min(rooms, 10,000)`` rooms created the way the Experiments page
   does it (``conversation.experiments.create``: validated, then written in batches);
3. ``WORKER_RSS_MB``: a worker process (``python -m conversation.worker``, concurrency 8) drives
   those runnable rooms (offline model) for ``--worker-seconds`` after its first turn; its peak
   resident memory;
   then the design is stopped and deleted, batched (``STOP_S``, ``DELETE_S``, printed);
4. ``POST_TO_CLAIM_MS``: with a worker idle (default poll 0.5 s), a message is posted to a new
   room in this process; the time from the posted message's commit to the worker's claim of
   the next turn (both stamped by the database's clock on this machine); median of 5;
5. ``HOME_S``, ``RESULTS_S``, ``ROOM10K_S``: a real browser (Debian's Chromium, Playwright) on
   ``streamlit run app.py`` (its runner off): from navigation to the content a person reads
   (Home's rooms grid; Results' rooms table, a static one: ``ui.results.static_table``; the long
   room's messages), median of 3 after one warm-up visit of each page (a page's first run on a
   fresh server imports its modules, and fills the caches every later visitor shares: Results'
   rooms page, the Room page's post-form note). The floor, timed the same way in the same browser: bare Streamlit pages with a title, 50 chat
   messages, one 5-row table (``FLOOR_PAGES``); printed with each page's ratio to it;
6. ``EXPORT_PEAK_MB``: in a fresh process, every event of the database exported streamed as CSV
   and as JSON lines (``conversation.browse.write_events``) to files; the process's peak RSS.

The last line: ``ROOMS=<n> EVENTS=<n> CREATE_S=<x> HOME_S=<x> RESULTS_S=<x> ROOM10K_S=<x>
EXPORT_PEAK_MB=<x> WORKER_RSS_MB=<x> POST_TO_CLAIM_MS=<x>``. ``--no-browser`` skips step 5
(its figures print as ``nan``); ``--generate-only`` stops after step 1 (a database for
``benchmarks/app_pages.py --db``); tests/test_benchmarks.py runs it small so it cannot rot.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

LONG_ROOM = 10_000
ROOMS_PER_EXPERIMENT = 1_000
INSERT_CHUNK = 5_000
AGENTS = ({"name": "Buyer"}, {"name": "Seller"})
OFFLINE = {"service": "offline"}


def design(conditions: int, replicates: int, opening: str = "Negotiate the mug.") -> dict:
    return {
        "template": {"agents": list(AGENTS), "opening": opening, "model": OFFLINE},
        "conditions": [{"label": f"c{c}", "traits": {}} for c in range(conditions)],
        "replicates": replicates,
    }


def room_config() -> dict:
    from conversation.experiments.runs import planned_experiment_rooms

    return planned_experiment_rooms("x", design(1, 1), speaker="user")[0].config


# -- 1. the generator ---------------------------------------------------------------------------


def generate(db: Any, rooms: int, events: int) -> int:
    """``rooms`` finished rooms with ``events`` events in all; returns the long room's id."""
    import sqlalchemy as sa

    from storage.tables import Event, Experiment, Room

    config, now = room_config(), db.now()
    long_events = min(LONG_ROOM, max(events // 2, 1))
    rest = max(events - long_events, 0)
    per_room, extra = divmod(rest, max(rooms - 1, 1))
    room_ids: list[int] = []
    with db.write_connection() as conn:
        for start in range(0, rooms, ROOMS_PER_EXPERIMENT):
            count = min(ROOMS_PER_EXPERIMENT, rooms - start)
            experiment = conn.execute(
                sa.insert(Experiment.__table__).returning(Experiment.__table__.c.id),
                {"name": f"study {start // ROOMS_PER_EXPERIMENT}", "config": design(4, 250),
                 "status": "done", "created_at": now, "updated_at": now},
            ).scalar_one()  # fmt: skip
            rows = [
                {"name": f"study | c{i % 4} | #{i // 4 + 1}", "status": "terminated",
                 "stop_reason": "max_turns reached", "config": config, "experiment_id": experiment,
                 "condition": f"c{i % 4}", "replicate": i // 4 + 1, "created_at": now,
                 "updated_at": now - timedelta(seconds=start + i), "edits": 0}
                for i in range(count)
            ]  # fmt: skip
            table = Room.__table__
            inserted = conn.execute(sa.insert(table).returning(table.c.id), rows)
            room_ids += sorted(r[0] for r in inserted)
    sizes = [long_events] + [per_room + (1 if i < extra else 0) for i in range(rooms - 1)]
    batch: list[dict] = []
    for room_id, size in zip(room_ids, sizes, strict=True):
        batch += event_rows(room_id, size, now)
        if len(batch) >= INSERT_CHUNK:
            insert_events(db, batch, Event)
            batch = []
    if batch:
        insert_events(db, batch, Event)
    return room_ids[0]


def event_rows(room_id: int, size: int, now: Any) -> list[dict]:
    rows = []
    for seq in range(1, size + 1):
        human = seq == 1
        text = "Negotiate the mug." if human else f"Offer {seq}: ${3 + seq % 7} for the mug, maybe."
        rows.append(
            {"room_id": room_id, "seq": seq, "activity": 1, "round": seq // 2,
             "kind": "human" if human else "agent",
             "speaker": "user" if human else AGENTS[seq % 2]["name"], "content": text,
             "words": len(text.split()), "state": None if human else "done",
             "model": None if human else "offline", "input_tokens": None if human else 100 + seq,
             "output_tokens": None if human else 12, "cost": None, "latency": None,
             "attempts": 0 if human else 1, "created_at": now, "updated_at": now}
        )  # fmt: skip
    return rows


def insert_events(db: Any, rows: list[dict], event: Any) -> None:
    import sqlalchemy as sa

    with db.write_connection(durable=False) as conn:
        conn.execute(sa.insert(event.__table__), rows)


# -- 2-4. the design, the worker, post to claim -------------------------------------------------


def create_design(db: Any, rooms: int) -> tuple[int, float]:
    from conversation.experiments import create

    replicates = min(50, rooms)
    conditions = max(1, rooms // replicates)
    started = time.perf_counter()
    experiment_id = create(db, "the big design", design(conditions, replicates))
    return experiment_id, time.perf_counter() - started


def start_worker(db_url: str, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "conversation.worker", "--db", db_url, "--concurrency", "8"]
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return math.nan


def stop_process(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def worker_memory(db: Any, db_url: str, experiment_id: int, seconds: float, log: Path) -> dict:
    import storage
    from conversation.experiments.runs import stop

    worker = start_worker(db_url, log)
    try:
        first = storage.experiment_room_ids(db, experiment_id)[:50]
        deadline = time.monotonic() + 300  # its imports, then its first turns (a loaded machine)
        while time.monotonic() < deadline and not any(
            e.kind == "agent" for room_id in first[:8] for e in storage.events(db, room_id)
        ):
            time.sleep(0.5)
        time.sleep(seconds)  # then drive rooms for this long
        rss = peak_rss_mb(worker.pid)
    finally:
        stop_process(worker)
    started = time.perf_counter()
    stopped = stop(db, experiment_id)
    stop_s = time.perf_counter() - started
    started = time.perf_counter()
    storage.delete_experiment(db, experiment_id, with_rooms=True)
    delete_s = time.perf_counter() - started
    return {"rss": rss, "stop_s": stop_s, "delete_s": delete_s, "stopped": stopped}


def post_to_claim(db: Any, db_url: str, samples: int, log: Path) -> float:
    import storage
    from conversation.planning.policies import RoundRobinPolicy
    from conversation.rooms.room import Room
    from conversation.termination.conditions import MaxTurns

    worker = start_worker(db_url, log)
    waits = []
    try:
        time.sleep(8)  # the worker's imports and first look
        for i in range(samples):
            room = Room.create(
                db, name=f"latency {i}", agents=list(AGENTS), planner=RoundRobinPolicy(),
                termination=MaxTurns(1), model=OFFLINE,
            )  # fmt: skip
            time.sleep(0.1 + 0.37 * i % 0.5)  # a random moment of the worker's poll cycle
            room.post("Hello?", request_id=f"p{i}")
            posted = next(e for e in storage.events(db, room.id) if e.kind == "human")
            claimed = wait_for_claim(db, room.id)
            waits.append((claimed - posted.created_at).total_seconds() * 1000)
    finally:
        stop_process(worker)
    return statistics.median(waits)


def wait_for_claim(db: Any, room_id: int, timeout: float = 30) -> Any:
    import storage

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        turns = [e for e in storage.events(db, room_id) if e.kind in ("agent", "pass")]
        if turns:
            return turns[0].created_at
        time.sleep(0.005)
    raise SystemExit(f"room {room_id}: no turn claimed within {timeout} s")


# -- 5. pages in a real browser -----------------------------------------------------------------


#: The floor of step 5: bare Streamlit pages holding what the app's pages show first (a title, 50
#: chat messages, one 5-row table), served and timed the same way in the same browser. No page
#: of the app can show its content sooner than the bare page with the same kind of content.
FLOOR_PAGES = {
    "title.py": 'st.title("Floor")\n',
    "chat.py": (
        'st.title("Floor")\n'
        "for i in range(50):\n"
        '    with st.chat_message("user" if i % 2 else "assistant"):\n'
        '        st.text(f"message {i} " * 10)\n'
    ),
    "table.py": (
        'st.title("Floor")\n'
        'st.dataframe(pd.DataFrame({"n": range(5), "name": list("abcde")}), hide_index=True)\n'
    ),
}


def floor_app(folder: Path) -> Path:
    """A bare Streamlit app of :data:`FLOOR_PAGES`, written under ``folder``."""
    app = folder / "floor-app"
    (app / "pages").mkdir(parents=True)
    for name, body in FLOOR_PAGES.items():
        (app / "pages" / name).write_text("import pandas as pd\nimport streamlit as st\n" + body)
    listed = ", ".join(f'st.Page("pages/{name}")' for name in FLOOR_PAGES)
    (app / "app.py").write_text(
        f"import streamlit as st\n\nst.navigation([{listed}]).run()\n", encoding="utf-8"
    )
    (app / ".streamlit").mkdir()  # the app's own Streamlit settings (theme, toolbar, runner)
    (app / ".streamlit" / "config.toml").write_bytes((ROOT / ".streamlit/config.toml").read_bytes())
    return app


def pages(db_url: str, long_room: int, folder: Path) -> dict[str, float]:
    """Step 5: the app's pages and the floor's, each warmed once, then a median of
    :data:`PAGE_VISITS` visits, interleaved."""
    from live_view import start_server

    from ui.results.static_table import selector
    from ui.results.tables import ROOMS_TABLE_KEY

    # What a person reads first on each page. Results' first view is a static table, not a grid
    # (ui.results.static_table): waiting for a grid there waited for something never drawn.
    app_targets = {
        "HOME_S": ("/", test_id("stDataFrame")),
        "RESULTS_S": ("/results", selector(ROOMS_TABLE_KEY)),
        "ROOM10K_S": (f"/room?room={long_room}", test_id("stChatMessage")),
    }
    floor_targets = {
        "FLOOR_TITLE_S": ("/title", test_id("stHeading")),
        "FLOOR_CHAT_S": ("/chat", test_id("stChatMessage")),
        "FLOOR_TABLE_S": ("/table", test_id("stDataFrame")),
    }
    app, app_url = start_server(folder / "app", db_url, runner=False)
    floor, floor_url = start_server(folder / "floor", db_url, app_dir=floor_app(folder))
    try:
        targets = {name: (app_url + path, css) for name, (path, css) in app_targets.items()}
        targets |= {name: (floor_url + path, css) for name, (path, css) in floor_targets.items()}
        return visit(targets)
    finally:
        stop_process(app)
        stop_process(floor)


def test_id(name: str) -> str:
    """The CSS selector of Streamlit's elements of test id ``name``."""
    return f'[data-testid="{name}"]'


#: Visits of each page timed in step 5 (after one warm-up visit), interleaved; the median is kept.
PAGE_VISITS = 3


def visit(targets: dict[str, tuple[str, str]]) -> dict[str, float]:
    """``{name: median seconds}`` from navigation to the first element each target's CSS selector
    matches, visible, in Chromium (a new tab per visit)."""
    from live_view import CHROMIUM, LAUNCH_ARGS
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {name: [] for name in targets}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        # A warm-up round first, untimed: each page's first run on a fresh server imports modules.
        for timed in (False, *[True] * PAGE_VISITS):
            for name, (url, css) in targets.items():
                page = browser.new_page()
                started = time.perf_counter()
                page.goto(url)
                page.locator(css).first.wait_for(timeout=180_000)
                if timed:
                    times[name].append(time.perf_counter() - started)
                page.close()
        browser.close()
    return {name: statistics.median(values) for name, values in times.items()}


# -- 6. exports ---------------------------------------------------------------------------------

EXPORT = """
import resource, sys
import storage
from conversation.browse import write_events
db = storage.Database(sys.argv[1])
ids = storage.room_ids(db)  # ids only: a list of 100,000 rooms' records is 700 MB
for fmt in ("csv", "jsonl"):
    with open(sys.argv[2] + "." + fmt, "w", encoding="utf-8") as out:
        write_events(db, ids, out, fmt)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def export_peak(db_url: str, folder: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", EXPORT, db_url, str(folder / "export")],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="an empty database (SQLite file or PostgreSQL)")
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--worker-seconds", type=float, default=15.0)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument(
        "--generate-only", action="store_true", help="build the database (step 1), then stop"
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    home = folder / "home"
    home.mkdir()
    os.environ.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"))
    import storage

    db = storage.Database(args.db)
    if storage.count_rooms(db):
        raise SystemExit(f"{args.db} already holds rooms: give an empty database")
    started = time.perf_counter()
    long_room = generate(db, args.rooms, args.events)
    print(
        f"generated {args.rooms} rooms, {args.events} events: {time.perf_counter() - started:.1f} s"
    )
    if args.generate_only:  # e.g. for benchmarks/app_pages.py --db
        return
    experiment_id, create_s = create_design(db, min(args.rooms, 10_000))
    print(
        f"design of {storage.count_rooms(db, experiment_id=experiment_id)} rooms: {create_s:.2f} s"
    )
    log = folder / "worker.log"
    worker = worker_memory(db, args.db, experiment_id, args.worker_seconds, log)
    print(f"worker peak RSS {worker['rss']:.0f} MB; stop {worker['stop_s']:.2f} s "
          f"({worker['stopped']} rooms); delete {worker['delete_s']:.2f} s")  # fmt: skip
    claim_ms = post_to_claim(db, args.db, args.samples, log)
    shown = dict.fromkeys(("HOME_S", "RESULTS_S", "ROOM10K_S"), math.nan)
    if not args.no_browser:
        shown = pages(args.db, long_room, folder)
        print(
            f"floor (bare Streamlit pages, same browser): title {shown['FLOOR_TITLE_S']:.3f} s, "
            f"50 chat messages {shown['FLOOR_CHAT_S']:.3f} s, "
            f"a 5-row table {shown['FLOOR_TABLE_S']:.3f} s; "
            f"Home {shown['HOME_S'] / shown['FLOOR_TABLE_S']:.2f}x and Results "
            f"{shown['RESULTS_S'] / shown['FLOOR_TABLE_S']:.2f}x the table's floor, the long "
            f"room {shown['ROOM10K_S'] / shown['FLOOR_CHAT_S']:.2f}x the chat's"
        )
    export_mb = export_peak(args.db, folder)
    print(
        f"ROOMS={args.rooms} EVENTS={args.events} CREATE_S={create_s:.2f} "
        f"HOME_S={shown['HOME_S']:.2f} RESULTS_S={shown['RESULTS_S']:.2f} "
        f"ROOM10K_S={shown['ROOM10K_S']:.2f} EXPORT_PEAK_MB={export_mb:.0f} "
        f"WORKER_RSS_MB={worker['rss']:.0f} POST_TO_CLAIM_MS={claim_ms:.0f}"
    )


if __name__ == "__main__":
    main()
