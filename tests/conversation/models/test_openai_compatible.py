"""End to end: resolve_model(openai_compatible spec) + ask() against a real HTTP server on 127.0.0.1.

The server (tests/support/openai_server.py) speaks the OpenAI chat API; the model goes through
EDSL's openai_compatible service and the real ``openai`` client. Typed retries are the project's:
a 503 is retried by ``async_call_with_retries`` (exactly two requests), a 400 is not (exactly one).
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

import openai
import pytest
from edsl import Model

from conversation.models import ask, ask_sync, model_spec, resolve_model
from conversation.models.retries import async_call_with_retries, is_transient
from tests.support import keep_prices_offline
from tests.support.openai_server import OpenAICompatibleServer, Reply

FAST_RETRY_HINT = {"retry-after-ms": "1"}  # only the openai client reads this header


@pytest.fixture(autouse=True)
def _no_price_download(monkeypatch):
    keep_prices_offline(monkeypatch)


@pytest.fixture
def server():
    with OpenAICompatibleServer() as running:
        yield running


@pytest.fixture
def model(server):
    return resolve_model(
        {"service": "openai_compatible", "model": "tiny", "base_url": server.base_url}
    )


def call_with_retries(model, attempts: list[int]):
    async def once():
        attempts.append(1)
        return await ask(model, user_prompt="Your move.", system_prompt="You are Bob.")

    return asyncio.run(async_call_with_retries(once, max_attempts=3, delay=0, describe="turn 3"))


def test_a_reply_flows_through_literally_with_usage(server, model):
    server.script(
        Reply(text="Hello {{ 7*7 }} from the server", prompt_tokens=21, completion_tokens=8)
    )
    reply = ask_sync(
        model,
        user_prompt='{"turn": 0, "speaker": "Alice", "text": "{{ x }}"}',
        system_prompt="You are Bob.",
    )
    assert reply.text == "Hello {{ 7*7 }} from the server"
    assert (reply.input_tokens, reply.output_tokens) == (21, 8)
    assert reply.model_name == "openai_compatible/tiny"
    assert reply.cost is None  # a self-hosted server's price is unknown, not EDSL's fallback rate
    [request] = server.chat_requests
    assert request.body["model"] == "tiny"
    assert request.body["messages"] == [
        {"role": "system", "content": "You are Bob."},
        {"role": "user", "content": '{"turn": 0, "speaker": "Alice", "text": "{{ x }}"}'},
    ]


def test_the_same_model_works_from_a_second_event_loop(server, model):
    assert ask_sync(model, user_prompt="one", system_prompt="").text == "ok"
    assert ask_sync(model, user_prompt="two", system_prompt="").text == "ok"
    assert len(server.chat_requests) == 2


def test_a_503_is_transient_and_retried_once(server, model):
    server.script(Reply(status=503, headers=FAST_RETRY_HINT), Reply(text="second time lucky"))
    attempts: list[int] = []
    reply = call_with_retries(model, attempts)
    assert reply.text == "second time lucky"
    assert len(attempts) == 2
    assert len(server.chat_requests) == 2


def test_the_503_exception_is_the_providers_own(server, model):
    server.script(Reply(status=503, headers=FAST_RETRY_HINT))
    with pytest.raises(openai.InternalServerError) as caught:
        ask_sync(model, user_prompt="q", system_prompt="")
    assert caught.value.status_code == 503
    assert is_transient(caught.value)
    assert len(server.chat_requests) == 1  # the client did not retry by itself


def test_a_400_is_not_retried(server, model):
    server.script(Reply(status=400), Reply(text="never reached"))
    attempts: list[int] = []
    with pytest.raises(openai.BadRequestError) as caught:
        call_with_retries(model, attempts)
    assert not is_transient(caught.value)
    assert any("turn 3" in note for note in getattr(caught.value, "__notes__", []))
    assert len(attempts) == 1
    assert len(server.chat_requests) == 1


def test_negative_control_edsls_plain_client_retries_on_its_own(server):
    plain = Model(
        "tiny", service_name="openai_compatible", base_url=server.base_url, skip_api_key_check=True
    )
    server.script(*[Reply(status=503, headers=FAST_RETRY_HINT)] * 2, Reply(text="hidden retry"))
    reply = ask_sync(plain, user_prompt="q", system_prompt="")
    assert reply.text == "hidden retry"
    assert len(server.chat_requests) == 3  # two retries nobody asked for


def test_a_stored_spec_rebuilds_a_model_that_reaches_the_same_server(server, model):
    spec = json.loads(json.dumps(model_spec(model)))
    assert spec["base_url"] == server.base_url
    server.script(Reply(text="rebuilt"))
    assert ask_sync(resolve_model(spec), user_prompt="q", system_prompt="").text == "rebuilt"


def test_the_server_lists_models(server):
    with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
        listing = json.load(response)
    assert [m["id"] for m in listing["data"]] == ["tiny"]


def test_the_per_loop_clients_survive_an_edsl_jobs_clean_up(server, model):
    """Every EDSL job ends by resetting each OpenAI service class's client cache to a plain
    dict; a plain dict would hand the first loop's client to the second loop."""
    from edsl.jobs.jobs import Jobs

    assert ask_sync(model, user_prompt="one", system_prompt="").text == "ok"
    Jobs._cleanup_async_clients()
    assert ask_sync(model, user_prompt="two", system_prompt="").text == "ok"
    assert ask_sync(model, user_prompt="three", system_prompt="").text == "ok"
