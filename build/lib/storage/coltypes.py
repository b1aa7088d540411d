"""Column types shared by the table models and the migrations.

Migrations import from here (not from ``tables``) because these types are stable: a migration must
keep describing the schema of its own revision even after the models move on.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC (the only timezone stored)."""
    return datetime.now(UTC)


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """A timestamp stored in UTC and always returned timezone-aware (UTC).

    SQLite has no timezone-aware type: SQLAlchemy stores an ISO string without an offset, so values
    are normalised to UTC before storing (naive input is refused: it is ambiguous) and tagged UTC on
    the way out. Because every stored value is UTC in the same format, SQL comparisons such as
    ``expires_at < :now`` are correct on SQLite (string order) and PostgreSQL (``timestamptz``).
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware value (UTC)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def JSONDoc() -> sa.JSON:  # noqa: N802 - reads like a type in column definitions
    """A JSON column where Python ``None`` is SQL NULL (not the JSON text ``null``)."""
    return sa.JSON(none_as_null=True)


__all__ = ["JSONDoc", "UTCDateTime", "utcnow"]
