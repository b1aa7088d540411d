"""ask_streaming(): ask()'s reply and cache, handed over as it grows, and stoppable.

With the offline model (word by word) and with a fake OpenAI-compatible server on 127.0.0.1 that
streams server-sent events through the real ``openai`` client (tests/support/openai_server.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from edsl import Cache, Model

from conversation.exceptions import ConversationValueError, ModelCallError
from conversation.models import OfflineModel, StoredCache, ask, cache_key, resolve_model, streaming
from conversation.models.calls import ModelTimeoutError
from conversation.models.chat_stream import request_parameters
from conversation.models.offline import WORDS_PER_SECOND_ENV
from conversation.models.providers.labels import REMOTE_ATTRIBUTE
from conversation.models.retries import (
    TRANSIENT_HTTP_STATUSES,
    async_call_with_retries,
    is_transient,
)
from conversation.models.settings import CallSettings
from conversation.models.streaming import ModelCallCancelled, ask_streaming, supports_streaming
from conversation.text.tokens import estimate_tokens, prompt_tokens
from settings import SettingError
from storage import Database
from tests.support import keep_prices_offline, known_prices
from tests.support.clocks import SleepClock
from tests.support.openai_server import OpenAICompatibleServer, Reply

LONG = " ".join(f"word{i}" for i in range(60))


def stream(model, *, cache=None, settings=None, cancel=None, stop_after=None, **prompts):
    """Run ``ask_streaming`` and return (reply, every text ``on_text`` saw)."""
    seen: list[str] = []

    def on_text(text: str) -> None:
        seen.append(text)
        if stop_after is not None and len(seen) == stop_after:
            cancel.set()

    prompts = {"user_prompt": "Your move.", "system_prompt": "You are Bob.", **prompts}
    reply = asyncio.run(
        ask_streaming(
            model, cache=cache, settings=settings, cancel=cancel, on_text=on_text, **prompts
        )
    )
    return reply, seen


def stopped(model, *, cache=None, stop_after=3, cancel=None, settings=None):
    """Stream until ``on_text`` has seen ``stop_after`` texts, then stop; what it saw."""
    seen: list[str] = []
    signal = cancel if cancel is not None else asyncio.Event()

    async def run() -> None:
        def on_text(text: str) -> None:
            seen.append(text)
            if len(seen) == stop_after:
                signal.set()

        with pytest.raises(ModelCallCancelled) as caught:
            await ask_streaming(
                model,
                user_prompt="Your move.",
                system_prompt="You are Bob.",
                cache=cache,
                settings=settings,
                on_text=on_text,
                cancel=signal,
            )
        assert caught.value.code == "cancelled"
        assert not is_transient(caught.value, TRANSIENT_HTTP_STATUSES)
        await asyncio.sleep(0.3)  # nothing more arrives after the stop

    asyncio.run(run())
    return seen


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'cache.db'}")
    yield database
    database.dispose()


# -- the offline model -------------------------------------------------------------------------


def test_offline_text_grows_word_by_word_and_ends_as_asks() -> None:
    reply, seen = stream(OfflineModel(words_per_second=1000))
    asked = asyncio.run(ask(OfflineModel(), user_prompt="Your move.", system_prompt="You are Bob."))
    assert len({len(text) for text in seen}) >= 3
    assert [len(text) for text in seen] == sorted({len(text) for text in seen})  # only grows
    assert all(reply.text.startswith(text) for text in seen)
    assert seen[-1] == reply.text == asked.text
    assert (reply.cache_used, reply.cost, reply.usage_estimated) == (False, 0.0, False)
    assert (reply.input_tokens, reply.output_tokens) == (asked.input_tokens, asked.output_tokens)


def test_offline_scripted_reply_streams_literally() -> None:
    model = OfflineModel(replies=["Look: {{ 7*7 }}  spaced\nnext line"], words_per_second=1000)
    reply, seen = stream(model)
    assert reply.text == "Look: {{ 7*7 }}  spaced\nnext line"
    assert seen == ["Look:", "Look: {{", "Look: {{ 7*7", "Look: {{ 7*7 }}", "Look: {{ 7*7 }}  spaced",
                    "Look: {{ 7*7 }}  spaced\nnext", "Look: {{ 7*7 }}  spaced\nnext line"]  # fmt: skip
    assert model.prompts == [("You are Bob.", "Your move.")]


def test_offline_rate_paces_the_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """Word k is shown k / rate seconds after the first (read on a clock that moves only by the
    stream's own waits, so the pace is exact on a loaded machine too)."""
    clock = SleepClock()
    shown_at: list[float] = []
    ten = " ".join(["w"] * 10)
    with monkeypatch.context() as patch:
        patch.setattr(streaming, "time", SimpleNamespace(perf_counter=clock))
        patch.setattr(asyncio, "sleep", clock.sleep)
        reply = asyncio.run(
            ask_streaming(
                OfflineModel(replies=[ten], words_per_second=50),
                user_prompt="Your move.",
                system_prompt="You are Bob.",
                on_text=lambda text: shown_at.append(clock()),
            )
        )
    assert reply.text == ten
    assert [t - shown_at[0] for t in shown_at] == pytest.approx([k / 50 for k in range(10)])
    monkeypatch.setenv(WORDS_PER_SECOND_ENV, "25")
    assert OfflineModel().stream_rate() == 25.0
    assert OfflineModel(words_per_second=7).stream_rate() == 7.0
    monkeypatch.setenv(WORDS_PER_SECOND_ENV, "fast")
    with pytest.raises(SettingError, match=WORDS_PER_SECOND_ENV):
        OfflineModel().stream_rate()
    with pytest.raises(ConversationValueError, match="words_per_second"):
        OfflineModel(words_per_second=0)


def test_the_rate_is_not_part_of_the_cache_key() -> None:
    slow, fast = OfflineModel(words_per_second=5), OfflineModel(words_per_second=500)
    assert slow.parameters == fast.parameters
    assert cache_key(slow, user_prompt="u", system_prompt="s") == cache_key(
        fast, user_prompt="u", system_prompt="s"
    )
    assert "words_per_second" not in str(slow.to_dict())


def test_offline_cache_key_is_asks_and_both_paths_hit_it(db: Database) -> None:
    model = OfflineModel(func=lambda user, system: f"draw {model.calls} of many words")
    cache = StoredCache(db)
    first, _ = stream(model, cache=cache)
    assert first.cache_key == cache_key(
        model, user_prompt="Your move.", system_prompt="You are Bob."
    )
    assert cache.entries([first.cache_key])  # stored before ask_streaming returned
    asked = asyncio.run(
        ask(model, user_prompt="Your move.", system_prompt="You are Bob.", cache=cache)
    )
    again, seen = stream(model, cache=StoredCache(db))
    assert (asked.text, asked.cache_used) == (first.text, True)
    assert (again.text, again.cache_used, again.cost, again.output_tokens) == (
        first.text,
        True,
        0.0,
        0,
    )
    assert seen == [first.text]  # a hit shows at once, whole
    assert model.calls == 1


def test_offline_stream_hits_what_ask_stored(db: Database) -> None:
    model = OfflineModel(func=lambda user, system: f"draw {model.calls}")
    asked = asyncio.run(
        ask(model, user_prompt="Your move.", system_prompt="You are Bob.", cache=StoredCache(db))
    )
    streamed, _ = stream(model, cache=StoredCache(db))
    assert (streamed.text, streamed.cache_used, streamed.cache_key) == (
        asked.text,
        True,
        asked.cache_key,
    )


def test_offline_stream_with_a_plain_edsl_cache() -> None:
    model = OfflineModel(func=lambda user, system: f"draw {model.calls}")
    cache = Cache(data={})
    first, _ = stream(model, cache=cache)
    again, _ = stream(model, cache=cache)
    assert list(cache.data) == [first.cache_key]
    assert (again.text, again.cache_used) == (first.text, True)


@pytest.mark.parametrize("signal", [asyncio.Event, threading.Event])
def test_offline_cancel_stops_and_caches_nothing(db: Database, signal: type) -> None:
    model = OfflineModel(replies=[LONG, "second answer"], words_per_second=40)
    cache = StoredCache(db)
    seen = stopped(model, cache=cache, cancel=signal())
    # Stopped at the third word, or a few later (a polled signal, and a loaded machine whose
    # words fall due before the stop is read), never at the end of the 60 words.
    assert 3 <= len(seen) < len(LONG.split()) and LONG.startswith(seen[-1])
    key = cache_key(model, user_prompt="Your move.", system_prompt="You are Bob.")
    assert cache.entries([key]) == {}
    again = asyncio.run(
        ask(model, user_prompt="Your move.", system_prompt="You are Bob.", cache=cache)
    )
    assert (again.text, again.cache_used, model.calls) == ("second answer", False, 2)


def test_a_cancel_already_set_sends_nothing() -> None:
    model = OfflineModel()
    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(ModelCallCancelled):
        stream(model, cancel=cancel)
    assert model.calls == 0


def test_offline_timeout_covers_the_whole_stream() -> None:
    model = OfflineModel(replies=[LONG], words_per_second=20)
    with pytest.raises(ModelTimeoutError) as caught:
        stream(model, settings=CallSettings(timeout=0.2))
    assert is_transient(caught.value) and caught.value.code == "timeout"


def test_offline_echo_and_prompt_checks_are_asks() -> None:
    model = OfflineModel(replies=["Bob: I agree."], words_per_second=1000)
    reply, seen = stream(model, settings=CallSettings(speakers=("Bob",)))
    assert reply.text == "I agree." and seen[-1] == "I agree."
    with pytest.raises(ModelCallError) as caught:
        stream(OfflineModel(), settings=CallSettings(context_window=100, max_output_tokens=50),
               user_prompt="x " * 400)  # fmt: skip
    assert caught.value.code == "prompt_too_large"
    with pytest.raises(ConversationValueError, match="on_text"):
        asyncio.run(ask_streaming(OfflineModel(), user_prompt="u", system_prompt="", on_text="no"))
    with pytest.raises(ConversationValueError, match="user_prompt"):
        asyncio.run(ask_streaming(OfflineModel(), user_prompt=3, system_prompt=""))


# -- models that do not stream -----------------------------------------------------------------


def test_other_models_are_asked_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    keep_prices_offline(monkeypatch)
    model = Model("test", canned_response="canned {{ x }} reply")
    assert not supports_streaming(model)
    reply, seen = stream(model)
    assert seen == ["canned {{ x }} reply"] == [reply.text]


def test_a_remote_jobs_model_does_not_stream() -> None:
    model = resolve_model(
        {"service": "openai_compatible", "model": "tiny", "base_url": "http://127.0.0.1:9/v1"}
    )
    assert supports_streaming(model)
    setattr(model, REMOTE_ATTRIBUTE, True)
    assert not supports_streaming(model)
    edsl_remote = resolve_model(
        {"service": "openai_compatible", "model": "tiny", "base_url": "http://127.0.0.1:9/v1"}
    )
    edsl_remote.remote = True  # EDSL's own remote call through Expected Parrot
    assert not supports_streaming(edsl_remote)


# -- an OpenAI-compatible server ---------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAICompatibleServer]:
    keep_prices_offline(monkeypatch)
    with OpenAICompatibleServer() as running:
        yield running


@pytest.fixture
def model(server: OpenAICompatibleServer):
    return resolve_model(
        {"service": "openai_compatible", "model": "tiny", "base_url": server.base_url}
    )


def test_chunks_arrive_as_they_come_with_the_servers_usage(server, model) -> None:
    server.script(
        Reply(chunks=("Hel", "lo", " {{ x }}", " there"), prompt_tokens=21, completion_tokens=8)
    )
    reply, seen = stream(model)
    assert seen == ["Hel", "Hello", "Hello {{ x }}", "Hello {{ x }} there"]
    assert reply.text == "Hello {{ x }} there"
    assert (reply.input_tokens, reply.output_tokens, reply.usage_estimated) == (21, 8, False)
    assert reply.cost is None and reply.model_name == "openai_compatible/tiny"
    assert "usage_estimated" not in reply.usage()
    [request] = server.chat_requests
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}


