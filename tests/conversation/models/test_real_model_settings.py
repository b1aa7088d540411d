"""Real models are first-class in rooms: the output limit the server understands, a per-room
request timeout whose retries back off instead of queueing behind a busy server, HTTP 429 retried
with Retry-After, and prompts that fit the model's window (checked against a real HTTP server on
127.0.0.1)."""

from __future__ import annotations

import asyncio

import pytest
from edsl import Agent, AgentList

from conversation import Room
from conversation.exceptions import ConversationValueError, ModelCallError
from conversation.models import ask, resolve_model
from conversation.models.calls import ModelTimeoutError
from conversation.models.retries import TRANSIENT_HTTP_STATUSES, Backoff, is_transient
from conversation.models.settings import CallSettings, context_window
from conversation.planning.planner import RoundRobinRoomPlanner
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.config import RoomConfig
from conversation.rooms.engine import asking
from conversation.termination.conditions import MaxTurns
from conversation.text.tokens import prompt_tokens
from storage import Database
from tests.support import keep_prices_offline
from tests.support.clocks import recorded_sleeps
from tests.support.openai_server import OpenAICompatibleServer, Reply

AGENTS = AgentList([Agent(name="Alice", traits={"role": "buyer"}), Agent(name="Bob", traits={})])


@pytest.fixture(autouse=True)
def _no_price_download(monkeypatch):
    keep_prices_offline(monkeypatch)


@pytest.fixture
def server():
    with OpenAICompatibleServer() as running:
        yield running


@pytest.fixture
def spec(server):
    return {"service": "openai_compatible", "model": "tiny", "base_url": server.base_url}


@pytest.fixture
def db(db_url: str) -> Database:
    return Database(db_url)


def one_round(db: Database, spec, **settings) -> Room:
    room = Room.create(
        db,
        name="real",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=1),
        model=spec,
        **settings,
    )
    room.post("What is your price?")
    return room


def test_the_rooms_output_limit_is_sent_as_max_tokens_too(db, server, spec) -> None:
    room = one_round(db, spec, max_output_tokens=77)
    room.run()
    assert room.status == "settled"
    bodies = [r.body for r in server.chat_requests]
    assert len(bodies) == 2
    assert all(b["max_tokens"] == 77 and b["max_completion_tokens"] == 77 for b in bodies)


def test_the_default_output_limit_is_bounded(db, server, spec) -> None:
    one_round(db, spec).run()
    assert {r.body["max_tokens"] for r in server.chat_requests} == {200}


def test_a_timed_out_request_is_recorded_and_not_retried_at_once(db, server, spec) -> None:
    server.script(Reply(text="late", delay=1.5))
    room = one_round(db, spec, request_timeout=0.4, retry={"max_attempts": 1, "base_delay": 0})
    room.run()
    assert room.status == "failed"
    (turn,) = room.turns()
    assert turn.state == "interrupted"  # transient: a person may resume it
    assert turn.error["type"] == "ModelTimeoutError" and turn.error["code"] == "timeout"
    assert "within 0.4 s" in turn.error["message"]
    assert "self-hosted server keeps working" in turn.error["message"]


def test_a_timeout_backs_off_at_least_its_own_length_and_grows(
    db, server, spec, monkeypatch
) -> None:
    waits = recorded_sleeps(monkeypatch, asking)  # the engine's waits between tries
    server.script(Reply(text="late", delay=4.0), Reply(text="on time"))
    room = one_round(db, spec, request_timeout=1.5, retry={"max_attempts": 4, "base_delay": 0})
    room.run()
    assert room.status == "settled"
    first = room.turns()[0]
    assert first.event.content == "on time" and first.attempts == 2  # timed out, then answered
    assert waits == [1.5]  # after the timeout, a wait as long (base_delay alone is 0)
    exc = ModelTimeoutError("slow", timeout=30, min_backoff=30)
    assert [Backoff(first=1.0).delay(n, exc) for n in (1, 2, 3)] == [30, 60, 120]
    assert Backoff(first=1.0).delay(1, ModelTimeoutError("remote", timeout=30)) == 1.0
    assert is_transient(exc, TRANSIENT_HTTP_STATUSES)


