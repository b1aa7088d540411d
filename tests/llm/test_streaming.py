"""Streaming from a real (weak) model: SmolLM2-135M-Instruct on llama.cpp's server.

A streamed turn arrives in pieces, is stored in the model cache under ``ask``'s key, and a re-run
(unstreamed or streamed) is served from the cache: identical and instant. llama.cpp's server sends
no usage in a stream, so the counts are the project's estimates (never below the server's own).
A stopped stream closes its request and the server answers the next call. What the model says is
not judged. Measures (first chunk, chunks per reply) are printed (``-s``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conversation.models import StoredCache, ask, resolve_model
from conversation.models.settings import CallSettings
from conversation.models.streaming import ModelCallCancelled, ask_streaming, supports_streaming
from storage import Database

pytestmark = pytest.mark.llm

SETTINGS = CallSettings(max_output_tokens=48, timeout=120)
SYSTEM = "You are Ann, a friendly shopper. Answer in one or two sentences."
USER = "Bob says: I can sell you this coffee mug for $8. What do you answer?"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'cache.db'}")
    yield database
    database.dispose()


async def timed_stream(model, **kwargs) -> tuple[object, list[tuple[float, str]]]:
    """The reply, and each text seen with its time since the call started."""
    seen: list[tuple[float, str]] = []
    started = time.perf_counter()
    reply = await ask_streaming(
        model,
        on_text=lambda text: seen.append((time.perf_counter() - started, text)),
        **kwargs,
    )
    return reply, seen


def test_a_streamed_turn_is_cached_and_rerun_identically(smollm2, llm_server, db) -> None:
    model = resolve_model(smollm2)
    assert supports_streaming(model)
    prompts = {"user_prompt": USER, "system_prompt": SYSTEM, "settings": SETTINGS}

    async def run():
        first = await timed_stream(model, cache=StoredCache(db), **prompts)
        asked = await ask(model, cache=StoredCache(db), **prompts)
        again = await timed_stream(model, cache=StoredCache(db), **prompts)
        return first, asked, again

    (reply, seen), asked, (rerun, rerun_seen) = asyncio.run(run())
    lengths = [len(text) for _, text in seen]
    print(
        f"\nSTREAMED first_chunk_s={seen[0][0]:.3f} chunks={len(seen)} total_s={reply.latency:.3f}"
        f" output_tokens~{reply.output_tokens} text={reply.text!r}"
    )
    assert len(set(lengths)) >= 3 and lengths == sorted(lengths)
    assert reply.text and not reply.cache_used
    assert reply.raw["usage"] is None and reply.usage_estimated  # llama.cpp sends no usage
    assert reply.output_tokens >= llm_server.tokenize(reply.raw["choices"][0]["message"]["content"])
    assert reply.cost is None
    assert StoredCache(db).entries([reply.cache_key])  # ask finds it below
    # the re-runs: served from the cache, identical, at once, free
    assert asked.cache_key == reply.cache_key
    assert (asked.text, asked.cache_used, asked.cost) == (reply.text, True, 0.0)
    assert (rerun.text, rerun.cache_used, rerun.output_tokens) == (reply.text, True, 0)
    assert [text for _, text in rerun_seen] == [reply.text]
    print(f"RERUN ask_s={asked.latency:.4f} streamed_s={rerun_seen[0][0]:.4f}")
    assert asked.latency < 0.5 and rerun_seen[0][0] < 0.5


def test_a_stopped_stream_frees_the_server(smollm2) -> None:
    model = resolve_model(smollm2)
    long = CallSettings(max_output_tokens=400, timeout=120)

    async def run() -> tuple[int, float, float]:
        cancel = asyncio.Event()
        seen: list[str] = []

        def on_text(text: str) -> None:
            seen.append(text)
            if len(seen) == 3:
                cancel.set()

        started = time.perf_counter()
        with pytest.raises(ModelCallCancelled):
            await ask_streaming(
                model,
                user_prompt="Write a long story about a coffee mug, in many paragraphs.",
                system_prompt=SYSTEM,
                settings=long,
                on_text=on_text,
                cancel=cancel,
            )
        stopped = time.perf_counter() - started
        count = len(seen)
        await asyncio.sleep(0.3)
        assert len(seen) == count  # nothing read after the stop
        started = time.perf_counter()
        after = await ask(
            model, user_prompt="Say hello.", system_prompt="", settings=CallSettings(8, 60)
        )
        assert after.text
        return count, stopped, time.perf_counter() - started

    count, stopped, next_call = asyncio.run(run())
    print(
        f"\nSTOPPED after {count} chunks in {stopped:.3f}s; next call answered in {next_call:.3f}s"
    )
