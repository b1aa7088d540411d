"""Participants under load: a person's message, from send to the other person's screen.

    python benchmarks/participants_load.py [--participants 24] [--messages 3]
        [--rate 12] [--wait 20] [--db URL] [--processes 1] [--proxy] [--table [24,...]]

What it does (offline model, temporary database and HOME, no network):
1. starts ``--processes`` app processes (``streamlit run app.py``, each with its in-process
   runner, which drives the agents) on one database (a temporary SQLite file, or ``--db``: a
   PostgreSQL server, where a fresh database is made and dropped), and with ``--proxy`` Debian's
   nginx in front of them, configured by docs/deploy.md's recipe (``proxy.py``); it launches the
   shipped example study (2 people + 1 agent mediator per room) with no pre-survey, enough
   groups for everyone, no pacing and a long time limit;
2. opens ``--participants`` participants, all in this process (asyncio, HTTP): each joins by the
   link, consents and opens its page's event stream (``/study/api/events``), as the page's
   script does, and waits to be seated; without a proxy the participants are spread over the
   processes in turn;
3. the *floor*: one pair exchanges 5 messages, one at a time, while everyone else is connected
   and quiet: what the path itself costs (a post, the write, the watcher, the push) here, now;
4. ``--messages`` rounds: every person sends one message per round, in a random order spread
   evenly over the round (``60 / --rate`` seconds: with the default 12 messages per person per
   minute, 200 people send 40 messages a second, and the mediator answers each), stamped just
   before the request;
5. waits until every message is on its partner's stream (or ``--wait`` seconds); prints the
   median and p95 of send-to-screen, the messages never seen (lost), the floor, and the app
   processes' CPU: a share of one core and seconds per participant per minute, over the
   sending phase. The same machine's clock stamps both ends.

``--table`` runs the sizes given (24, 50, 100, 200 and 400 by default), each on a fresh server and
database, and prints one row per size. Targets on the project's 2-core machine: 200 participants
on one process, p95 <= 1.0 s, 0 lost (SQLite and PostgreSQL); two processes behind the proxy
hold 1.5x one process's participants at the same p95. The last line:
``PARTICIPANTS=<n> P50_SEND_TO_SCREEN_S=<x> P95_SEND_TO_SCREEN_S=<x> LOST=<n>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from live_view import cpu_seconds, start_server  # noqa: E402
from participant_client import PageClient  # noqa: E402

TABLE = (24, 50, 100, 200, 400)


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def launch(db_url: str, people: int) -> str:
    import tomllib

    from conversation import study
    from conversation.experiments.design_schema import MAX_REPLICATES
    from storage import Database

    data = tomllib.loads((ROOT / "examples" / "study.toml").read_text(encoding="utf-8"))
    data["pre_survey"] = []
    # 2 people per room; a condition holds at most MAX_REPLICATES groups, so a crowd larger than
    # the shipped conditions hold (400 people: 200 rooms) runs them as several labelled copies.
    rooms, base = max(1, people // 2), data["experiment"]["conditions"]
    copies = max(1, -(-rooms // (MAX_REPLICATES * len(base))))
    if copies > 1:
        data["experiment"]["conditions"] = [
            {**c, "label": f"{c['label']} {i + 1}"} for i in range(copies) for c in base
        ]
    data["experiment"]["groups"] = -(-rooms // len(data["experiment"]["conditions"]))
    data["room"].update(time_limit_seconds=3600, words_per_minute=0)
    data["lobby"].update(timeout_seconds=3600)
    data["participants"].update(cap=people, dropout_seconds=600, heartbeat_seconds=5)
    data["participants"]["rate"] = {"messages": 100, "seconds": 60}
    db = Database(db_url)
    try:
        definition = study.load_definition(json.dumps(data), fmt="json")
        return study.launch_study(db, definition).code
    finally:
        db.dispose()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def run_load(urls: list[str], code: str, db_url: str, args: Any, pids: list[int]) -> dict:
    import httpx

    people = args.participants
    limits = httpx.Limits(max_connections=people * 3 + 20, max_keepalive_connections=people * 2)
    timeout = httpx.Timeout(60.0, read=None)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as http:
        clients = [PageClient(http, urls[n % len(urls)]) for n in range(people)]

        async def arrive(n: int) -> None:
            await clients[n].join(code, {"PROLIFIC_PID": f"load-{n}"})
            (await clients[n].act("consent", agree=True)).raise_for_status()

        for start in range(0, people, 25):  # people arrive in waves, not all in one instant
            await asyncio.gather(*(arrive(n) for n in range(start, min(people, start + 25))))
        say(f"{people} people joined and consented")
        for client in clients:
            client.listen()
        await asyncio.gather(*(c.connected.wait() for c in clients))
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not all(c.stage == "room" for c in clients):
            await asyncio.sleep(0.2)
        waiting = [n for n, c in enumerate(clients) if c.stage != "room"]
        if waiting:
            raise SystemExit(f"not seated after 300 s: {waiting[:10]}")
        partner = partners(db_url, code, people)
        say("everyone is in a room")
        await asyncio.sleep(2.0)  # the mediators' openings
        floor = await measure_floor(http, clients, partner)
        say(f"floor: p50 {statistics.median(floor):.3f} s, max {max(floor):.3f} s")
        cpu_before = sum(cpu_seconds(pid) for pid in pids)
        wall_before, mine_before = time.monotonic(), time.process_time()
        sent: dict[str, tuple[int, float]] = {}
        order = list(range(people))
        round_seconds = 60.0 / args.rate  # each person sends once per round
        for k in range(args.messages):
            random.shuffle(order)
            for n in order:
                text = f"message {k} from person {n} ({uuid.uuid4().hex[:8]})"
                sent[text] = (partner[n], time.time())
                asyncio.create_task(post(http, clients[n], text))
                await asyncio.sleep(round_seconds / people)
        deadline = time.monotonic() + args.wait
        while time.monotonic() < deadline:
            if all(t in clients[to].seen for t, (to, _) in sent.items()):
                break
            await asyncio.sleep(0.1)
        wall = time.monotonic() - wall_before
        cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
        mine = (time.process_time() - mine_before) / wall
        lost_streams = [n for n, c in enumerate(clients) if c.reconnects]
        if lost_streams:
            say(f"streams that had to reconnect: {lost_streams[:10]}")
        await asyncio.gather(*(c.close() for c in clients))
    missing = [t for t, (to, _) in sent.items() if t not in clients[to].seen]
    if missing:
        say(f"never seen by their partner: {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    delays = [clients[to].seen[t] - at for t, (to, at) in sent.items() if t in clients[to].seen]
    say(f"the clients' own CPU: {mine:.0%} of a core")
    return {
        "delays": delays,
        "lost": len(missing),
        "floor": floor,
        "cpu_share": cpu / wall,
        "cpu_per_participant_minute": cpu / people / (wall / 60),
        "sent": len(sent),
    }


async def post(http: Any, client: PageClient, text: str) -> None:
    answer = await client.post(text)
    if answer.status_code != 200:
        say(f"a post refused: {answer.status_code} {answer.text[:200]}")


async def measure_floor(
    http: Any, clients: list[PageClient], partner: dict[int, int]
) -> list[float]:
    """One pair, one message at a time, everyone else connected and quiet."""
    delays = []
    sender = clients[0]
    receiver = clients[partner[0]]
    for k in range(5):
        text = f"floor {k} ({uuid.uuid4().hex[:8]})"
        at = time.time()
        await post(http, sender, text)
        deadline = time.monotonic() + 20
        while text not in receiver.seen and time.monotonic() < deadline:
            await asyncio.sleep(0.002)
        if text in receiver.seen:
            delays.append(receiver.seen[text] - at)
        await asyncio.sleep(0.3)
    return delays or [float("nan")]


def partners(db_url: str, code: str, people: int) -> dict[int, int]:
    """Each person's partner (the other person in their room), by their number."""
    from conversation import study
    from storage import Database

    db = Database(db_url)
    try:
        pid = {r["pseudonym"]: r["PROLIFIC_PID"] for r in study.recruitment_table(db, code)}
        rooms: dict[Any, list[int]] = {}
        for row in study.participants_table(db, code):
            rooms.setdefault(row["room_id"], []).append(int(pid[row["pseudonym"]].split("-")[1]))
    finally:
        db.dispose()
    found = {}
    for members in rooms.values():
        if len(members) == 2:
            a, b = members
            found[a], found[b] = b, a
    assert len(found) == people, f"not everyone has a partner: {rooms}"
    return found