def test_the_request_is_the_one_ask_sends(server, model) -> None:
    settings = CallSettings(max_output_tokens=64, timeout=30)
    asyncio.run(
        ask(model, user_prompt="Your move.", system_prompt="You are Bob.", settings=settings)
    )
    stream(model, settings=settings)
    plain, streamed = (request.body for request in server.chat_requests)
    assert {k: v for k, v in streamed.items() if k not in ("stream", "stream_options")} == {
        k: v for k, v in plain.items() if k != "stream"
    }
    assert streamed["max_tokens"] == 64 and streamed["messages"] == [
        {"role": "system", "content": "You are Bob."},
        {"role": "user", "content": "Your move."},
    ]
    assert request_parameters(model, "u", "")["messages"] == [{"role": "user", "content": "u"}]


def test_without_usage_in_the_stream_tokens_are_estimated(server, model) -> None:
    server.script(Reply(text="Fine by me, Alice.", stream_usage=False))
    reply, _ = stream(model)
    assert reply.usage_estimated and reply.usage()["usage_estimated"] is True
    assert reply.input_tokens == prompt_tokens("You are Bob.", "Your move.")
    assert reply.output_tokens == estimate_tokens("Fine by me, Alice.")
    assert reply.raw["usage"] is None  # the cache keeps what the server sent


