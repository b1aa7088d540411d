"""The app's in-process runner and restarts: the runner starts with the server (no visit needed),
and a server stopped with SIGTERM releases the leases of the rooms its runner drives, so the next
server (or a worker) takes them over at once."""

from __future__ import annotations

import time

import pytest

import storage
from conversation import OfflineModel, Room

pytestmark = pytest.mark.browser


def test_the_runner_starts_with_the_server_and_releases_its_leases_on_sigterm(fresh_server) -> None:  # type: ignore[no-untyped-def]
    fresh_server.folder.mkdir(parents=True, exist_ok=True)
    db = fresh_server.database()
    room = Room.create(
        db,
        name="slow room",
        agents=[{"name": "Alice"}, {"name": "Bob"}],
        model=OfflineModel(latency=3.0),
        planner={"kind": "round_robin", "transitions": None},
        termination={"kind": "max_turns", "max_turns": 40},
    )
    room.post("talk slowly")
    fresh_server.start()
    # No page is opened: the server's lifespan started the runner, which takes the room.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lease = storage.get_lease(db, room.id)
        if lease is not None and lease.owner and lease.owner.startswith("worker:"):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the runner never took the room:\n{fresh_server.log()}")
    fresh_server.stop()  # SIGTERM, as systemd or a container runtime sends it
    lease = storage.get_lease(db, room.id)
    assert lease is not None and lease.owner is None, (lease, fresh_server.log())
    assert storage.get_room(db, room.id).status == "running"  # its turn resumes elsewhere
    db.dispose()
