"""Many rooms at once through the worker: 200 rooms x 10 turns with a model that waits 100 ms.

Prints the wall time of one ``Worker`` (one process, one event loop) driving every room to its
end, against the ideal (10 sequential turns x 100 ms = 1 s), and the same work with the rooms
driven one ``Room.step()`` at a time in a single room for comparison of per-turn overhead.
Target (DESIGN.md section 9): within 2x of the ideal.

Run: ``python benchmarks/rooms_worker.py [--rooms 200] [--turns 10] [--latency 0.1]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ["HOME"] = tempfile.mkdtemp(prefix="bench-home-")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.simplefilter("ignore")

from edsl import Agent, AgentList  # noqa: E402

from conversation import MaxTurns, OfflineModel, RoundRobinPolicy  # noqa: E402
from conversation.rooms.room import Room  # noqa: E402
from conversation.worker import Worker  # noqa: E402
from storage import Database  # noqa: E402


def reply(user_prompt: str, system_prompt: str) -> str:
    return "I hear you; here is my next point."


def make_rooms(db: Database, rooms: int, turns: int, latency: float) -> list[Room]:
    agents = AgentList([Agent(name="Alice"), Agent(name="Bob")])
    made = []
    for i in range(rooms):
        room = Room.create(
            db,
            name=f"bench {i}",
            agents=agents,
            planner=RoundRobinPolicy(),
            termination=MaxTurns(turns),
            # A model that only waits: its own work is not the engine's.
            model=OfflineModel(func=reply, latency=latency),
        )
        room.post("Let's begin.", request_id="start")
        made.append(room)
    return made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rooms", type=int, default=200)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-rooms-"))

    db = Database(f"sqlite:///{folder / 'worker.db'}")
    rooms = make_rooms(db, args.rooms, args.turns, args.latency)
    started = time.perf_counter()
    taken = asyncio.run(Worker(db, concurrency=args.rooms).run(until_idle=True))
    wall = time.perf_counter() - started
    ideal = args.turns * args.latency
    done = sum(1 for r in rooms if r.status == "terminated")
    print(
        f"worker: {args.rooms} rooms x {args.turns} turns ({taken} turns, {done} rooms finished) "
        f"in {wall:.2f} s = {wall / ideal:.2f} x ideal ({ideal:.1f} s)   target <= 2.0 x"
    )

    single = Database(f"sqlite:///{folder / 'single.db'}")
    (room,) = make_rooms(single, 1, 200, 0.0)
    started = time.perf_counter()
    steps = len(room.run())
    per_turn = (time.perf_counter() - started) / max(steps, 1)
    print(
        f"room.run(): {steps} turns with an instant model, {per_turn * 1000:.2f} ms per turn "
        "(claim + call + fenced commit + status, one room)"
    )


if __name__ == "__main__":
    main()
