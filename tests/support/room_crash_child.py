"""Child process of ``tests/test_room_crash.py``: drive one room with the scripted model.

Run with ``CONVERSATION_FAULT_POINT`` set, the turn driver SIGKILLs this process at that point of
its first turn; each prompt the model is asked is appended to ``--record`` before it answers, so
the parent can compare it with the prompt of the resumed turn. Reaching the end (and printing
"finished") means no fault fired.

``--fail-first``: the first model call fails with a transient error (HTTP 503) and arms the
``during_call`` fault, so the process dies right after the driver persisted the failed attempt
(the retry budget must survive the restart).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conversation.models import OfflineModel  # noqa: E402
from conversation.rooms.engine import FAULT_ENV  # noqa: E402
from conversation.rooms.room import Room  # noqa: E402
from storage import Database  # noqa: E402
from tests.support.room_common import (  # noqa: E402
    drive_with,
    scripted_model,
    scripted_reply,
    warm_up,
)


class Unavailable(Exception):
    status_code = 503


def failing_first() -> Any:
    calls = []

    def reply(user_prompt: str, system_prompt: str) -> str:
        calls.append(1)
        if len(calls) == 1:
            os.environ[FAULT_ENV] = "during_call"  # die on the retry, after the attempt is saved
            raise Unavailable("service unavailable")
        return scripted_reply(user_prompt, system_prompt)

    return OfflineModel(func=reply)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--room", type=int, required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--lease-ttl", type=float, default=1.0)
    parser.add_argument("--fail-first", action="store_true")
    args = parser.parse_args()
    warm_up()
    db = Database(args.db)
    record = Path(args.record)
    model = failing_first() if args.fail_first else scripted_model(record)
    room = drive_with(Room.open(db, args.room), model, lease_ttl=args.lease_ttl)
    turns = room.run()
    print(f"finished {len(turns)} turns", flush=True)
    db.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
