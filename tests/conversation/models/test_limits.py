"""Calls in flight per provider: a local server gets one call at a time from the whole process
(rooms on a worker, a background worker's thread, ``Room.run`` from another thread), a setting
allows more, and the limiter itself is exact across threads and event loops."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from conversation.models import OfflineModel, resolve_model
from conversation.models.limits import (
    LOCAL_SERVER_ENV,
    PROVIDER_ENV,
    Slots,
    limit_for,
    provider_key,
    slots_for,
)
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from conversation.worker import BackgroundWorker, Worker
from settings import SettingError
from storage import Database
from tests.support import keep_prices_offline
from tests.support.openai_server import OpenAICompatibleServer

DELAY = 0.15  # seconds the server takes per reply
AGENTS = [{"name": "Alice"}, {"name": "Bob"}]


@pytest.fixture(autouse=True)
def _no_price_download(monkeypatch: pytest.MonkeyPatch) -> None:
    keep_prices_offline(monkeypatch)


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer(default_text="fine", default_delay=DELAY) as running:
        yield running


def spec(server: OpenAICompatibleServer) -> dict[str, str]:
    return {"service": "openai_compatible", "model": "tiny", "base_url": server.base_url}


def rooms(db: Database, server: OpenAICompatibleServer, count: int, turns: int) -> list[Room]:
    made = []
    for i in range(count):
        room = Room.create(
            db,
            name=f"room {i}",
            agents=AGENTS,
            planner=RoundRobinPolicy(),
            termination=MaxTurns(turns),
            model=spec(server),
        )
        room.post("Start.")
        made.append(room)
    return made


def test_the_key_and_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    local = resolve_model(
        {"service": "openai_compatible", "model": "a", "base_url": "http://127.0.0.1:8080/v1"}
    )
    other = resolve_model(
        {"service": "openai_compatible", "model": "b", "base_url": "http://127.0.0.1:8081/v1/"}
    )
    hosted = resolve_model(
        {"service": "openai_compatible", "model": "c", "base_url": "https://llm.example.org/v1"}
    )
    assert provider_key(local) == "openai_compatible at http://127.0.0.1:8080/v1"
    assert provider_key(other) != provider_key(local)  # two servers, two limits
    assert (limit_for(local), limit_for(hosted)) == (1, 8)
    assert provider_key(OfflineModel()) is None and slots_for(OfflineModel()) is None
    monkeypatch.setenv(LOCAL_SERVER_ENV, "2")
    monkeypatch.setenv(PROVIDER_ENV, "20")
    assert (limit_for(local), limit_for(hosted)) == (2, 20)
    assert slots_for(local) is slots_for(local)
    monkeypatch.setenv(PROVIDER_ENV, "none")
    with pytest.raises(SettingError, match=PROVIDER_ENV):
        limit_for(hosted)


def run_threads(slots: Slots, threads: int, tasks: int, hold: float) -> int:
    """Each thread runs its own loop with ``tasks`` concurrent holders; returns the most seen
    holding at once."""
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    async def holder() -> None:
        async with slots.held():
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
            await asyncio.sleep(hold)
            with lock:
                state["now"] -= 1

    async def many() -> None:
        await asyncio.gather(*(holder() for _ in range(tasks)))

    workers = [threading.Thread(target=asyncio.run, args=(many(),)) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(timeout=30)
    assert slots.in_flight == 0
    return state["most"]


@pytest.mark.parametrize("limit", [1, 3])
def test_the_limiter_is_exact_across_threads_and_event_loops(limit: int) -> None:
    assert run_threads(Slots(limit), threads=3, tasks=4, hold=0.02) == limit


def test_a_cancelled_waiter_gives_its_place_back() -> None:
    slots = Slots(1)

    async def scenario() -> None:
        await slots.acquire()
        waiting = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0.01)
        waiting.cancel()
        slots.release()  # would go to the cancelled waiter
        await asyncio.sleep(0.01)
        assert slots.in_flight == 0
        await asyncio.wait_for(slots.acquire(), 1)  # free again
        slots.release()

    asyncio.run(scenario())


def test_a_local_server_gets_one_call_at_a_time_from_a_worker(
    db: Database, server: OpenAICompatibleServer
) -> None:
    rooms(db, server, count=4, turns=2)
    taken = asyncio.run(Worker(db, concurrency=4, poll_interval=0.02).run(until_idle=True))
    assert taken == 8
    # Strictly one after another: eight requests, each held DELAY by the server, never two at
    # once (the same worker overlaps them up to the limit: see the limit of three below).
    assert len(server.chat_requests) == 8
    assert server.max_in_flight == 1


def test_a_limit_of_three_allows_three(
    db: Database, server: OpenAICompatibleServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOCAL_SERVER_ENV, "3")
    rooms(db, server, count=4, turns=3)
    taken = asyncio.run(Worker(db, concurrency=4, poll_interval=0.02).run(until_idle=True))
    assert taken == 12
    assert server.max_in_flight == 3


def test_a_background_worker_and_room_run_on_another_thread_share_the_limit(
    db: Database, server: OpenAICompatibleServer
) -> None:
    background_rooms = rooms(db, server, count=2, turns=3)
    mine = Room.create(
        db,
        name="mine",
        agents=AGENTS,
        planner=RoundRobinPolicy(),
        termination=MaxTurns(3),
        model=spec(server),
    )
    background = BackgroundWorker(db, concurrency=2, poll_interval=0.02).start()
    try:
        mine.post("Start.")  # posted after start: a person's room, run in this thread
        mine.run()
        deadline = time.monotonic() + 30
        while any(r.status == "running" for r in background_rooms):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        background.stop()
    assert len(server.chat_requests) >= 7
    assert server.max_in_flight == 1
