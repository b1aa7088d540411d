"""A model server that restarts mid-turn: the room waits for it (recording "waiting for the model
server" on the turn, spending no retry budget) and carries on by itself; only an outage longer than
``ROOMS_MODEL_OUTAGE_SECONDS`` fails the turn, with that reason (issue 24)."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import openai
import pytest

import storage
from conversation.models import retries
from conversation.models.retries import OUTAGE_WAIT, SERVER_UNAVAILABLE, is_server_unavailable
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.engine import asking
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from storage import Database
from tests.support.clocks import Seen, SleepClock
from tests.support.openai_server import OpenAICompatibleServer


def refused() -> BaseException:
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0)
    try:
        client.models.list()
    except openai.APIConnectionError as exc:
        return exc
    raise AssertionError("port 9 answered")


def test_a_refused_connection_is_an_outage_by_type_and_a_timeout_is_not() -> None:
    assert is_server_unavailable(refused())
    assert is_server_unavailable(httpx.ConnectError("x"))
    timeout = openai.APITimeoutError(request=httpx.Request("POST", "http://h/v1"))
    assert not is_server_unavailable(timeout)
    assert not is_server_unavailable(ValueError("Connection refused"))  # never by text
    assert [OUTAGE_WAIT.delay(n) for n in range(1, 7)] == [2, 4, 8, 16, 30, 30]


def make_room(db: Database, url: str) -> Room:
    room = Room.create(
        db,
        name="outage",
        agents=[{"name": "Ann"}, {"name": "Ben"}],
        planner=RoundRobinPolicy(),
        termination=MaxTurns(3),
        model={"service": "openai_compatible", "model": "tiny", "base_url": url},
    )
    room.post("Hello.")
    return room


def test_a_restarted_server_lets_the_room_finish_by_itself(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMS_MODEL_OUTAGE_SECONDS", "60")
    server = OpenAICompatibleServer(default_text="Fine.").start()
    url, port = server.base_url, int(server.base_url.split(":")[2].split("/")[0])
    room = make_room(db, url)
    server.stop()  # the server goes down as the first turn starts
    runner = threading.Thread(target=room.run, daemon=True)
    runner.start()
    seen: list[dict] = []
    deadline = time.monotonic() + 20
    while not seen and time.monotonic() < deadline:  # the turn says it waits for the server
        seen = [
            e.error
            for e in storage.events(db, room.id)
            if e.kind == "agent" and e.error and e.error.get("code") == SERVER_UNAVAILABLE
        ]
        time.sleep(0.1)
    assert seen and "model server unavailable" in seen[0]["message"]
    time.sleep(2)
    server.start(port)  # back, on the same address
    try:
        runner.join(timeout=60)
        assert not runner.is_alive()
    finally:
        server.stop()
    turns = [e for e in storage.events(db, room.id) if e.kind == "agent"]
    assert [(t.state, t.content) for t in turns] == [("done", "Fine.")] * 3
    assert turns[0].attempts == 1  # waiting for the server spent no retry
    assert storage.get_room(db, room.id).status != "failed"


def test_an_outage_longer_than_the_bound_fails_the_turn_with_that_reason(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOMS_MODEL_OUTAGE_SECONDS", "3")
    # The outage is timed on a clock that moves only by the engine's own waits: exact, at once.
    clock = SleepClock()
    monkeypatch.setattr(retries, "time", Seen(time, monotonic=clock))
    monkeypatch.setattr(asking, "asyncio", Seen(asyncio, sleep=clock.sleep))

    async def wait_on_the_clock(base_url: object, seconds: float) -> bool:
        await clock.sleep(seconds)  # the server never comes back: the whole step is waited
        return False

    monkeypatch.setattr(asking, "wait_until_up", wait_on_the_clock)
    server = OpenAICompatibleServer().start()
    url = server.base_url
    server.stop()
    room = make_room(db, url)
    room.run()
    assert clock.sleeps == [2.0, 1.0]  # waited (2 s, then what was left of 3 s), then gave up
    stored = storage.get_room(db, room.id)
    assert stored.status == "failed"
    assert "model server unavailable for 3 s" in stored.stop_reason
    assert "ROOMS_MODEL_OUTAGE_SECONDS" in stored.stop_reason
    assert "Timeout" not in stored.stop_reason


def test_the_room_page_says_it_waits_for_the_model_server() -> None:
    from datetime import UTC, datetime, timedelta
    from types import SimpleNamespace

    from ui.room.live import waiting_for_server

    turn = SimpleNamespace(
        error={"type": "ConnectError", "code": SERVER_UNAVAILABLE, "message": "down"},
        next_attempt_at=(datetime.now(UTC) + timedelta(seconds=20)).replace(tzinfo=None),
    )
    assert waiting_for_server(turn) in {
        "waiting for the model server (retry in 20 s)",
        "waiting for the model server (retry in 19 s)",
    }
    turn.error = {"type": "APIStatusError", "code": "503", "message": "busy"}
    assert waiting_for_server(turn) is None


def test_a_stream_cut_as_the_server_comes_up_is_waited_out(db: Database) -> None:
    """A streamed turn whose stream is closed before any text (a server coming up, seen in CI)
    waits for the server like a refused connection and the room finishes: not a failed turn."""
    from tests.support.openai_server import Reply

    server = OpenAICompatibleServer(default_text="Fine.").start()
    try:
        server.script(Reply(cut=True))
        room = make_room(db, server.base_url)
        room.run()
    finally:
        server.stop()
    turns = [e for e in storage.events(db, room.id) if e.kind == "agent"]
    assert [(t.state, t.content) for t in turns] == [("done", "Fine.")] * 3
    assert turns[0].attempts == 1  # the cut stream spent no retry
    assert len(server.chat_requests) == 4 and all(
        r.body.get("stream") for r in server.chat_requests
    )


@pytest.mark.timeout(60)
def test_a_server_back_between_backoff_steps_is_noticed_within_seconds(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: a healthy local server waited up to 30 s for the next backoff step. Each
    step is now 600 s: the room must notice the server within its 20 s deadline all the same."""
    from conversation.models import retries
    from conversation.rooms.engine import asking

    monkeypatch.setattr(asking, "OUTAGE_WAIT", retries.Backoff(first=600.0, cap=600.0))
    monkeypatch.setenv("ROOMS_MODEL_OUTAGE_SECONDS", "3600")
    server = OpenAICompatibleServer(default_text="Fine.").start()
    url, port = server.base_url, int(server.base_url.split(":")[2].split("/")[0])
    room = make_room(db, url)
    server.stop()
    runner = threading.Thread(target=room.run, daemon=True)
    runner.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(
        e.error and e.error.get("code") == SERVER_UNAVAILABLE for e in storage.events(db, room.id)
    ):
        time.sleep(0.1)
    server.start(port)
    try:
        runner.join(timeout=20)
        assert not runner.is_alive(), "the room still waits for its 600 s backoff step"
    finally:
        server.stop()
    turns = [e for e in storage.events(db, room.id) if e.kind == "agent"]
    assert [t.content for t in turns] == ["Fine."] * 3
