"""What model calls share across processes through the database: the persistent model cache,
the cluster-wide rate limiter's buckets, and which rooms wait for their model server.
"""

from __future__ import annotations

from storage.models.cache import (
    cache_size,
    cached_responses,
    clear_model_cache,
    store_cached_responses,
)
from storage.models.outages import SERVER_UNAVAILABLE_CODE, waiting_for_server
from storage.models.rate_limits import (
    BucketState,
    RateLimit,
    give_back_rate,
    pause_rate,
    rate_buckets,
    take_rate,
)

__all__ = [
    # the model cache
    "cache_size",
    "cached_responses",
    "clear_model_cache",
    "store_cached_responses",
    # outages of model servers
    "SERVER_UNAVAILABLE_CODE",
    "waiting_for_server",
    # the cluster-wide rate limiter
    "BucketState",
    "RateLimit",
    "give_back_rate",
    "pause_rate",
    "rate_buckets",
    "take_rate",
]
