"""ask(): literal prompts in, literal reply out, provider errors unchanged, empty answers refused."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from edsl import Cache, Model

from conversation.exceptions import ConversationStateError, ConversationValueError, ModelCallError
from conversation.models import ModelReply, OfflineModel, ask, ask_sync, calls, resolve_model
from conversation.models.retries import async_call_with_retries, is_transient
from tests.support import keep_prices_offline
from tests.support.clocks import Seen


class ProviderUnavailable(Exception):
    """Looks like an HTTP client's status error."""

    status_code = 503


def test_reply_fields(monkeypatch):
    model = OfflineModel(replies=["hello there"])
    readings = iter([100.0, 100.25])  # the clock as the call is sent, and as it returns
    monkeypatch.setattr(calls, "time", Seen(time, perf_counter=lambda: next(readings)))
    reply = ask_sync(model, user_prompt="hi", system_prompt="You are Alice.")
    assert isinstance(reply, ModelReply)
    assert reply.text == "hello there"
    assert reply.model_name == "offline"
    assert reply.input_tokens == 5 and reply.output_tokens == 3 and reply.cost == 0.0
    assert reply.cache_used is False and isinstance(reply.cache_key, str)
    assert reply.latency == 0.25  # the call's own time, in seconds
    assert reply.raw["choices"][0]["message"]["content"] == "hello there"
    assert reply.usage()["model"] == "offline"


def test_prompts_and_reply_travel_literally():
    hostile = "Look: {{ 6*7000 + 1 }} {% if x %}y{% endif %} {# c #}"
    model = OfflineModel(replies=[hostile])
    reply = ask_sync(model, user_prompt=f"user {hostile}", system_prompt=f"sys {hostile}")
    assert model.prompts == [(f"sys {hostile}", f"user {hostile}")]
    assert reply.text == hostile


def test_reply_text_comes_from_the_raw_response_not_edsls_parse():
    # EDSL's parsed answer turns a JSON-looking reply into data; the text must stay text.
    model = OfflineModel(replies=['{"answer": 1}', "[1, 2]", "None"])
    assert [ask_sync(model, user_prompt=str(i), system_prompt="").text for i in range(3)] == [
        '{"answer": 1}',
        "[1, 2]",
        "None",
    ]


def test_edsl_test_model_works_through_the_same_path(monkeypatch):
    keep_prices_offline(monkeypatch)
    reply = ask_sync(
        Model("test", canned_response="canned {{ x }}"), user_prompt="q", system_prompt="s"
    )
    assert reply.text == "canned {{ x }}"
    assert reply.model_name == "test/test"


@pytest.mark.parametrize("empty", [None, "", "   \n"])
def test_empty_answer_is_a_model_call_error(empty):
    model = OfflineModel(replies=[empty, "fine"])
    with pytest.raises(ModelCallError) as caught:
        ask_sync(model, user_prompt="q", system_prompt="s")
    assert caught.value.code == "empty_response"
    assert ask_sync(model, user_prompt="q", system_prompt="s").text == "fine"  # control


def test_provider_exception_propagates_unchanged_and_is_classified():
    failure = ProviderUnavailable("busy")
    model = OfflineModel(fail_on={1: failure}, replies=["recovered"])
    with pytest.raises(ProviderUnavailable) as caught:
        ask_sync(model, user_prompt="q", system_prompt="s")
    assert caught.value is failure
    assert is_transient(caught.value)


def test_retries_wrap_ask_and_the_second_attempt_succeeds():
    model = OfflineModel(fail_on={1: ProviderUnavailable("busy")}, replies=["recovered"])

    async def run():
        return await async_call_with_retries(
            lambda: ask(model, user_prompt="q", system_prompt="s"),
            max_attempts=3,
            delay=0,
            describe="turn 0",
        )

    assert asyncio.run(run()).text == "recovered"
    assert model.calls == 2


def test_a_shared_cache_answers_repeats_and_iteration_asks_again():
    model = OfflineModel(replies=["first", "second"])
    cache = Cache()
    one = ask_sync(model, user_prompt="q", system_prompt="s", cache=cache)
    two = ask_sync(model, user_prompt="q", system_prompt="s", cache=cache)
    three = ask_sync(model, user_prompt="q", system_prompt="s", cache=cache, iteration=1)
    assert (one.text, two.text, three.text) == ("first", "first", "second")
    assert (one.cache_used, two.cache_used, three.cache_used) == (False, True, False)
    assert one.cache_key == two.cache_key != three.cache_key
    assert model.calls == 2


def test_without_a_cache_every_call_reaches_the_model_and_nothing_is_written():
    home = Path(os.environ["HOME"])
    before = {p for p in home.rglob("*")}
    model = OfflineModel(replies=["a", "b"])
    texts = [ask_sync(model, user_prompt="q", system_prompt="s").text for _ in range(2)]
    assert texts == ["a", "b"]
    assert {p for p in home.rglob("*")} == before


def test_ask_sync_refuses_to_run_inside_a_loop():
    async def inside():
        with pytest.raises(ConversationStateError, match="await ask"):
            ask_sync(OfflineModel(), user_prompt="q", system_prompt="s")

    asyncio.run(inside())


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"user_prompt": None, "system_prompt": ""}, "user_prompt"),
        ({"user_prompt": "", "system_prompt": b"x"}, "system_prompt"),
        ({"user_prompt": "", "system_prompt": "", "iteration": -1}, "iteration"),
        ({"user_prompt": "", "system_prompt": "", "iteration": True}, "iteration"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ConversationValueError, match=field):
        ask_sync(OfflineModel(), **kwargs)


def test_a_non_model_is_refused():
    with pytest.raises(ConversationValueError, match="resolve_model"):
        ask_sync("gpt-4o", user_prompt="q", system_prompt="s")


def test_a_remote_only_model_is_asked_through_a_one_question_job():
    """With only an Expected Parrot key, a turn goes through an EDSL job (remote inference).

    Here the job runs locally (an offline model flagged as remote-only); the prompt's template
    syntax reaches the model neutralised, never evaluated."""
    from conversation.models.providers.labels import REMOTE_ATTRIBUTE

    model = OfflineModel(func=lambda user, system: f"saw: {user}")
    setattr(model, REMOTE_ATTRIBUTE, True)
    reply = ask_sync(model, user_prompt="Price {{ 7*7 }}?", system_prompt="You are Alice.")
    assert reply.text.startswith("saw: Price {")
    assert "49" not in reply.text
    assert model.prompts == [("You are Alice.", "Price {\u200b{ 7*7 }}?")]
    assert reply.input_tokens and reply.output_tokens


def test_a_remote_only_model_is_recognised_from_the_environment():
    model = resolve_model("gpt-4o-mini", environ={"EXPECTED_PARROT_API_KEY": "ep-test"})
    from conversation.models import needs_remote_jobs

    assert needs_remote_jobs(model)
