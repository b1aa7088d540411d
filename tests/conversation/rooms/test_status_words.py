"""Status words agree across pages, and "waiting for the model server" is read from the database
(so the Home and Experiments pages, and the Room page after a restart, show it truthfully)
(issue 24)."""

from __future__ import annotations

import threading
import time

import pandas as pd
import pytest

import storage
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.room import Room
from conversation.rooms.status_words import STATUS_WORDS, status_word, status_words
from conversation.termination.conditions import MaxTurns
from conversation.vocabulary import ROOM_STATUSES
from storage import Database
from tests.support.openai_server import OpenAICompatibleServer
from ui.room import rooms


def test_every_status_has_one_word() -> None:
    assert set(STATUS_WORDS) == set(ROOM_STATUSES)
    assert status_word("terminated") == "ended"
    assert status_word("running", waiting_for_server=True) == "waiting for the model server"
    assert status_word("paused", waiting_for_server=True) == "paused"  # only a running room
    assert status_words([1, 2], ["running", "failed"], waiting=[1]) == [
        "waiting for the model server",
        "failed",
    ]


def test_a_room_waiting_for_its_server_is_said_so_from_the_database(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMS_MODEL_OUTAGE_SECONDS", "4")
    server = OpenAICompatibleServer(default_text="Fine.").start()
    url = server.base_url
    server.stop()  # nothing answers at the model's address
    room = Room.create(
        db,
        name="down",
        agents=[{"name": "Ann"}, {"name": "Ben"}],
        planner=RoundRobinPolicy(),
        termination=MaxTurns(2),
        model={"service": "openai_compatible", "model": "tiny", "base_url": url},
    )
    room.post("Hello.")
    other = Room.create(db, name="idle", agents=[{"name": "Cy"}])
    runner = threading.Thread(target=room.run, daemon=True)
    runner.start()
    waiting: dict = {}
    deadline = time.monotonic() + 20
    while not waiting and time.monotonic() < deadline:
        waiting = storage.waiting_for_server(db, [room.id, other.id])
        time.sleep(0.1)
    assert set(waiting) == {room.id} and waiting[room.id] is not None
    frame = pd.DataFrame({"room_id": [room.id, other.id], "status": ["running", "idle"]})
    shown = rooms.with_status_words(db, frame)
    assert list(shown["status"]) == ["waiting for the model server", "not started"]
    runner.join(timeout=30)  # the outage outlasts its bound: the turn fails, with the reason
    assert not runner.is_alive()
    assert storage.waiting_for_server(db, [room.id]) == {}
    assert Room.open(db, room.id).status == "failed"
    shown = rooms.with_status_words(db, frame.assign(status=["failed", "idle"]))
    assert list(shown["status"]) == ["failed", "not started"]
