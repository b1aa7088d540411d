"""The model cache's table: entries by key, written once, read only by the keys asked for."""

from __future__ import annotations

import threading

import pytest

import storage
from storage import Database, StorageValueError


def entry(model: str, output: str) -> dict[str, object]:
    return {"model": model, "service": "test", "output": output, "parameters": {"t": 0.5}}


def test_entries_are_read_back_by_key_and_only_those(db: Database) -> None:
    storage.store_cached_responses(db, {"k1": entry("m", "one"), "k2": entry("m", "two")})
    assert storage.cached_responses(db, ["k1", "missing"]) == {"k1": entry("m", "one")}
    assert storage.cached_responses(db, []) == {}
    assert storage.models.cache_size(db) == 2


def test_a_key_is_written_once_and_a_second_writer_changes_nothing(db: Database) -> None:
    storage.store_cached_responses(db, {"k": entry("m", "first")})
    storage.store_cached_responses(db, {"k": entry("m", "second"), "k3": entry("m", "three")})
    found = storage.cached_responses(db, ["k", "k3"])
    assert found["k"]["output"] == "first" and found["k3"]["output"] == "three"


def test_concurrent_writers_of_the_same_keys_never_fail(db_url: str) -> None:
    databases = [Database(db_url) for _ in range(4)]
    errors: list[BaseException] = []

    def write(index: int) -> None:
        try:
            for batch in range(10):
                keys = {f"key-{batch}-{n}": entry("m", f"writer {index}") for n in range(5)}
                storage.store_cached_responses(databases[index], keys)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        assert storage.models.cache_size(databases[0]) == 50
        outputs = {
            e["output"] for e in storage.cached_responses(databases[0], ["key-0-0"]).values()
        }
        assert len(outputs) == 1
    finally:
        for database in databases:
            database.dispose()


def test_bad_entries_are_refused_and_clearing_empties_the_cache(db: Database) -> None:
    with pytest.raises(StorageValueError, match="cache key"):
        storage.store_cached_responses(db, {"": entry("m", "x")})
    with pytest.raises(StorageValueError, match="model"):
        storage.store_cached_responses(db, {"k": {"output": "no model"}})
    storage.store_cached_responses(db, {"k": entry("m", "x")})
    assert storage.clear_model_cache(db) == 1
    assert storage.models.cache_size(db) == 0