def fresh_database(base: str | None, folder: Path) -> tuple[str, Any]:
    """A database for one run: a SQLite file in ``folder``, or a new database on the PostgreSQL
    server of ``base`` (returned with the function that drops it)."""
    if not base:
        return f"sqlite:///{folder / 'rooms.db'}", lambda: None
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(base.replace("postgresql+psycopg://", "postgresql://"))
    name = f"participants_load_{uuid.uuid4().hex[:8]}"
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return url.set(database=name).render_as_string(hide_password=False), drop


def one_run(args: Any) -> dict:
    """One size: servers, proxy, study, load; returns the figures."""
    from proxy import start_nginx

    with tempfile.TemporaryDirectory(prefix="rooms-participants-") as tmp:
        folder = Path(tmp)
        db_url, drop = fresh_database(args.db, folder)
        processes: list[Any] = []
        nginx = None
        try:
            from storage import Database

            Database(db_url).dispose()  # migrated once, before the processes start
            urls = []
            for n in range(args.processes):
                (folder / f"app{n}").mkdir()
                process, url = start_server(folder / f"app{n}", db_url, runner=True)
                processes.append(process)
                urls.append(url)
            if args.proxy:
                ports = [int(u.rsplit(":", 1)[1]) for u in urls]
                nginx, proxied = start_nginx(ports, folder / "nginx")
                urls = [proxied]
            code = launch(db_url, args.participants)
            figures = asyncio.run(run_load(urls, code, db_url, args, [p.pid for p in processes]))
            figures["stored"] = stored(db_url, code)
            return figures
        finally:
            if nginx is not None:
                nginx.terminate()
                nginx.wait(timeout=10)
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=30)
                except Exception:  # noqa: BLE001
                    process.kill()
            for n in range(len(processes)):
                log = folder / f"app{n}" / "server.log"
                kept = Path(tempfile.gettempdir()) / f"participants_load_server{n}.log"
                if log.exists():
                    kept.write_bytes(log.read_bytes())
            drop()


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


