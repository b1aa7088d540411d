"""Child of ``tests/test_room_concurrency.py``: hold a room's lease and take one turn whose model
call is slow, so the parent can SIGSTOP this process in the middle of the call.

When the call starts, ``--marker`` is written. The model's reply is ``ZOMBIE REPLY``. The outcome
of the turn is printed as one JSON line: ``{"token", "outcome", "reason", "content"}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import storage  # noqa: E402
from conversation.models import OfflineModel  # noqa: E402
from conversation.rooms.engine import Engine  # noqa: E402
from storage import Database  # noqa: E402
from tests.support.room_common import FixedModels, SlowCallModel, warm_up  # noqa: E402

OWNER = "zombie"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--room", type=int, required=True)
    parser.add_argument("--marker", required=True)
    parser.add_argument("--lease-ttl", type=float, default=1.0)
    parser.add_argument("--hold", type=float, default=1.5)
    args = parser.parse_args()
    marker = Path(args.marker)
    warm_up()
    db = Database(args.db)
    model = SlowCallModel(
        OfflineModel(replies=["ZOMBIE REPLY"]),
        hold=args.hold,
        on_call=lambda: marker.write_text("calling"),
    )
    engine = Engine(db, OWNER, lease_ttl=args.lease_ttl, models=FixedModels(model))
    token = storage.acquire_lease(db, args.room, OWNER, args.lease_ttl)
    if token is None:
        print(json.dumps({"token": None}), flush=True)
        return 1
    step = asyncio.run(engine.step_room(args.room, token))
    print(
        json.dumps(
            {
                "token": token,
                "kind": str(step.kind),
                "reason": step.reason,
                "content": step.turn.content if step.turn is not None else None,
            }
        ),
        flush=True,
    )
    db.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
