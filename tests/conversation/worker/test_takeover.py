"""Leases a crashed process of this host left behind are recognised and freed at once; a live
holder's, another host's and this process's own are never touched."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

import storage
from conversation.rooms.room import Room
from conversation.worker.takeover import gone_owners, owner_process, take_over_gone_owners
from storage import Database

HOST = socket.gethostname()
AGENTS = [{"name": "A", "traits": {}}, {"name": "B", "traits": {}}]


def owner(pid: int, host: str = HOST) -> str:
    return f"worker:{host}:{pid}:abcd1234"


def state_of(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_owner_names_are_parsed_from_the_right() -> None:
    assert owner_process("worker:box-1:4242:9f3c") == ("box-1", 4242)
    assert owner_process("room:a:b:box:17:beef") == ("box", 17)  # a role with colons
    assert owner_process("someone") is None
    assert owner_process("worker:box:notapid:beef") is None


def test_only_this_hosts_gone_processes_are_judged_gone() -> None:
    now = datetime.now(UTC)
    dead = exited_pid()
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # The zombie has exited but is not reaped (no wait): it still answers os.kill(pid, 0).
        deadline = datetime.now(UTC) + timedelta(seconds=10)
        while state_of(zombie.pid) != "Z":
            assert datetime.now(UTC) < deadline
        holders = {
            owner(dead): now,
            owner(zombie.pid): now,
            owner(sleeper.pid): now,  # alive, and started before its lease
            owner(os.getpid()): now,  # this process
            owner(dead, host="another-machine"): now,  # never judged from here
            "not-an-owner-name": now,
        }
        assert sorted(gone_owners(holders)) == sorted([owner(dead), owner(zombie.pid)])
        # A lease taken an hour before its pid's process started: the pid was reused.
        assert gone_owners({owner(sleeper.pid): now - timedelta(hours=1)}) == [owner(sleeper.pid)]
    finally:
        sleeper.kill()
        sleeper.wait()
        zombie.wait()


def test_a_gone_owners_leases_are_freed_and_taken_with_a_greater_token(db_url: str) -> None:
    db = Database(db_url)
    rooms = [Room.create(db, name=f"r{i}", agents=AGENTS).id for i in range(3)]
    dead, alive = owner(exited_pid()), owner(os.getpid())
    dead_tokens = storage.acquire_leases(db, rooms[:2], dead, 600)
    storage.acquire_leases(db, rooms[2:], alive, 600)
    assert set(storage.lease_holders(db)) == {dead, alive}

    assert take_over_gone_owners(db) == 2
    assert set(storage.lease_holders(db)) == {alive}
    taken = storage.acquire_leases(db, rooms, "worker:new:1:ffff", 600)
    assert taken == {room: dead_tokens[room] + 1 for room in rooms[:2]}  # the live one stays
    # The gone owner's old token can never write again.
    assert not storage.lease_is_current(db, rooms[0], dead_tokens[rooms[0]])
    db.dispose()


def test_takeover_can_be_turned_off(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = Database(db_url)
    room = Room.create(db, name="r", agents=AGENTS).id
    storage.acquire_leases(db, [room], owner(exited_pid()), 600)
    monkeypatch.setenv("ROOMS_LEASE_TAKEOVER", "0")
    assert take_over_gone_owners(db) == 0
    assert storage.get_lease(db, room).owner is not None
    db.dispose()
