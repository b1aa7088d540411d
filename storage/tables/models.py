"""The tables model calls share across processes: the persistent model cache and the
cluster-wide rate limiter's buckets.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from storage.coltypes import JSONDoc, UTCDateTime, utcnow


class CachedResponse(SQLModel, table=True):
    """One model answer of the persistent model cache (EDSL's ``CacheEntry``, as its
    ``to_dict()``), found by EDSL's cache key: a hash of the model, its parameters, both prompts
    and the iteration. Written once (a second writer of the same key changes nothing), shared by
    every process using the database. Revision 0003."""

    __tablename__ = "model_cache"

    key: str = Field(primary_key=True, max_length=64)
    model: str
    service: str | None = None
    entry: dict[str, Any] = Field(default_factory=dict, sa_type=JSONDoc())
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


# -- Scale (issue 23, revision 0013): the cluster-wide rate limiter --------------------------------


class RateBucket(SQLModel, table=True):
    """One token bucket of the cluster-wide model rate limiter (revision 0013): the requests and
    tokens a provider (or one of its models) may still take, refilled at the configured rates by
    whoever touches it next. Shared by every worker and the app; a 429 sets ``paused_until`` so
    every process waits, not just the one that saw it."""

    __tablename__ = "rate_buckets"

    key: str = Field(primary_key=True, max_length=300)
    # The rates last configured (per minute), for display; the caller's setting is what counts.
    rpm: float | None = None
    tpm: float | None = None
    requests: float = 0.0
    tokens: float = 0.0
    paused_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


__all__ = ["CachedResponse", "RateBucket"]