def test_a_streamed_answer_is_cached_under_asks_key(server, model, db: Database) -> None:
    server.script(Reply(text="first answer"), Reply(text="second answer"))
    first, _ = stream(model, cache=StoredCache(db))
    asked = asyncio.run(
        ask(model, user_prompt="Your move.", system_prompt="You are Bob.", cache=StoredCache(db))
    )
    again, seen = stream(model, cache=StoredCache(db))
    assert first.cache_key == cache_key(
        model, user_prompt="Your move.", system_prompt="You are Bob."
    )
    assert (asked.text, asked.cache_used, asked.cache_key) == (
        "first answer",
        True,
        first.cache_key,
    )
    assert (again.text, again.cache_used, again.cost, again.input_tokens) == (
        "first answer",
        True,
        0.0,
        0,
    )
    assert seen == ["first answer"]
    assert len(server.chat_requests) == 1


def test_a_stream_hits_what_ask_stored(server, model, db: Database) -> None:
    settings = CallSettings(max_output_tokens=64)
    asked = asyncio.run(ask(model, user_prompt="Your move.", system_prompt="You are Bob.",
                            cache=StoredCache(db), settings=settings))  # fmt: skip
    streamed, _ = stream(model, cache=StoredCache(db), settings=settings)
    assert (streamed.text, streamed.cache_used, streamed.cache_key) == ("ok", True, asked.cache_key)
    other, _ = stream(model, cache=StoredCache(db), settings=CallSettings(max_output_tokens=65))
    assert not other.cache_used  # the output limit is part of the key, as for ask
    assert len(server.chat_requests) == 2


