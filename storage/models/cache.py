"""The persistent model cache: stored model answers, found by their cache key.

Storage knows nothing of EDSL: an entry is a key (EDSL's hash of the model, its parameters, both
prompts and the iteration), the model's name and service, and the entry itself as a JSON object
(EDSL's ``CacheEntry.to_dict()``; ``conversation.models.stored_cache`` builds and reads them).

Guarantees:
- an entry is written once: storing a key that is already there changes nothing (insert-or-ignore,
  on SQLite and PostgreSQL alike), so any number of processes may store the same answer at once;
- reads use the read engine and never wait for a writer; they load only the keys asked for.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite

from storage.checks import check_json
from storage.database import Database
from storage.database.statements import by_dialect, in_list
from storage.errors import StorageValueError
from storage.tables import CachedResponse

CACHE = CachedResponse.__table__  # type: ignore[attr-defined]
#: Entries per executemany when writing many (a read sends every key as one list parameter).
_CHUNK = 500

_READ = by_dialect(
    lambda server: select(CACHE.c.key, CACHE.c.entry).where(
        in_list(CACHE.c.key, "keys", server=server)
    )
)


def _insert_ignoring_duplicates(dialect: str) -> Any:
    module = sqlite if dialect == "sqlite" else postgresql
    return (
        module.insert(CACHE)
        .values(
            key=bindparam("key"),
            model=bindparam("model"),
            service=bindparam("service"),
            entry=bindparam("entry"),
            created_at=bindparam("created_at"),
        )
        .on_conflict_do_nothing(index_elements=["key"])
    )


_INSERTS = {name: _insert_ignoring_duplicates(name) for name in ("sqlite", "postgresql")}


def cached_responses(db: Database, keys: Collection[str]) -> dict[str, dict[str, Any]]:
    """The stored entries of ``keys`` that exist, by key (one indexed read)."""
    wanted = sorted({k for k in keys if isinstance(k, str)})
    if not wanted:
        return {}
    with db.read_connection() as conn:
        return {key: entry for key, entry in conn.execute(_READ(conn), {"keys": wanted})}


def store_cached_responses(db: Database, entries: Mapping[str, Mapping[str, Any]]) -> None:
    """Store new entries (``key -> entry``; each entry a JSON object with ``model`` and
    optionally ``service``) in one write transaction; a key already stored is left as it is.

    The commit does not wait for the disk (``Database.write_connection(durable=False)``): the
    entries survive this process dying at once, not necessarily a power cut."""
    rows = []
    now = db.now()
    for key, entry in entries.items():
        if not isinstance(key, str) or not key or len(key) > 64:
            raise StorageValueError(f"a cache key must be 1-64 characters of text, got {key!r}")
        if not isinstance(entry, Mapping) or not isinstance(entry.get("model"), str):
            raise StorageValueError(
                f"cache entry {key!r} must be a JSON object naming its 'model', got {entry!r}"
            )
        value = dict(entry)
        check_json(value, f"cache entry {key!r}")
        service = value.get("service")
        rows.append(
            {
                "key": key,
                "model": value["model"],
                "service": service if isinstance(service, str) else None,
                "entry": value,
                "created_at": now,
            }
        )
    if not rows:
        return
    # Not durable: an entry lost with a power cut is asked of the model again, and the turns it
    # served are durable on their own; a process killed after this returns keeps it.
    with db.write_connection(durable=False) as conn:
        insert = _INSERTS.get(conn.dialect.name, _INSERTS["postgresql"])
        for start in range(0, len(rows), _CHUNK):
            conn.execute(insert, rows[start : start + _CHUNK])


def cache_size(db: Database) -> int:
    """How many answers the model cache holds."""
    with db.read_connection() as conn:
        return _count(conn)


def clear_model_cache(db: Database) -> int:
    """Delete every stored answer (the next calls ask the models again); returns how many."""
    with db.write_connection() as conn:
        return int(conn.execute(delete(CACHE)).rowcount or 0)


def _count(conn: Any) -> int:
    return int(conn.execute(select(func.count()).select_from(CACHE)).scalar_one())


__all__ = ["cache_size", "cached_responses", "clear_model_cache", "store_cached_responses"]
