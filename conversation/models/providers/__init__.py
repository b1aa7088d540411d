"""Which provider answers, and what a provider is: specs, keys, clients and labels.

- ``specs``: a model spec (JSON, never a secret) and the EDSL model it resolves to
  (``resolve_model``, ``model_spec``, ``portability_problem``), the providers' keys;
- ``spec_schema``: the shape of a spec given as a dict, checked at the door;
- ``clients``: OpenAI-family EDSL services whose clients never retry on their own;
- ``labels``: what a model is called, in words a person reads.
"""

from conversation.models.providers.labels import describe_model, model_label, needs_remote_jobs
from conversation.models.providers.specs import (
    DEFAULT_MODELS,
    EXPECTED_PARROT,
    MODEL_ENV,
    PROVIDER_KEYS,
    available_providers,
    edsl_dict,
    model_spec,
    portability_problem,
    resolve_model,
    service_for,
    spec_from_edsl,
)

__all__ = [
    "DEFAULT_MODELS",
    "EXPECTED_PARROT",
    "MODEL_ENV",
    "PROVIDER_KEYS",
    "available_providers",
    "describe_model",
    "edsl_dict",
    "model_label",
    "model_spec",
    "needs_remote_jobs",
    "portability_problem",
    "resolve_model",
    "service_for",
    "spec_from_edsl",
]