def test_a_timeout_is_asks_and_closes_the_stream(server, model, db: Database) -> None:
    server.script(Reply(text=LONG, chunk_delay=0.05))
    with pytest.raises(ModelTimeoutError) as caught:
        stream(model, cache=StoredCache(db), settings=CallSettings(timeout=0.4))
    assert is_transient(caught.value) and caught.value.min_backoff == 0.4  # a self-hosted server
    [sent] = server.streams
    assert sent.gone.wait(5) and sent.abandoned and len(sent.sent) < 60
    assert (
        StoredCache(db).entries(
            [cache_key(model, user_prompt="Your move.", system_prompt="You are Bob.")]
        )
        == {}
    )


@pytest.mark.parametrize(("status", "transient"), [(429, True), (503, True), (400, False)])
def test_statuses_are_classified_as_for_ask(server, model, status: int, transient: bool) -> None:
    server.script(Reply(status=status))
    with pytest.raises(Exception) as caught:
        stream(model)
    assert is_transient(caught.value, TRANSIENT_HTTP_STATUSES) is transient
    assert not isinstance(caught.value, ModelCallError)  # the provider's own exception


def test_a_503_is_retried_by_the_projects_retries(server, model) -> None:
    server.script(Reply(status=503), Reply(text="second time lucky"))

    async def once():
        return await ask_streaming(model, user_prompt="u", system_prompt="s")

    reply = asyncio.run(async_call_with_retries(once, max_attempts=3, delay=0, describe="turn 1"))
    assert reply.text == "second time lucky" and len(server.chat_requests) == 2


def test_a_dropped_connection_is_transient(model) -> None:
    dead = resolve_model(
        {"service": "openai_compatible", "model": "tiny", "base_url": "http://127.0.0.1:9/v1"}
    )
    with pytest.raises(Exception) as caught:
        stream(dead)
    assert is_transient(caught.value)


@pytest.mark.parametrize("signal", [asyncio.Event, threading.Event])
def test_cancel_closes_the_connection_and_caches_nothing(server, model, db, signal) -> None:
    server.script(Reply(text=LONG, chunk_delay=0.03))
    cache = StoredCache(db)
    seen = stopped(model, cache=cache, cancel=signal())
    assert 3 <= len(seen) <= 6 and LONG.startswith(seen[-1])
    [sent] = server.streams
    assert sent.gone.wait(5) and sent.abandoned and not sent.finished
    assert len(sent.sent) < 30  # the server saw the client go
    assert (
        cache.entries([cache_key(model, user_prompt="Your move.", system_prompt="You are Bob.")])
        == {}
    )


