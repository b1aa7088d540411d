"""``StoredCache``: EDSL's cache kept in the database, loaded by key and written back once."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from edsl import Model

import storage
from conversation.exceptions import ModelCallError
from conversation.models import OfflineModel, StoredCache, ask, ask_sync, cache_key
from storage import Database


@pytest.fixture
def db_url_file(tmp_path: Any) -> str:
    return f"sqlite:///{tmp_path / 'cache.db'}"


@pytest.fixture
def db(db_url_file: str) -> Iterator[Database]:
    database = Database(db_url_file)
    yield database
    database.dispose()


def sampled() -> OfflineModel:
    """A model that answers every call differently (like an LLM sampled at temperature > 0)."""
    draws = itertools.count(1)
    return OfflineModel(func=lambda user, system: f"draw {next(draws)}")


def test_an_answer_stored_by_one_process_is_reused_by_another(db_url_file: str) -> None:
    model = sampled()
    first_db, second_db = Database(db_url_file), Database(db_url_file)  # two processes' views
    try:
        first = ask_sync(model, user_prompt="q", system_prompt="s", cache=StoredCache(first_db))
        again = ask_sync(model, user_prompt="q", system_prompt="s", cache=StoredCache(second_db))
    finally:
        first_db.dispose()
        second_db.dispose()
    assert (first.text, first.cache_used) == ("draw 1", False)
    assert first.input_tokens and first.output_tokens
    assert (again.text, again.cache_used) == ("draw 1", True)
    assert (again.input_tokens, again.output_tokens, again.cost) == (0, 0, 0.0)
    assert model.calls == 1


def test_the_key_is_edsls_own_and_other_prompts_or_iterations_ask_again(db: Database) -> None:
    model = sampled()
    cache = StoredCache(db)
    one = ask_sync(model, user_prompt="q", system_prompt="s", cache=cache)
    assert one.cache_key == cache_key(model, user_prompt="q", system_prompt="s")
    other = ask_sync(model, user_prompt="q", system_prompt="s", cache=cache, iteration=7)
    changed = ask_sync(model, user_prompt="q2", system_prompt="s", cache=cache)
    assert [one.text, other.text, changed.text] == ["draw 1", "draw 2", "draw 3"]
    assert storage.models.cache_size(db) == 3
    stored = cache.entries([one.cache_key])[one.cache_key]
    assert (stored.user_prompt, stored.system_prompt, stored.iteration) == ("q", "s", 0)


def test_edsls_test_model_is_cached_without_its_canned_response_in_the_key(db: Database) -> None:
    cache = StoredCache(db)
    first = ask_sync(
        Model("test", canned_response="Fine."), user_prompt="q", system_prompt="s", cache=cache
    )
    second = ask_sync(
        Model("test", canned_response="Other."), user_prompt="q", system_prompt="s", cache=cache
    )
    assert first.cache_key == second.cache_key
    assert (second.text, second.cache_used) == ("Fine.", True)  # EDSL's own rule for its test model


def test_an_empty_answer_is_never_stored(db: Database) -> None:
    model = OfflineModel(replies=["", "now an answer"])
    cache = StoredCache(db)
    with pytest.raises(ModelCallError, match="no text"):
        ask_sync(model, user_prompt="q", system_prompt="s", cache=cache)
    assert storage.models.cache_size(db) == 0
    assert ask_sync(model, user_prompt="q", system_prompt="s", cache=cache).text == "now an answer"


def test_calls_at_the_same_time_share_one_read_and_one_write(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[int] = []
    writes: list[int] = []
    read, write = storage.cached_responses, storage.store_cached_responses
    monkeypatch.setattr(
        storage, "cached_responses", lambda d, k: reads.append(len(k)) or read(d, k)
    )
    monkeypatch.setattr(
        storage, "store_cached_responses", lambda d, e: writes.append(len(e)) or write(d, e)
    )
    model = sampled()
    cache = StoredCache(db)

    async def many() -> list[str]:
        replies = await asyncio.gather(
            *(ask(model, user_prompt=f"q{i}", system_prompt="s", cache=cache) for i in range(20))
        )
        return [r.text for r in replies]

    texts = asyncio.run(many())
    assert len(set(texts)) == 20
    assert reads == [20] and writes == [20]
    assert asyncio.run(many()) == texts  # all 20 from the cache, in one read, nothing written
    assert reads == [20, 20] and writes == [20]


def test_a_database_that_cannot_be_used_never_fails_the_call(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*args: Any) -> Any:
        raise storage.DatabaseUnavailable("database is locked")

    monkeypatch.setattr(storage, "cached_responses", unavailable)
    monkeypatch.setattr(storage, "store_cached_responses", unavailable)
    reply = ask_sync(sampled(), user_prompt="q", system_prompt="s", cache=StoredCache(db))
    assert (reply.text, reply.cache_used) == ("draw 1", False)
