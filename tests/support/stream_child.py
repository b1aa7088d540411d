"""Child process of ``tests/resilience/test_streaming_processes.py``: take turns of one stored room
whose offline model streams (``ROOMS_OFFLINE_WORDS_PER_SECOND`` in the environment), so the parent
process reads the partial drafts, stops a draft, or SIGKILLs this process mid-stream."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conversation.rooms.room import Room  # noqa: E402
from storage import Database  # noqa: E402
from tests.support.room_common import warm_up  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--room", type=int, required=True)
    parser.add_argument("--turns", type=int, default=1)
    parser.add_argument("--lease-ttl", type=float, default=60.0)
    args = parser.parse_args()
    warm_up()
    db = Database(args.db)
    room = Room.open(db, args.room)
    room._turn_engine().lease_ttl = args.lease_ttl
    print("started", flush=True)
    turns = room.run(max_turns=args.turns)
    print("finished", " ".join(t.state for t in turns), flush=True)
    db.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