def test_cancel_while_waiting_for_the_first_chunk(server, model) -> None:
    """The server sends nothing for 30 s; the stop at 0.2 s ends the call long before (a call
    that heard the stop only with the first chunk would reach the 10 s deadline instead)."""
    server.script(Reply(text="late", delay=30.0))
    cancel = asyncio.Event()

    async def run() -> None:
        asyncio.get_running_loop().call_later(0.2, cancel.set)
        call = ask_streaming(model, user_prompt="u", system_prompt="s", cancel=cancel)
        with pytest.raises(ModelCallCancelled):
            await asyncio.wait_for(call, 10)

    asyncio.run(run())


def test_partials_never_show_a_copied_label(server, model) -> None:
    server.script(Reply(chunks=("Bob", ":", " I", " agree", ".")))
    reply, seen = stream(model, settings=CallSettings(speakers=("Bob",)))
    assert reply.text == "I agree."
    assert seen[-1] == "I agree." and not any(text.startswith("Bob:") for text in seen)


def test_an_empty_stream_is_an_empty_response(server, model, db: Database) -> None:
    server.script(Reply(chunks=("", "  ")))
    with pytest.raises(ModelCallError) as caught:
        stream(model, cache=StoredCache(db))
    assert caught.value.code == "empty_response"
    assert (
        StoredCache(db).entries(
            [cache_key(model, user_prompt="Your move.", system_prompt="You are Bob.")]
        )
        == {}
    )


def test_prompt_too_large_sends_nothing(server, model) -> None:
    with pytest.raises(ModelCallError) as caught:
        stream(
            model,
            settings=CallSettings(context_window=100, max_output_tokens=50),
            user_prompt="x " * 400,
        )
    assert caught.value.code == "prompt_too_large" and server.chat_requests == []


def test_the_call_holds_the_local_servers_slot(server, model) -> None:
    server.script(
        Reply(text="one two three", chunk_delay=0.1), Reply(text="four five six", chunk_delay=0.1)
    )

    async def both():
        return await asyncio.gather(
            ask_streaming(model, user_prompt="a", system_prompt=""),
            ask_streaming(model, user_prompt="b", system_prompt=""),
        )

    asyncio.run(both())
    assert server.max_in_flight == 1


def test_a_hosted_openai_model_streams_and_is_priced_as_ask_prices_it(
    server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test-not-a-key")
    known_prices(monkeypatch, {("openai", "gpt-4o-mini"): (1.0, 2.0)})
    hosted = resolve_model(
        {"service": "openai", "model": "gpt-4o-mini", "api_key_env": "FAKE_OPENAI_KEY"}
    )
    hosted.base_url = server.base_url  # EDSL's client reads it: the fake server plays OpenAI
    assert supports_streaming(hosted)
    server.script(Reply(text="streamed", prompt_tokens=1000, completion_tokens=500))
    server.script(Reply(text="asked", prompt_tokens=1000, completion_tokens=500))
    streamed, _ = stream(hosted)
    asked = asyncio.run(ask(hosted, user_prompt="other", system_prompt="You are Bob."))
    assert streamed.cost == asked.cost == pytest.approx(0.002)
    assert streamed.model_name == "openai/gpt-4o-mini"
    plain, sent = (request.body for request in server.chat_requests)
    assert (
        "max_tokens" not in sent and sent["max_completion_tokens"] == plain["max_completion_tokens"]
    )


def test_a_stream_cut_before_any_text_is_a_dropped_connection_not_an_empty_answer(
    server, model
) -> None:
    """Seen in CI: a request that reached llama.cpp's server as it came up got a 200 and a
    stream closed with nothing in it. That is the server dropping the connection (the engine
    waits for the server and asks again), not the model's empty reply (which fails a turn)."""
    from conversation.models.chat_stream import StreamCut
    from conversation.models.retries import is_server_unavailable

    server.script(Reply(cut=True))
    with pytest.raises(StreamCut) as cut:
        stream(model)
    assert is_server_unavailable(cut.value)
    server.script(Reply(text="Back again."))
    reply, _ = stream(model)
    assert reply.text == "Back again."
