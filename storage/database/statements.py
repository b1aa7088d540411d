"""Statements every repository module builds the same way (private to storage).

A list parameter is ONE parameter whatever its length (:func:`in_list`), so a statement's text
never changes with the size of a batch and is compiled (and, on PostgreSQL, prepared) once;
:func:`by_dialect` builds such a statement for both kinds of database. :func:`add_row` and
:func:`get_row` are the ORM's insert and read by primary key.
"""

from __future__ import annotations

import json
import operator
from typing import Any, NamedTuple

from sqlalchemy import ARRAY, String, TypeDecorator, any_, bindparam, func, select
from sqlalchemy.engine import Connection


class ByDialect(NamedTuple):
    """One statement built twice: for SQLite and for server databases (see :func:`in_list`)."""

    sqlite: Any
    server: Any

    def __call__(self, conn: Connection) -> Any:
        return self.sqlite if conn.dialect.name == "sqlite" else self.server


def in_list(column: Any, name: str, *, server: bool) -> Any:
    """``column IN (:name...)`` for a list parameter ``name``.

    Either way the list is ONE parameter and the statement's text never changes with its length.
    Server databases: ``column = ANY(:name)`` with an array; with an ``IN`` list of 200 ids
    psycopg parses a new text each time and the server plans it again (measured: about half of a
    worker's statement time on PostgreSQL). SQLite: ``column IN (SELECT value FROM
    json_each(:name))`` with the list as JSON (SQLite still searches the column's index per
    value); an expanding ``IN`` made SQLAlchemy re-render the statement on every execution
    (0.05 ms each: a sixth of a single-room turn's write in ``benchmarks/room_run.py``).
    Values are ints or strings.
    """
    if server:
        return column == any_(bindparam(name, type_=ARRAY(column.type)))
    values = func.json_each(bindparam(name, type_=_JsonList())).table_valued("value")
    return column.in_(select(values.c.value))


class _JsonList(TypeDecorator[Any]):
    """A list of ints or strings bound as one JSON array text (for SQLite's ``json_each``);
    integer-like values (a numpy id from a frame) become plain ints."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> str:
        return json.dumps([v if isinstance(v, str) else operator.index(v) for v in value])


def by_dialect(build: Any) -> ByDialect:
    """``build(server)`` for both kinds of database (``server`` is passed to :func:`in_list`)."""
    return ByDialect(build(False), build(True))


def add_row(session: Any, row: Any) -> int:
    """Insert a new table row in ``session`` and return its id (assigned by the database)."""
    session.add(row)
    session.flush()
    assert row.id is not None
    return int(row.id)


def get_row(db: Any, model: Any, key: int, missing: type[Exception], what: str) -> Any:
    """The committed row of ``model`` with primary key ``key``; ``missing(f"{what} ... does not
    exist")`` when there is none."""
    with db.read() as session:
        row = session.get(model, key)
    if row is None:
        raise missing(f"{what} {key} does not exist")
    return row