def describe(args: Any) -> str:
    backend = "PostgreSQL" if args.db else "SQLite"
    proxy = " behind nginx" if args.proxy else ""
    return f"{args.processes} app process(es){proxy}, {backend}"


def report(args: Any, figures: dict) -> None:
    delays, lost = figures["delays"], figures["lost"]
    floor = figures["floor"]
    print(f"setting: {describe(args)}; clients: HTTP + server-sent events (asyncio)")
    print(
        f"load: {args.rate:g} messages per person per minute "
        f"({args.participants * args.rate / 60:.1f} a second, each answered by the mediator)"
    )
    print(
        f"messages sent: {figures['sent']}, seen: {len(delays)}, max {max(delays, default=0):.2f} s"
    )
    print(f"stored in the database: {figures['stored']}")
    print(f"floor (one pair, one message at a time): p50 {statistics.median(floor):.3f} s")
    print(f"app CPU while sending: {figures['cpu_share'] * 100:.0f}% of one core")
    print(
        "app CPU per participant per minute: "
        f"{figures['cpu_per_participant_minute']:.3f} s (while everyone sends)"
    )
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"PARTICIPANTS={args.participants} P50_SEND_TO_SCREEN_S={statistics.median(delays) if delays else float('nan'):.2f} "
        f"P95_SEND_TO_SCREEN_S={percentile(delays, 0.95):.2f} LOST={lost}"
    )


def table(args: Any, sizes: list[int]) -> None:
    rows = []
    for size in sizes:
        args.participants = size
        say(f"--- {size} participants ---")
        figures = one_run(args)
        delays = figures["delays"]
        rows.append(
            (
                size,
                statistics.median(delays) if delays else float("nan"),
                percentile(delays, 0.95),
                figures["lost"],
                statistics.median(figures["floor"]),
                max(figures["floor"]),
                figures["cpu_share"],
                figures["cpu_per_participant_minute"],
            )
        )
    print(f"setting: {describe(args)}; {args.rate:g} messages per person per minute")
    print(
        "| people | p50 s | p95 s | lost | floor p50 s | floor max s | app CPU | CPU s/person/min |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]:.2f} | {r[2]:.2f} | {r[3]} | {r[4]:.3f} | {r[5]:.3f} | "
            f"{r[6] * 100:.0f}% | {r[7]:.3f} |"
        )
    last = rows[-1]
    print(
        f"PARTICIPANTS={last[0]} P50_SEND_TO_SCREEN_S={last[1]:.2f} "
        f"P95_SEND_TO_SCREEN_S={last[2]:.2f} LOST={last[3]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--participants", type=int, default=24)
    parser.add_argument("--messages", type=int, default=3, help="rounds of one message each")
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to wait for the last")
    parser.add_argument(
        "--rate",
        type=float,
        default=12.0,
        help="messages each person sends per minute (12: one every 5 s; the agents answer each)",
    )
    parser.add_argument("--db", help="a PostgreSQL server's URL (a fresh database is made there)")
    parser.add_argument("--processes", type=int, default=1, help="app processes on one database")
    parser.add_argument("--proxy", action="store_true", help="nginx in front (docs/deploy.md)")
    parser.add_argument(
        "--table", nargs="?", const=",".join(map(str, TABLE)), help="sizes, e.g. 24,50,100"
    )
    args = parser.parse_args()
    if args.participants < 2 or args.participants % 2:
        raise SystemExit("--participants must be an even number >= 2")
    if args.processes > 1 and not (args.db and args.db.startswith("postgresql")):
        raise SystemExit(
            "several processes share a PostgreSQL database: give --db postgresql://..."
        )
    # SIGTERM (timeout, Ctrl-C from a supervisor) ends through the finally blocks: servers,
    # proxy and clients are stopped, never left behind.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.setdefault("HOME", tempfile.mkdtemp(prefix="participants-home-"))
    if args.table:
        table(args, [int(s) for s in args.table.split(",")])
        return
    report(args, one_run(args))


if __name__ == "__main__":
    main()
