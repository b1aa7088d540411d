"""The one place that talks to EDSL's models (see docs/architecture.md, "Models").

- ``ask`` / ``ask_sync``: one model call, two literal prompt strings in, a ``ModelReply`` out.
- ``ask_streaming``: the same call with the reply handed over as it grows (``supports_streaming``
  says which models stream; the others answer in one piece); ``ModelCallCancelled`` when stopped.
- ``OfflineModel``: a real EDSL model that needs no key, for demos and tests.
- ``resolve_model`` / ``model_spec`` / ``default_model`` / ``available_providers``: which model
  answers, stored as a JSON spec without secrets; ``choose_default`` says why.
- ``describe_model`` / ``model_label``: what a person (or a log line) is told about a model.
- ``StoredCache``: EDSL's model cache persisted in the rooms database (shared by processes).
"""

from conversation.models.calls import ModelReply, ask, ask_sync
from conversation.models.default_choice import DefaultChoice, choose_default, default_model
from conversation.models.offline.model import OFFLINE_MODEL_NAME, OfflineModel, is_offline
from conversation.models.providers.labels import describe_model, model_label, needs_remote_jobs
from conversation.models.providers.specs import (
    DEFAULT_MODELS,
    PROVIDER_KEYS,
    available_providers,
    model_spec,
    portability_problem,
    resolve_model,
    service_for,
)
from conversation.models.stored_cache import StoredCache, cache_key
from conversation.models.streaming import ModelCallCancelled, ask_streaming, supports_streaming

__all__ = [
    "ModelReply",
    "StoredCache",
    "cache_key",
    "ask",
    "ask_sync",
    "ask_streaming",
    "supports_streaming",
    "ModelCallCancelled",
    "OfflineModel",
    "OFFLINE_MODEL_NAME",
    "is_offline",
    "describe_model",
    "model_label",
    "needs_remote_jobs",
    "resolve_model",
    "model_spec",
    "portability_problem",
    "default_model",
    "choose_default",
    "DefaultChoice",
    "available_providers",
    "service_for",
    "PROVIDER_KEYS",
    "DEFAULT_MODELS",
]
