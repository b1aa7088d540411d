"""Child of ``tests/test_room_concurrency.py``: a person posting to a room while workers drive it.

Each message is sent twice with the same request id (a double click, a retried request); both
sends must name the same event. Prints ``posted N`` at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conversation.rooms.room import Room  # noqa: E402
from storage import Database  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--room", type=int, required=True)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--pause", type=float, default=0.2)
    args = parser.parse_args()
    db = Database(args.db)
    room = Room.open(db, args.room)
    for i in range(args.count):
        first = room.post(f"human message {i}", speaker="maria", request_id=f"h-{i}")
        time.sleep(args.pause / 4)
        second = room.post(f"human message {i}", speaker="maria", request_id=f"h-{i}")
        if first.id != second.id:
            print(f"request h-{i} made two events: {first.seq} and {second.seq}", file=sys.stderr)
            return 1
        time.sleep(args.pause)
    print(f"posted {args.count}", flush=True)
    db.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
