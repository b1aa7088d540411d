"""Issue 19: after a ``kill -9`` the pages said nothing while a restarted server took over. A turn in
flight whose process is gone (or whose lease expired) reads as "recovering after a restart"; one
whose holder is alive never does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

import storage
from conversation.worker import Recovery, recovering
from storage import Database

HOST = socket.gethostname()


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


def gone_owner() -> str:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"app:{HOST}:{child.pid}:dead0001"


def running_turn(db: Database, owner: str, experiment_id: int | None = None, ttl: float = 600):
    room = storage.create_room(db, "r", status="running", experiment_id=experiment_id)
    storage.append_message(db, room, "human", "user", "hello")
    token = storage.acquire_lease(db, room, owner, ttl)
    turn = storage.claim_turn(
        db,
        room,
        token=token,
        expected_last_seq=1,
        speaker="A",
        request_id=f"{room}:2:A",
        activity=1,
        round=0,
    )
    assert turn is not None and turn.state == "running"
    return room


def test_a_turn_whose_process_is_gone_is_recovering(db: Database) -> None:
    room = running_turn(db, gone_owner())
    recovery = recovering(db, room_id=room)
    assert recovery == Recovery(rooms=1, within_seconds=5)
    assert recovery.sentence("A's turn") == (
        "recovering after a restart: A's turn lost its process and is taken over within about 5 s"
    )


def test_a_live_holders_turn_is_not_recovering(db: Database) -> None:
    room = running_turn(db, f"app:{HOST}:{os.getpid()}:alive001")
    assert recovering(db, room_id=room) is None
    assert recovering(db, room_id=storage.create_room(db, "quiet")) is None  # nothing in flight


def test_an_expired_lease_of_another_host_is_recovering(db: Database) -> None:
    room = running_turn(db, "worker:another-machine:17:beef0001", ttl=0.05)
    import time

    time.sleep(0.2)
    assert recovering(db, room_id=room) == Recovery(rooms=1, within_seconds=5)


def test_an_experiment_counts_its_rooms_in_recovery(db: Database) -> None:
    experiment = storage.create_experiment(db, "study", status="running")
    dead, alive = gone_owner(), f"app:{HOST}:{os.getpid()}:alive002"
    for owner in (dead, dead, alive):
        running_turn(db, owner, experiment_id=experiment)
    running_turn(db, dead)  # another experiment's room (none): not counted
    recovery = recovering(db, experiment_id=experiment)
    assert recovery is not None and recovery.rooms == 2
    assert recovery.sentence() == (
        "recovering after a restart: 2 rooms' turns lost their process and are taken over "
        "within about 5 s"
    )
    with pytest.raises(storage.StorageValueError):
        recovering(db)
