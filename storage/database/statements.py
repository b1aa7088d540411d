"""Statements every repository module builds the same way (private to storage).

A list parameter is ONE parameter whatever its length (:func:`in_list`), so a statement's text
never changes with the size of a batch and is compiled (and, on PostgreSQL, prepared) once;
:func:`by_dialect` builds such a statement for both kinds of database. :class:`DriverStatement`
is a hot write statement whose rows are bound here, each value once. :func:`add_row` and
:func:`get_row` are the ORM's insert and read by primary key.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import ARRAY, JSON, String, TypeDecorator, any_, bindparam, func, select
from sqlalchemy.engine import Connection, Dialect

from storage.checks import json_text


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


class Bound(NamedTuple):
    """Rows bound for one dialect: the statement's text and one parameter set per row."""

    sql: str
    rows: list[Any]


class DriverStatement:
    """A write statement that a worker runs for every turn, with its rows bound here and given
    to the driver as they are (``Connection.exec_driver_sql``; statement events still fire).

    Each value goes through its column type's own bind processor for the dialect (the very
    conversion SQLAlchemy makes), with three differences that are the point: a JSON value is
    encoded once, strictly (:func:`~storage.checks.json_text`: the check and the text written
    are one encoding, which raises :class:`~storage.errors.StorageValueError` naming the
    column); a value repeated across a batch (its time) is converted once; and nothing else is
    done per row. SQLAlchemy's ``execute`` with a list of dicts builds every row's parameters
    in Python, a processor call per column, and sends a SQLite insert with ``RETURNING`` one
    row at a time: most of a worker's write time per turn, measured.

    The text is compiled once per dialect and set of columns (the keys of the rows, all alike).
    """

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self._compiled: dict[tuple[str, tuple[str, ...]], _Compiled] = {}

    def bind(self, dialect: Dialect, rows: Sequence[Mapping[str, Any]]) -> Bound:
        """``rows`` (dicts with the same keys: column values, and the statement's own bind
        parameters) bound for ``dialect``."""
        if not rows:
            return Bound("", [])
        keys = tuple(rows[0])
        compiled = self._compiled.get((dialect.name, keys))
        if compiled is None:
            compiled = self._compiled[(dialect.name, keys)] = _Compiled.of(
                self.statement, dialect, keys
            )
        return Bound(compiled.sql, compiled.bind(rows))

    def execute(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Bind ``rows`` and run the statement once for all of them (``executemany``)."""
        execute_bound(conn, self.bind(conn.dialect, rows))


def execute_bound(conn: Connection, bound: Bound) -> None:
    """Execute rows bound by :meth:`DriverStatement.bind` (nothing when there are none)."""
    if bound.rows:
        conn.exec_driver_sql(bound.sql, bound.rows)


class _Compiled(NamedTuple):
    """A statement's text for one dialect and set of columns, and how each value is bound."""

    sql: str
    names: tuple[str, ...]
    #: Per name: None (given as it is), or how the value is converted (None stays None).
    converters: tuple[Callable[[Any], Any] | None, ...]
    positional: bool

    @classmethod
    def of(cls, statement: Any, dialect: Dialect, keys: tuple[str, ...]) -> _Compiled:
        compiled = statement.compile(dialect=dialect, column_keys=list(keys))
        positional = compiled.positiontup is not None
        names = tuple(compiled.positiontup if positional else compiled.binds)
        converters = []
        for name in names:
            kind = compiled.binds[name].type
            if isinstance(kind, JSON):
                converters.append(_json_converter(name))
            else:
                converters.append(kind.dialect_impl(dialect).bind_processor(dialect))
        return cls(str(compiled), names, tuple(converters), positional)

    def bind(self, rows: Iterable[Mapping[str, Any]]) -> list[Any]:
        names, converters = self.names, self.converters
        converting = [(i, c) for i, c in enumerate(converters) if c is not None]
        # A batch's rows share their time (one object): each converter keeps its last result.
        last: list[tuple[Any, Any]] = [(None, None)] * len(converters)
        bound: list[Any] = []
        for row in rows:
            values = [row[name] for name in names]
            for i, convert in converting:
                value = values[i]
                if value is None:
                    continue
                seen, result = last[i]
                if value is not seen:
                    result = convert(value)
                    last[i] = (value, result)
                values[i] = result
            bound.append(
                tuple(values) if self.positional else dict(zip(names, values, strict=True))
            )
        return bound


def _json_converter(field: str) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        return json_text(value, field)

    return convert


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
