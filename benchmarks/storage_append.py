"""Storage benchmark: durable turn appends and queries over a million stored events.

Run:  python benchmarks/storage_append.py            (full: 1,000,000 events, a few minutes)
      python benchmarks/storage_append.py --quick    (100,000 events, for a smoke run)

Everything runs on SQLite files in a fresh temporary folder, with the project's connection
set-up (WAL, synchronous=FULL, BEGIN IMMEDIATE). Figures are medians over many operations and are
printed next to a baseline measured in the same run on the same disk: a bare ``sqlite3``
``BEGIN IMMEDIATE; INSERT; COMMIT`` with the same pragmas. Ratios, not absolute numbers, are what
compare across machines. Targets (docs/design.md, "Performance targets"): a durable turn append (claim + commit)
under 2 ms median; with a million stored events the results pages' queries well under 1 s.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import storage  # noqa: E402
from storage import Database  # noqa: E402
from storage.research import frames  # noqa: E402

TURNS = 1000
WRITERS = 4
_tokens: dict[int, int] = {}  # room id -> this process's lease token


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def _p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1]


def baseline_insert(folder: Path, count: int) -> list[float]:
    """Bare sqlite3: BEGIN IMMEDIATE; INSERT; COMMIT with WAL and synchronous=FULL."""
    conn = sqlite3.connect(folder / "baseline.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, room INTEGER, seq INTEGER, body TEXT)")
    samples = []
    for i in range(count):
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (room, seq, body) VALUES (1, ?, 'hello there')", (i,))
        conn.execute("COMMIT")
        samples.append(time.perf_counter() - started)
    conn.close()
    return samples


def turn_appends(db: Database, room_id: int, count: int, prefix: str) -> list[float]:
    """Claim + fenced commit of ``count`` turns (two write transactions each)."""
    token = _tokens.get(room_id)
    if token is None:
        token = storage.acquire_lease(db, room_id, f"bench-{os.getpid()}", 3600)
        assert token is not None
        _tokens[room_id] = token
    last = storage.latest_seq(db, room_id)
    samples = []
    for i in range(count):
        started = time.perf_counter()
        turn = storage.claim_turn(
            db,
            room_id,
            token=token,
            expected_last_seq=last,
            speaker="Alice",
            request_id=f"{prefix}-{i}",
            activity=1,
            round=i,
            saw=[last],
            model="offline",
        )
        assert turn is not None
        assert storage.commit_turn(
            db,
            turn.id,
            token,
            content="a short reply of a few words",
            input_tokens=40,
            output_tokens=8,
            cost=0.0001,
            latency=0.1,
        )
        samples.append(time.perf_counter() - started)
        last += 1
    return samples


def message_appends(db: Database, room_id: int, count: int, prefix: str) -> list[float]:
    samples = []
    for i in range(count):
        started = time.perf_counter()
        storage.append_message(
            db, room_id, "human", "user", "hello there", request_id=f"{prefix}{i}"
        )
        samples.append(time.perf_counter() - started)
    return samples


def _writer(url: str, room_id: int, count: int, barrier: Any, out: Any) -> None:
    db = Database(url)
    turn_appends(db, room_id, 20, f"warm-{room_id}")
    barrier.wait()
    out.put(turn_appends(db, room_id, count, f"w-{room_id}"))
    db.dispose()


def concurrent_turn_appends(url: str, count: int) -> tuple[list[float], float]:
    """``WRITERS`` processes, one room each, all appending turns at once."""
    ctx = mp.get_context("spawn")
    with Database(url) as db:
        rooms = [storage.create_room(db, f"writer {i}", status="running") for i in range(WRITERS)]
    barrier, out = ctx.Barrier(WRITERS + 1), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(url, r, count, barrier, out)) for r in rooms]
    for proc in procs:
        proc.start()
    barrier.wait()
    started = time.perf_counter()
    samples = [s for _ in procs for s in out.get(timeout=600)]
    wall = time.perf_counter() - started
    for proc in procs:
        proc.join(60)
    return samples, wall


def bulk_load(db: Database, total: int) -> tuple[int, list[int], float]:
    """``total`` events: one big room (a fifth of them) plus rooms of 1,000 events each.

    Loaded with ``executemany`` on a plain sqlite3 connection (schema from the migrations).
    """
    big_size = total // 5
    small_rooms = (total - big_size) // 1000
    big = storage.create_room(db, "big room", status="settled")
    experiment = storage.create_experiment(db, "bench")
    smalls = [
        storage.create_room(
            db,
            f"room {i}",
            status="settled",
            experiment_id=experiment,
            condition="AB"[i % 2],
            replicate=i // 2,
        )
        for i in range(small_rooms)
    ]
    now = "2025-01-01 00:00:00.000000"

    def rows(room_id: int, size: int):  # type: ignore[no-untyped-def]
        for seq in range(1, size + 1):
            agent = seq % 4 != 1
            yield (
                room_id,
                seq,
                1 + seq // 50,
                seq % 50,
                "agent" if agent else "human",
                ("Alice", "Bob", "Carol")[seq % 3] if agent else "user",
                "a short reply of a few words",
                6,
                "done" if agent else None,
                40 if agent else None,
                8 if agent else None,
                0.0001 if agent else None,
                0.1 if agent else None,
                0,
                now,
                now,
            )

    sql = (
        "INSERT INTO events (room_id, seq, activity, round, kind, speaker, content, words, state,"
        " input_tokens, output_tokens, cost, latency, attempts, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    started = time.perf_counter()
    conn = sqlite3.connect(db.url.removeprefix("sqlite:///"))
    conn.execute("PRAGMA synchronous = NORMAL")  # loading only; the app always uses FULL
    conn.executemany(sql, rows(big, big_size))
    for room_id in smalls:
        conn.executemany(sql, rows(room_id, 1000))
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()
    return big, smalls, time.perf_counter() - started


def timed(action: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return _median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 events instead of 1,000,000")
    args = parser.parse_args()
    total = 100_000 if args.quick else 1_000_000

    with tempfile.TemporaryDirectory(prefix="rooms-bench-") as tmp:
        folder = Path(tmp)
        print(
            f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}, "
            f"{os.cpu_count()} CPUs, temp folder {folder}"
        )
        base = baseline_insert(folder, TURNS)
        base_median = _median(base)
        print("\n== durable appends (median, p90; ratio = median / baseline median)")
        print(f"baseline sqlite3 INSERT+COMMIT     {_ms(base_median)}  p90 {_ms(_p90(base))}")

        url = f"sqlite:///{folder / 'rooms.db'}"
        db = Database(url)
        room = storage.create_room(db, "bench", status="running")
        turn_appends(db, room, 50, "warm")
        turns = turn_appends(db, room, TURNS, "t")
        print(
            f"turn claim+commit (2 txns)         {_ms(_median(turns))}  p90 {_ms(_p90(turns))}"
            f"  x{_median(turns) / base_median:5.1f}  target < 2 ms: "
            f"{'met' if _median(turns) < 0.002 else 'MISSED'}"
        )
        messages = message_appends(db, room, TURNS, "m")
        print(
            f"append_message (1 txn)             {_ms(_median(messages))}  p90 "
            f"{_ms(_p90(messages))}  x{_median(messages) / base_median:5.1f}"
        )
        batch_rooms = [storage.create_room(db, f"batch {i}", status="running") for i in range(100)]
        claimed = []
        for batch_room in batch_rooms:
            token = storage.acquire_lease(db, batch_room, "batcher", 3600)
            claimed.append(
                (
                    token,
                    storage.claim_turn(
                        db,
                        batch_room,
                        token=token,
                        expected_last_seq=0,
                        speaker="A",
                        request_id="b",
                        activity=0,
                        round=0,
                    ),
                )
            )
        started = time.perf_counter()
        results = storage.commit_turns(
            db, [storage.TurnCommit(event_id=t.id, token=k, content="x") for k, t in claimed]
        )
        per_turn = (time.perf_counter() - started) / len(claimed)
        assert all(results)
        print(f"group commit, per turn (100/txn)   {_ms(per_turn)}  x{per_turn / base_median:5.1f}")

        samples, wall = concurrent_turn_appends(url, TURNS // 2)
        print(
            f"{WRITERS} writer processes, claim+commit {_ms(_median(samples))}  p90 "
            f"{_ms(_p90(samples))}  x{_median(samples) / base_median:5.1f}  "
            f"throughput {len(samples) / wall:7.0f} turns/s"
        )
        db.dispose()

        print(f"\n== queries with {total:,} stored events (median of repeated runs)")
        big_url = f"sqlite:///{folder / 'big.db'}"
        big_db = Database(big_url)
        big, smalls, load = bulk_load(big_db, total)
        print(
            f"bulk load (executemany)            {load:8.2f} s  "
            f"({total / load:,.0f} events/s; {len(smalls)} rooms x 1,000 + one of {total // 5:,})"
        )
        big_last = storage.latest_seq(big_db, big)
        queries: dict[str, Callable[[], Any]] = {
            "events after seq, big room (100)": lambda: storage.events(
                big_db, big, after_seq=big_last - 100, limit=100
            ),
            "events after seq, mid big room": lambda: storage.events(
                big_db, big, after_seq=big_last // 2, limit=100
            ),
            "latest_seq (poll)": lambda: storage.latest_seq(big_db, big),
            "rooms_summary page (50 rooms)": lambda: frames.rooms_summary(big_db, limit=50),
            "rooms_summary of the big room": lambda: frames.rooms_summary(big_db, room_ids=[big]),
            "events_frame page (1 room, 500)": lambda: frames.events_frame(
                big_db, smalls[0], limit=500
            ),
            "speaker_stats, 1 experiment": lambda: frames.speaker_stats(big_db, experiment_id=1),
            "list_runnable_rooms": lambda: storage.list_runnable_rooms(big_db),
        }
        for name, query in queries.items():
            repeat = 3 if "experiment" in name or "big room" in name and "summary" in name else 20
            elapsed = timed(query, repeat)
            print(
                f"{name:34s} {_ms(elapsed)}  x{elapsed / base_median:7.1f}  "
                f"{'well under 1 s' if elapsed < 0.25 else 'under 1 s' if elapsed < 1 else 'OVER 1 s'}"
            )
        room = storage.create_room(big_db, "after load", status="running")
        loaded_turns = turn_appends(big_db, room, 300, "late")
        print(
            f"turn claim+commit at {total:,} events {_ms(_median(loaded_turns))}  "
            f"x{_median(loaded_turns) / base_median:5.1f}"
        )
        big_db.dispose()


if __name__ == "__main__":
    main()
