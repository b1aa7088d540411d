"""Many rooms through many worker processes: 200 rooms x 10 turns with a model that waits 100 ms.

For each worker count N, a fresh database gets the rooms (each opened by a person's message), then
N worker processes start together, each running the worker command (``python -m
conversation.worker``'s ``main``, with ``--until-idle``) with ``--concurrency ceil(rooms / N)``,
until every room has finished. Printed per run:

- wall time against the ideal (10 sequential turns x 100 ms = 1 s: every room runs at once) and
  against the floor, a baseline measured in the same run: the same 200 x 10 sequential calls
  straight to EDSL's ``async_get_response`` of the same model (EDSL's test model, which waits
  100 ms) in one process, with nothing planned, prompted or stored (EDSL's own per-call work; no
  design of the worker can beat it);
- lost and doubled turns, from the stored logs (both must be 0): a room short of its turns, two
  turns with one request id, a gap or a repeat in a room's seqs, a room not terminated;
- the engine's own cost per turn: ``(worker time - floor) / turns`` (wall time, in ms), and the
  same in CPU time (``engine CPU``: the workers' CPU seconds less the floor's), which waiting for
  a core on a busy machine does not inflate;
- per turn, summed over the workers: SQL statements (SQLAlchemy ``before_cursor_execute``),
  transactions (``commit``), pool checkouts (each one is a liveness ping with ``pool_pre_ping``),
  and the time spent inside statements (driver, round trip and server; less sensitive to other
  load on the machine than the wall time).

Run: ``python benchmarks/rooms_worker.py [--db sqlite | --db postgresql://USER@HOST:PORT/DB]
[--workers 1,2,4] [--rooms 200] [--turns 10] [--latency 0.1]``. Several ``--db`` compare backends
in one run. A PostgreSQL URL names a server: each run creates its own database there (the user
needs CREATEDB) and drops it afterwards; ``sqlite`` uses temporary files. Target (docs/design.md
section 9): within 2x of the ideal; PostgreSQL within 1.3x of SQLite with one worker.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
os.environ["HOME"] = tempfile.mkdtemp(prefix="bench-home-")
os.environ.pop("ROOMS_DATABASE_URL", None)
sys.path.insert(0, str(ROOT))
warnings.simplefilter("ignore")


# -- a worker process ---------------------------------------------------------------------------


def child(args: argparse.Namespace) -> int:
    """One worker: import everything, wait for the go signal, run the worker command, report."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine
    from sqlalchemy.pool import Pool

    from conversation.worker.cli import main as worker_main

    counts: Counter[str] = Counter()

    @event.listens_for(Engine, "before_cursor_execute")
    def _statement(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        counts["statements"] += 1
        counts["sql " + statement.lstrip().split(None, 1)[0].upper()] += 1
        conn.info["started"] = time.perf_counter()

    @event.listens_for(Engine, "after_cursor_execute")
    def _executed(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        # Time the worker's one thread spends in statements (driver, round trip, server).
        counts["statement_us"] += int((time.perf_counter() - conn.info["started"]) * 1e6)

    @event.listens_for(Engine, "commit")
    def _commit(conn):  # type: ignore[no-untyped-def]
        counts["transactions"] += 1

    @event.listens_for(Pool, "checkout")
    def _checkout(dbapi_connection, record, proxy):  # type: ignore[no-untyped-def]
        counts["checkouts"] += 1

    # What a first model call loads (EDSL's cache and prompt machinery, seconds of imports) is
    # start-up, not the work being measured: load it before reporting ready.
    import asyncio

    from conversation.models import ask

    asyncio.run(ask(bench_model(args.latency), user_prompt="warm", system_prompt="up"))
    go = Path(args.go)
    Path(args.ready).write_text("ready")
    while not go.exists():
        time.sleep(0.002)
    cpu = time.process_time()
    worker_main(
        ["--db", args.child_db, "--concurrency", str(args.concurrency), "--until-idle"]
        + ["--poll", "0.05"]
    )
    # CPU seconds of this process while it worked: what other load on the machine adds to
    # the wall time (waiting for a core) it does not add here.
    counts["cpu_us"] = int((time.process_time() - cpu) * 1e6)
    Path(args.stats).write_text(json.dumps(counts))
    return 0


def floor(args: argparse.Namespace) -> int:
    """The baseline: ``rooms`` concurrent chains of ``turns`` calls to EDSL's model, nothing else."""
    import asyncio

    from edsl import Cache

    from conversation.models import ask

    model = bench_model(args.latency)
    asyncio.run(ask(model, user_prompt="warm", system_prompt="up"))

    async def chain(room: int) -> None:
        for turn in range(args.turns):
            await model.async_get_response(
                f"room {room}, turn {turn}",
                "You are Alice.",
                Cache(data={}),
                iteration=0,
                question_type="free_text",
            )

    async def every_room() -> None:
        await asyncio.gather(*(chain(room) for room in range(args.rooms)))

    started, cpu = time.perf_counter(), time.process_time()
    asyncio.run(every_room())
    print(json.dumps({"floor": time.perf_counter() - started, "cpu": time.process_time() - cpu}))
    return 0


def measure_floor(args: argparse.Namespace) -> tuple[float, float]:
    """Seconds of the baseline (best of three), in a fresh process like the workers: wall time
    and CPU time (each the least of the three)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, __file__, "--child-floor", "--rooms", str(args.rooms)]
    command += ["--turns", str(args.turns), "--latency", str(args.latency)]
    runs = []
    for _ in range(3):
        out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return min(r["floor"] for r in runs), min(r["cpu"] for r in runs)


# -- the parent ---------------------------------------------------------------------------------


@dataclass
class Run:
    backend: str
    workers: int
    wall: float
    ideal: float
    turns: int
    lost: int
    doubled: int
    counts: Counter[str]
    floor: float
    floor_cpu: float

    def line(self) -> str:
        per = max(self.turns, 1)
        return (
            f"{self.backend:<10} {self.workers:>2} workers  {self.wall:6.2f} s = "
            f"{self.wall / self.ideal:4.2f} x ideal = {self.wall / self.floor:4.2f} x floor   turns {self.turns:>5}  lost {self.lost}  "
            f"doubled {self.doubled}   per turn: {self.counts['statements'] / per:4.2f} statements, "
            f"{self.counts['transactions'] / per:4.2f} transactions, "
            f"{self.counts['checkouts'] / per:4.2f} checkouts, "
            f"{self.counts['statement_us'] / per / 1000:5.3f} ms in statements   "
            f"engine CPU {self.engine_cpu_ms_per_turn():5.3f} ms/turn   "
            f"engine cost {self.engine_ms_per_turn():5.3f} ms/turn"
        )

    def engine_ms_per_turn(self) -> float:
        """``(worker time - floor) / turns``: what the worker adds to EDSL's own calls, per
        turn (planning, prompting, claiming, committing, leases), in ms of wall time."""
        return (self.wall - self.floor) / max(self.turns, 1) * 1000

    def engine_cpu_ms_per_turn(self) -> float:
        """The same in CPU time: ``(workers' CPU - floor's CPU) / turns``. On a machine shared
        with other work the wall times also hold the waits for a core; CPU time does not."""
        cpu = self.counts["cpu_us"] / 1e6
        return (cpu - self.floor_cpu) / max(self.turns, 1) * 1000


class Target:
    """Where one run's database lives: a temporary SQLite file, or a scratch PostgreSQL database."""

    def __init__(self, spec: str) -> None:
        from storage import normalize_url

        self.spec = spec
        self.server = None if spec == "sqlite" else normalize_url(spec)
        self.backend = "sqlite" if self.server is None else "postgresql"

    def create(self) -> str:
        if self.server is None:
            return f"sqlite:///{tempfile.mkdtemp(prefix='bench-rooms-')}/rooms.db"
        import sqlalchemy as sa

        name = f"rooms_bench_{uuid.uuid4().hex[:10]}"
        admin = sa.create_engine(self.server, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        admin.dispose()
        return sa.make_url(self.server).set(database=name).render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        if self.server is None:
            return
        import sqlalchemy as sa

        admin = sa.create_engine(self.server, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(
                f'DROP DATABASE IF EXISTS "{sa.make_url(url).database}" WITH (FORCE)'
            )
        admin.dispose()


def bench_model(latency: float) -> Any:
    """The benchmark's model: EDSL's own test model (it waits 100 ms and gives its canned reply,
    so the client-side work measured is EDSL's and ours, not a stand-in's text generation;
    every worker process rebuilds it from the room's spec). Another latency: the offline model,
    which waits ``latency`` and writes short replies."""
    if latency == 0.1:
        from edsl import Model

        return Model("test", canned_response="Fine by me; let us go on with the next point.")
    from conversation import OfflineModel

    return OfflineModel(latency=latency, max_words=12)


def make_rooms(url: str, rooms: int, turns: int, latency: float) -> list[int]:
    from edsl import Agent, AgentList

    from conversation import MaxTurns, RoundRobinPolicy
    from conversation.rooms.room import Room
    from storage import Database

    agents = AgentList([Agent(name="Alice"), Agent(name="Bob")])
    with Database(url) as db:
        made = []
        for i in range(rooms):
            room = Room.create(
                db,
                name=f"bench {i}",
                agents=agents,
                planner=RoundRobinPolicy(),
                termination=MaxTurns(turns),
                model=bench_model(latency),
            )
            # Each room's prompts differ (the cache must not answer one room from another's).
            room.post(f"Let's begin, room {i}.", request_id="start")
            made.append(room.id)
    return made


def check_logs(url: str, room_ids: list[int], turns: int) -> tuple[int, int, int]:
    """(agent turns done, lost, doubled) from the stored logs."""
    import storage

    done = lost = doubled = 0
    with storage.Database(url) as db:
        for room_id in room_ids:
            rows = storage.events(db, room_id)
            agent = [r for r in rows if r.kind == "agent" and r.state == "done"]
            done += len(agent)
            lost += max(turns - len(agent), 0)
            doubled += max(len(agent) - turns, 0)
            ids = [r.request_id for r in rows if r.request_id is not None]
            doubled += len(ids) - len(set(ids))
            seqs = [r.seq for r in rows]
            if seqs != list(range(1, len(rows) + 1)):
                doubled += 1
            if storage.get_room(db, room_id).status != "terminated":
                lost += 1
    return done, lost, doubled


def run_once(
    target: Target, workers: int, args: argparse.Namespace, floor: tuple[float, float]
) -> Run:
    url = target.create()
    try:
        room_ids = make_rooms(url, args.rooms, args.turns, args.latency)
        folder = Path(tempfile.mkdtemp(prefix="bench-workers-"))
        go = folder / "go"
        concurrency = math.ceil(args.rooms / workers)
        procs = []
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        for n in range(workers):
            command = [sys.executable, __file__, "--child-db", url, "--go", str(go)]
            command += ["--ready", str(folder / f"ready-{n}"), "--stats", str(folder / f"s-{n}")]
            command += ["--concurrency", str(concurrency), "--latency", str(args.latency)]
            procs.append(subprocess.Popen(command, env=env))
        deadline = time.monotonic() + 120
        while not all((folder / f"ready-{n}").exists() for n in range(workers)):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("a worker process did not start")
            time.sleep(0.01)
        time.sleep(0.2)  # let the last one reach its wait loop
        started = time.perf_counter()
        go.write_text("go")
        codes = [p.wait(timeout=600) for p in procs]
        wall = time.perf_counter() - started
        if any(codes):
            raise RuntimeError(f"worker exit codes {codes}")
        counts: Counter[str] = Counter()
        for n in range(workers):
            counts.update(json.loads((folder / f"s-{n}").read_text()))
        done, lost, doubled = check_logs(url, room_ids, args.turns)
        return Run(
            target.backend,
            workers,
            wall,
            args.turns * args.latency,
            done,
            lost,
            doubled,
            counts,
            *floor,
        )
    finally:
        target.drop(url)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", action="append", help="sqlite (default) or a PostgreSQL URL")
    parser.add_argument("--workers", default="1", help="worker counts, e.g. 1,2,4 (default 1)")
    parser.add_argument("--rooms", type=int, default=200)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=1, help="runs per setting (best is shown)")
    parser.add_argument("--statements", action="store_true", help="print statements by kind")
    # The worker processes this script starts (not for direct use).
    parser.add_argument("--child-db", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=8, help=argparse.SUPPRESS)
    parser.add_argument("--go", help=argparse.SUPPRESS)
    parser.add_argument("--ready", help=argparse.SUPPRESS)
    parser.add_argument("--stats", help=argparse.SUPPRESS)
    parser.add_argument("--child-floor", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_db:
        return child(args)
    if args.child_floor:
        return floor(args)
    counts = [int(n) for n in args.workers.split(",")]
    print(
        f"{args.rooms} rooms x {args.turns} turns, model latency {args.latency * 1000:.0f} ms, "
        f"ideal {args.turns * args.latency:.2f} s; per worker --concurrency ceil(rooms / N)"
    )
    baseline = measure_floor(args)
    print(
        f"floor (EDSL's calls alone, same model, one process): {baseline[0]:.2f} s = "
        f"{baseline[0] / (args.turns * args.latency):.2f} x ideal, {baseline[1]:.2f} s of CPU"
    )
    failed = False
    best: dict[tuple[str, int], Run] = {}
    for spec in args.db or ["sqlite"]:
        target = Target(spec)
        for workers in counts:
            for _ in range(args.repeat):
                run = run_once(target, workers, args, baseline)
                print(run.line(), flush=True)
                if args.statements:
                    kinds = {k: v for k, v in run.counts.items() if k.startswith("sql ")}
                    print(
                        "    by kind per turn:",
                        {k[4:]: round(v / run.turns, 2) for k, v in kinds.items()},
                    )
                failed |= run.lost > 0 or run.doubled > 0
                key = (run.backend, workers)
                if key not in best or run.wall < best[key].wall:
                    best[key] = run
    if len({b for b, _ in best}) > 1:
        print("best of each; PostgreSQL / SQLite wall time:")
        for workers in counts:
            sqlite, postgres = best.get(("sqlite", workers)), best.get(("postgresql", workers))
            if sqlite and postgres:
                print(
                    f"  {workers} workers: sqlite {sqlite.wall:.2f} s, postgresql "
                    f"{postgres.wall:.2f} s = {postgres.wall / sqlite.wall:.2f} x"
                    + ("   target <= 1.3 x" if workers == 1 else "")
                )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
