"""On PostgreSQL a posted message wakes a worker at once (LISTEN/NOTIFY, issue 23): a worker
that polls only every 30 s claims the new turn within a second or two; on SQLite the poll finds
it (the listener does nothing there)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import storage
from conversation.models import OfflineModel
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from conversation.worker import Worker
from storage import Database


def first_turn(db: Database, room_id: int, timeout: float) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e.kind == "agent" for e in storage.events(db, room_id)):
            return time.monotonic()
        time.sleep(0.01)
    return None


def test_a_posted_message_wakes_a_worker_at_once_on_postgresql(db: Database, backend: str) -> None:
    if backend == "sqlite":
        listener = storage.WorkListener(db.url, lambda _: None)
        assert listener.start() is False  # no channel on SQLite: the poll finds the work
        return
    worker = Worker(db, concurrency=2, poll_interval=30.0)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(worker.run(),), daemon=True)
    thread.start()
    try:
        time.sleep(1.5)  # the worker's first look (nothing runnable) and its LISTEN
        room = Room.create(
            db,
            name="wake",
            agents=[{"name": "Ann"}, {"name": "Ben"}],
            planner=RoundRobinPolicy(),
            termination=MaxTurns(1),
            model=OfflineModel(),
        )
        posted = time.monotonic()
        room.post("Anyone there?")
        claimed = first_turn(db, room.id, timeout=20)
        assert claimed is not None, "no turn was claimed"
        assert claimed - posted < 5.0, f"{claimed - posted:.2f} s: the worker waited for its poll"
    finally:
        worker.stop()
        thread.join(timeout=30)


def test_the_trigger_fires_only_when_a_room_becomes_running(db: Database, backend: str) -> None:
    if backend == "sqlite":
        pytest.skip("PostgreSQL's LISTEN/NOTIFY")
    seen: list[int | None] = []
    listener = storage.WorkListener(db.url, seen.append)
    listener.start()
    try:
        assert listener.listening.wait(10)
        time.sleep(0.2)
        seen.clear()
        room_id = storage.create_room(db, "r", {})
        storage.update_room(db, room_id, name="renamed")  # not runnable: no notice
        time.sleep(0.5)
        assert seen == []
        storage.update_room(db, room_id, status="running")
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.02)
        assert seen == [None]
    finally:
        listener.stop(timeout=5)