def test_http_429_is_retried_after_the_servers_retry_after(db, server, spec, monkeypatch) -> None:
    waits = recorded_sleeps(monkeypatch, asking)  # the engine's waits between tries
    server.script(Reply(status=429, headers={"Retry-After": "1"}), Reply(text="now"))
    room = one_round(db, spec, retry={"max_attempts": 3, "base_delay": 0})
    room.run()
    assert room.status == "settled"
    assert room.turns()[0].event.content == "now" and room.turns()[0].attempts == 2
    assert waits == [1.0]  # Retry-After honoured (base_delay alone would not wait)
    assert len(server.chat_requests) == 3


def test_known_windows_and_server_settings() -> None:
    assert context_window({"service": "openai", "model": "gpt-4o-mini"}) == 128_000
    assert context_window({"service": "anthropic", "model": "claude-3-5-haiku"}) == 200_000
    assert context_window({"service": "openai_compatible", "model": "smollm2"}) == 4096
    assert context_window({"service": "openai_compatible", "model": "x"}, 8192) == 8192
    assert context_window({"service": "groq", "model": "something-new"}) is None
    with pytest.raises(ConversationValueError, match="max_output_tokens"):
        RoomConfig.build(agents=AGENTS, model="offline", context_window=100, max_output_tokens=100)
    with pytest.raises(ConversationValueError, match="timeout"):
        RoomConfig.build(agents=AGENTS, model="offline", request_timeout=0)


def test_long_rooms_keep_every_prompt_within_the_window(db, server, spec) -> None:
    long_reply = "I hear you, but " + "the price must reflect the mug's quality. " * 20
    server.default_text = long_reply
    room = Room.create(
        db,
        name="long",
        agents=AGENTS,
        planner=RoundRobinPolicy(),
        termination=MaxTurns(24),
        model=spec,
        context_window=1500,
        max_output_tokens=200,
    )
    room.post("OPENER: agree on a price for the mug, and say DEAL when you do.")
    room.run()
    assert room.status == "terminated"
    prompts = [  # the system message, and the conversation sent as chat turns
        (next(m["content"] for m in r.body["messages"] if m["role"] == "system"),
         "\n".join(m["content"] for m in r.body["messages"] if m["role"] != "system"))
        for r in server.chat_requests
    ]  # fmt: skip
    assert len(prompts) == 24
    sizes = [prompt_tokens(system, user) for system, user in prompts]
    assert max(sizes) <= 1500 - 200
    assert sizes[-1] > 900  # the window is used, not starved
    assert all("OPENER:" in user for _, user in prompts)  # the opening is kept
    assert all("buyer" in system for system, _ in prompts if "You are Alice" in system)
    last_user = prompts[-1][1]
    assert len(last_user.splitlines()) < 30  # the middle was dropped


def test_a_prompt_larger_than_the_window_is_never_sent(server, spec) -> None:
    model = resolve_model(spec)
    settings = CallSettings(max_output_tokens=100, context_window=300)
    with pytest.raises(ModelCallError) as caught:
        asyncio.run(ask(model, user_prompt="word " * 400, system_prompt="s", settings=settings))
    assert caught.value.code == "prompt_too_large"
    assert server.chat_requests == []
    reply = asyncio.run(ask(model, user_prompt="word " * 20, system_prompt="s", settings=settings))
    assert reply.text == "ok"  # control: a prompt that fits is sent


def test_a_copied_label_is_stripped_from_the_reply(server, spec) -> None:
    model = resolve_model(spec)
    server.script(Reply(text="3. Alice: I can pay $5."), Reply(text="Bob: no thanks"))
    settings = CallSettings(speakers=("Alice",))
    first = asyncio.run(ask(model, user_prompt="go", system_prompt="s", settings=settings))
    second = asyncio.run(ask(model, user_prompt="go", system_prompt="s", settings=settings))
    assert first.text == "I can pay $5."
    assert second.text == "Bob: no thanks"  # another speaker's label is not Alice's to drop
