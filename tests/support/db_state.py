"""What a refused input must leave unchanged: every table of the database, as counts and a hash.

``snapshot(db)`` reads every table the schema defines (``SQLModel.metadata``, so a table added by
a later migration is covered too), ordered by its primary key, through the database's own read
engine: the same on SQLite and PostgreSQL. Two snapshots are equal exactly when no row was
added, removed or changed anywhere.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import sqlalchemy as sa
from sqlmodel import SQLModel

import storage.tables  # noqa: F401 - registers every table on SQLModel.metadata
from storage import Database


@dataclass(frozen=True)
class Snapshot:
    counts: dict[str, int]
    digest: str


def snapshot(db: Database) -> Snapshot:
    """Row counts per table and one SHA-256 over every row of every table."""
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    with db.read_engine.connect() as conn:
        for table in sorted(SQLModel.metadata.tables.values(), key=lambda t: t.name):
            order = list(table.primary_key.columns) or list(table.columns)
            rows = conn.execute(sa.select(table).order_by(*order)).all()
            counts[table.name] = len(rows)
            digest.update(table.name.encode())
            for row in rows:
                digest.update(repr(tuple(row)).encode())
    return Snapshot(counts=counts, digest=digest.hexdigest())


__all__ = ["Snapshot", "snapshot"]
