"""Which model a new room gets, and why: the rule of ``default_model()`` with its reasons.

The first that applies (docs/models.md, "Which model answers"):

1. ``ROOMS_MODEL``, a model spec;
2. the first hosted provider with a key (``DEFAULT_MODELS`` order), with its default model;
3. an OpenAI-compatible server at ``OPENAI_COMPATIBLE_BASE_URL``: the model named by
   ``OPENAI_COMPATIBLE_MODEL``, else the one the server lists (``GET {base}/models``, asked once
   per process, 1.5 s at most); a server that names none leaves ``missing`` saying the line to add;
4. ``EXPECTED_PARROT_API_KEY``: ``gpt-4o-mini`` through Expected Parrot's remote inference;
5. the offline model.

``DefaultChoice.reason`` says which setting chose the model; ``missing`` says what is configured
but cannot answer, with the setting to add. Both are plain text a page shows as is; neither ever
holds a key's value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edsl.language_models import LanguageModel

from conversation.models.offline.model import OfflineModel
from conversation.models.providers import specs
from conversation.models.server_window import served_models

BASE_URL_ENV = "OPENAI_COMPATIBLE_BASE_URL"
SERVER_MODEL_ENV = "OPENAI_COMPATIBLE_MODEL"


@dataclass(frozen=True, slots=True)
class DefaultChoice:
    """The default model, the setting that chose it, and what is configured but missing."""

    model: LanguageModel
    reason: str
    missing: str | None = None
    provider: str | None = None  # the provider whose setting chose it (None: ROOMS_MODEL, offline)


def default_model(
    environ: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None
) -> LanguageModel:
    """The model a new room gets (``choose_default(...).model``)."""
    return choose_default(environ, secrets).model


def choose_default(
    environ: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None
) -> DefaultChoice:
    """The model a new room gets, with the reason (see the module docstring)."""
    env = os.environ if environ is None else environ
    chosen = specs._lookup(specs.MODEL_ENV, env, secrets)
    if chosen:
        model = specs.resolve_model(chosen, environ=env, secrets=secrets)
        return DefaultChoice(model, f"{specs.MODEL_ENV}={chosen} chooses it.")
    for provider, name in specs.DEFAULT_MODELS.items():
        if specs._has_key(provider, env, secrets):
            model = specs.resolve_model(
                {"service": provider, "model": name}, environ=env, secrets=secrets
            )
            variable = specs.PROVIDER_KEYS[provider][0]
            return DefaultChoice(
                model, f"{variable} is set, so {provider}'s default model answers.", None, provider
            )
    server, missing = _server_choice(env, secrets)
    if server is not None:
        return server
    if specs._has_key(specs.EXPECTED_PARROT, env, secrets):
        service, name = specs.REMOTE_DEFAULT
        model = specs.resolve_model(
            {"service": service, "model": name}, environ=env, secrets=secrets
        )
        return DefaultChoice(
            model,
            "EXPECTED_PARROT_API_KEY is set, so gpt-4o-mini answers through Expected Parrot's "
            "remote inference.",
            missing,
            specs.EXPECTED_PARROT,
        )
    return DefaultChoice(OfflineModel(), _offline_reason(missing), missing or _unused(env, secrets))


def _server_choice(
    env: Mapping[str, str], secrets: Mapping[str, Any] | None
) -> tuple[DefaultChoice | None, str | None]:
    """The configured OpenAI-compatible server's model, or None with what is missing."""
    base_url = specs._lookup(BASE_URL_ENV, env, secrets)
    if not base_url:
        return None, None
    name = specs._lookup(SERVER_MODEL_ENV, env, secrets)
    why = f"{BASE_URL_ENV} and {SERVER_MODEL_ENV} are set."
    if not name:
        listed = served_models(base_url)
        if not listed:
            return None, (
                f"{BASE_URL_ENV} is set, but the server at {base_url} did not say which model it "
                f"serves (no answer to GET {base_url.rstrip('/')}/models): start the server, or "
                f"add the line {SERVER_MODEL_ENV}=<the model's name on the server> "
                f"(e.g. {SERVER_MODEL_ENV}=smollm2) and restart."
            )
        name = listed[0]
        why = f"{BASE_URL_ENV} is set and the server there serves {name}"
        if len(listed) > 1:
            why += f" (the first of {len(listed)} it lists; {SERVER_MODEL_ENV}=... picks another)"
        why += f"; {SERVER_MODEL_ENV} is not set."
    spec = {"service": "openai_compatible", "model": name, "base_url": base_url}
    model = specs.resolve_model(spec, environ=env, secrets=secrets)
    return DefaultChoice(model, why, None, "openai_compatible"), None


def _offline_reason(missing: str | None) -> str:
    if missing:
        return "The offline stand-in answers: the configured server cannot be used yet."
    return (
        "Nothing chooses a model, so the offline stand-in answers. To use an LLM set, in the "
        "environment or .streamlit/secrets.toml, a provider key (e.g. OPENAI_API_KEY), or "
        f"{BASE_URL_ENV} for your own server (llama.cpp, vLLM), or {specs.MODEL_ENV}."
    )


def _unused(env: Mapping[str, str], secrets: Mapping[str, Any] | None) -> str | None:
    """Keys that are set but choose no model by themselves (Together, OpenRouter, ...)."""
    idle = [
        provider
        for provider in specs.PROVIDER_KEYS
        if provider not in specs.DEFAULT_MODELS
        and provider not in ("openai_compatible", specs.EXPECTED_PARROT)
        and specs._has_key(provider, env, secrets)
    ]
    if not idle:
        return None
    first = idle[0]
    return (
        f"{specs.PROVIDER_KEYS[first][0]} is set, but it does not choose a model by itself: "
        f"add the line {specs.MODEL_ENV}={first}/<model name>."
    )


__all__ = [
    "BASE_URL_ENV",
    "SERVER_MODEL_ENV",
    "DefaultChoice",
    "choose_default",
    "default_model",
]
