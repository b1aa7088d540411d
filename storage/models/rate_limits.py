"""The cluster-wide rate limiter's buckets: one row per provider (or provider and model).

A bucket holds the requests and tokens that may still be sent; it refills continuously at the
configured rates (per minute) up to a burst capacity, and is read, refilled and charged in one
write transaction by whoever asks (``BEGIN IMMEDIATE`` on SQLite, the row locked with
``SELECT ... FOR UPDATE`` on PostgreSQL), so every worker process and the app share it exactly.
A 429 seen by any process pauses the bucket (:func:`pause_rate`) and every process waits.

The rates are the caller's (its settings), passed on every call: the row keeps the state, not the
policy. Writes are not made durable (a bucket lost with a power cut refills at once; it holds
nothing a person wrote).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from storage.database import Database
from storage.errors import StorageValueError
from storage.tables import RateBucket

BUCKETS = RateBucket.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    """Rates per minute (``None``: not limited on that axis) and the burst, in seconds of rate a
    full bucket holds (at least one request, and at least one request's tokens)."""

    rpm: float | None = None
    tpm: float | None = None
    burst_seconds: float = 1.0

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise StorageValueError(f"{name}={value!r} must be > 0 (or None: no limit)")
        if not self.burst_seconds > 0:
            raise StorageValueError(f"burst_seconds={self.burst_seconds!r} must be > 0")

    def request_capacity(self) -> float:
        return max(1.0, (self.rpm or 0.0) / 60.0 * self.burst_seconds)

    def token_capacity(self) -> float:
        return max(1.0, (self.tpm or 0.0) / 60.0 * self.burst_seconds)


@dataclass(frozen=True, slots=True)
class BucketState:
    """A bucket as stored (for display and tests)."""

    key: str
    rpm: float | None
    tpm: float | None
    requests: float
    tokens: float
    paused_until: datetime | None
    updated_at: datetime


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not key or len(key) > 300:
        raise StorageValueError(f"key={key!r} must be a non-empty string of at most 300 characters")


def _locked_row(conn: Connection, key: str, limit: RateLimit, now: datetime) -> Any:
    """The bucket's row, created full if missing, locked for this transaction."""
    values = {
        "key": key,
        "rpm": limit.rpm,
        "tpm": limit.tpm,
        "requests": limit.request_capacity(),
        "tokens": limit.token_capacity(),
        "paused_until": None,
        "updated_at": now,
    }
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    conn.execute(dialect.insert(BUCKETS).values(**values).on_conflict_do_nothing())
    query = select(BUCKETS).where(BUCKETS.c.key == key)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    return conn.execute(query).one()


def _refilled(row: Any, limit: RateLimit, now: datetime) -> tuple[float, float]:
    elapsed = max((now - row.updated_at).total_seconds(), 0.0)
    requests = min(limit.request_capacity(), row.requests + elapsed * (limit.rpm or 0) / 60.0)
    tokens = min(limit.token_capacity(), row.tokens + elapsed * (limit.tpm or 0) / 60.0)
    return (
        limit.request_capacity() if limit.rpm is None else requests,
        limit.token_capacity() if limit.tpm is None else tokens,
    )


def take_rate(
    db: Database, key: str, limit: RateLimit, *, requests: float = 1.0, tokens: float = 0.0
) -> float:
    """Take ``requests`` and ``tokens`` from bucket ``key`` if it holds them now: returns 0.0
    (taken), else the seconds to wait before asking again (nothing taken).

    A request larger than the burst capacity is let through once the bucket is full and leaves
    it in debt (the average rate still holds). A paused bucket answers the pause's remaining time.
    """
    _check_key(key)
    if requests < 0 or tokens < 0:
        raise StorageValueError("requests and tokens must be >= 0")
    now = db.now()
    with db.write_connection(durable=False) as conn:
        row = _locked_row(conn, key, limit, now)
        have_requests, have_tokens = _refilled(row, limit, now)
        if row.paused_until is not None and row.paused_until > now:
            return (row.paused_until - now).total_seconds()  # nothing refills while paused
        wait = 0.0
        need_requests = min(requests, limit.request_capacity())
        need_tokens = min(tokens, limit.token_capacity())
        if limit.rpm is not None and have_requests < need_requests:
            wait = (need_requests - have_requests) * 60.0 / limit.rpm
        if limit.tpm is not None and have_tokens < need_tokens:
            wait = max(wait, (need_tokens - have_tokens) * 60.0 / limit.tpm)
        if wait == 0.0:
            have_requests -= requests
            have_tokens -= tokens
        conn.execute(
            update(BUCKETS)
            .where(BUCKETS.c.key == key)
            .values(
                rpm=limit.rpm,
                tpm=limit.tpm,
                requests=have_requests,
                tokens=have_tokens,
                updated_at=now,
            )
        )
    return wait


def give_back_rate(
    db: Database, key: str, limit: RateLimit, *, requests: float = 0.0, tokens: float = 0.0
) -> None:
    """Correct a bucket after the fact: a positive amount returns what was taken and not used
    (a cached answer sent nothing; fewer tokens than estimated), a negative one charges more
    (the reply used more tokens than estimated). Never above the capacity."""
    _check_key(key)
    now = db.now()
    with db.write_connection(durable=False) as conn:
        row = _locked_row(conn, key, limit, now)
        have_requests, have_tokens = _refilled(row, limit, now)
        conn.execute(
            update(BUCKETS)
            .where(BUCKETS.c.key == key)
            .values(
                requests=min(limit.request_capacity(), have_requests + requests),
                tokens=min(limit.token_capacity(), have_tokens + tokens),
                updated_at=now,
            )
        )


def pause_rate(db: Database, key: str, limit: RateLimit, seconds: float) -> datetime:
    """The provider said "too many requests": no process takes from bucket ``key`` for
    ``seconds`` (a longer pause already set is kept), and the bucket restarts empty of requests
    (so the processes come back at the rate, not all at once). Returns the pause's end."""
    _check_key(key)
    if not seconds >= 0:
        raise StorageValueError(f"seconds={seconds!r} must be >= 0")
    now = db.now()
    until = now + timedelta(seconds=seconds)
    with db.write_connection(durable=False) as conn:
        row = _locked_row(conn, key, limit, now)
        _, have_tokens = _refilled(row, limit, now)
        if row.paused_until is not None and row.paused_until > until:
            until = row.paused_until
        conn.execute(
            update(BUCKETS)
            .where(BUCKETS.c.key == key)
            .values(
                requests=0.0 if limit.rpm is not None else limit.request_capacity(),
                tokens=have_tokens,
                paused_until=until,
                updated_at=until,  # nothing refills during the pause
            )
        )
    return until


def rate_buckets(db: Database) -> list[BucketState]:
    """Every bucket as stored, by key."""
    with db.read_connection() as conn:
        rows = conn.execute(select(BUCKETS).order_by(BUCKETS.c.key)).all()
    return [BucketState(**row._mapping) for row in rows]


__all__ = ["BucketState", "RateLimit", "give_back_rate", "pause_rate", "rate_buckets", "take_rate"]
