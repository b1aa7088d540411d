"""What a model is called, and what it is, in words a person reads (the UI says which is offline)."""

from __future__ import annotations

from typing import Any

from conversation.models.offline.model import OFFLINE_MODEL_NAME, OfflineModel

# Set by ``specs.resolve_model`` on a model whose provider key is missing while an Expected
# Parrot key is present: EDSL 1.0.9 can reach such a model only through remote jobs.
REMOTE_ATTRIBUTE = "_rooms_remote_inference"

_SERVICE_NAMES = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "google": "Google",
    "mistral": "Mistral",
    "groq": "Groq",
    "deepseek": "DeepSeek",
    "xai": "xAI",
    "together": "Together",
    "deep_infra": "DeepInfra",
    "open_router": "OpenRouter",
    "perplexity": "Perplexity",
    "ollama": "Ollama",
    "openai_compatible": "OpenAI-compatible server",
    "bedrock": "AWS Bedrock",
    "azure": "Azure",
}


def model_label(model: Any) -> str:
    """A short ``service/model`` label (``openai/gpt-4o``); ``offline`` for the offline model."""
    if isinstance(model, OfflineModel):
        return OFFLINE_MODEL_NAME
    service = getattr(model, "_inference_service_", None) or "unknown"
    return f"{service}/{getattr(model, 'model', None) or 'unknown'}"


def needs_remote_jobs(model: Any) -> bool:
    """True when the model can only be reached through Expected Parrot's remote jobs."""
    return bool(getattr(model, REMOTE_ATTRIBUTE, False))


def describe_model(model: Any) -> str:
    """A label that says plainly what answers: an LLM (which, where) or a stand-in."""
    if isinstance(model, OfflineModel):
        return model.describe()
    service = getattr(model, "_inference_service_", None)
    name = getattr(model, "model", None) or "unknown model"
    if service == "test":
        return "EDSL test model (canned replies, not an LLM)"
    where = _SERVICE_NAMES.get(service or "", service or "unknown service")
    if needs_remote_jobs(model):
        return f"{name} ({where}) via Expected Parrot remote inference"
    base_url = getattr(model, "base_url", None)
    if base_url:
        return f"{name} ({where} at {base_url})"
    return f"{name} ({where})"


__all__ = ["REMOTE_ATTRIBUTE", "model_label", "needs_remote_jobs", "describe_model"]
