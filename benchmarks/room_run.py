"""``Room.run`` per-turn cost as the room grows: O(1) in the room's length.

One durable room (a real SQLite file, the default context policy, round robin between two agents,
an instant offline model that does no work of its own) runs 1,000 turns in one ``run()`` call.
Each turn's wall time is the time between two calls of the model; the figures are the medians of turns 40-60
and 790-810, their ratio (target <= 1.5) and the absolute cost at turn 800 (target <= 3 ms). The
room is run ``--repeat`` times (a new room each time); each figure is the best of the repeats
(noise on a shared machine only ever adds time), and every repeat's figures are printed too.

Run: ``python benchmarks/room_run.py [--turns 1000] [--repeat 3] [--no-cache]`` (no key needed; a
temporary HOME).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["HOME"] = tempfile.mkdtemp(prefix="bench-home-")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edsl import Agent, AgentList  # noqa: E402

from conversation import MaxTurns, OfflineModel, Room, RoundRobinPolicy  # noqa: E402
from storage import Database  # noqa: E402

STAMPS: list[float] = []


def instant_reply(user_prompt: str, system_prompt: str) -> str:
    """Answers at once; the time between two calls is one turn of engine work."""
    STAMPS.append(time.perf_counter())
    # A new reply each turn: a scripted model's copy of an earlier message is retried, then
    # stored as a pass (the copy check), which would time the retries' backoff instead.
    return f"I see your point number {len(STAMPS)}; go on."


def turn_times(db: Database, turns: int, *, use_cache: bool = True) -> list[float]:
    agents = AgentList([Agent(name="Alice", traits={"role": "a"}), Agent(name="Bob", traits={})])
    room = Room.create(
        db,
        name="long room",
        agents=agents,
        planner=RoundRobinPolicy(),
        termination=MaxTurns(turns),
        model=OfflineModel(func=instant_reply),
        in_process_only=True,  # the reply function lives in this process
        use_cache=use_cache,  # on: each turn also reads and writes the model cache
    )
    room.post("Talk for a long time.", request_id="start")
    STAMPS.clear()
    room.run(max_turns=turns)
    return [b - a for a, b in zip(STAMPS, STAMPS[1:], strict=False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="rooms run; the best is reported")
    parser.add_argument("--no-cache", action="store_true", help="rooms without the model cache")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-room-run-"))
    db = Database(f"sqlite:///{folder / 'rooms.db'}")
    runs = []
    for _ in range(max(1, args.repeat)):
        times = turn_times(db, args.turns, use_cache=not args.no_cache)
        early = statistics.median(times[40:60]) * 1000
        late = statistics.median(times[790:810]) * 1000
        runs.append((early, late))
    early = min(e for e, _ in runs)
    late = min(lt for _, lt in runs)
    cache = "without" if args.no_cache else "with"
    print(f"Room.run, {len(times)} turns, instant model, SQLite file, {cache} the model cache")
    print(
        "  each run (turn 50 / turn 800): " + ", ".join(f"{e:.2f} / {lt:.2f} ms" for e, lt in runs)
    )
    print(f"  per turn at turn 50:  {early:.2f} ms  (best of {len(runs)})")
    print(f"  per turn at turn 800: {late:.2f} ms  (best of {len(runs)}; target <= 3 ms)")
    print(f"  ratio 800/50:         {late / early:.2f}  (target <= 1.5)")


if __name__ == "__main__":
    main()
