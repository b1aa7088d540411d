"""Providers: keys (never their values), specs that rebuild models, clear errors, no-retry clients."""

from __future__ import annotations

import asyncio
import importlib.util
import json

import pytest
from edsl import LanguageModel, Model

from conversation.exceptions import ConversationValueError
from conversation.models import (
    OfflineModel,
    available_providers,
    default_model,
    describe_model,
    model_label,
    model_spec,
    needs_remote_jobs,
    resolve_model,
    service_for,
)

SECRET = "sk-test-secret-value-123"


def test_no_keys_means_no_providers_and_the_offline_default():
    assert available_providers({}) == []
    model = default_model({})
    assert isinstance(model, OfflineModel)
    assert "not an LLM" in describe_model(model)


def test_the_real_environment_is_hermetic():
    assert available_providers() == []
    assert isinstance(default_model(), OfflineModel)


def test_available_providers_reads_env_and_secrets_and_returns_names_only():
    env = {"OPENAI_API_KEY": SECRET, "EXPECTED_PARROT_API_KEY": SECRET, "UNRELATED": "x"}
    secrets = {"ANTHROPIC_API_KEY": SECRET}
    found = available_providers(env, secrets)
    assert found == ["openai", "anthropic", "expected_parrot"]
    assert SECRET not in json.dumps(found)
    assert available_providers({"OPENAI_API_KEY": "  "}) == []  # blank is not a key


def test_default_model_prefers_a_provider_key():
    model = default_model({"OPENAI_API_KEY": SECRET})
    assert model_label(model) == "openai/gpt-4o-mini"
    assert not needs_remote_jobs(model)


def test_default_model_with_only_an_expected_parrot_key_is_remote_and_labelled():
    model = default_model({"EXPECTED_PARROT_API_KEY": SECRET})
    assert model_label(model) == "openai/gpt-4o-mini"
    assert needs_remote_jobs(model)
    assert "Expected Parrot remote inference" in describe_model(model)
    assert model_spec(model)["remote"] is True


def test_rooms_model_overrides_the_default():
    model = default_model({"ROOMS_MODEL": "offline", "OPENAI_API_KEY": SECRET})
    assert isinstance(model, OfflineModel)


def test_default_model_uses_a_configured_compatible_server():
    env = {"OPENAI_COMPATIBLE_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_COMPATIBLE_MODEL": "qwen"}
    model = default_model(env)
    assert model_label(model) == "openai_compatible/qwen"


@pytest.mark.parametrize(
    ("name", "service"),
    [
        ("gpt-4o-mini", "openai"),
        ("gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("claude-3-5-haiku-20241022", "anthropic"),
        ("claude-9-future", "anthropic"),
        ("gemini-2.0-flash", "google"),
        ("mistral-small-latest", "mistral"),
        ("deepseek-chat", "deepseek"),
        ("grok-3-mini", "xai"),
    ],
)
def test_service_for_a_bare_name_is_decided_offline(name, service):
    assert service_for(name) == service


@pytest.mark.parametrize(
    ("spec", "label"),
    [
        ("gpt-4o-mini", "openai/gpt-4o-mini"),
        ("openai/gpt-4o", "openai/gpt-4o"),
        ("ollama/llama3", "ollama/llama3"),
        ("openai_compatible/qwen2.5:7b", "openai_compatible/qwen2.5:7b"),
        (
            {
                "service": "openai_compatible",
                "model": "tiny",
                "base_url": "http://127.0.0.1:8080/v1",
            },
            "openai_compatible/tiny",
        ),
        ({"model": "gpt-4o-mini", "parameters": {"temperature": 0.1}}, "openai/gpt-4o-mini"),
        ("offline", "offline"),
        ({"service": "offline", "parameters": {"seed": 4}}, "offline"),
    ],
)
def test_resolve_model(spec, label):
    model = resolve_model(spec)
    assert isinstance(model, LanguageModel)
    assert model_label(model) == label


def test_resolve_model_passes_a_model_through():
    model = OfflineModel(seed=9)
    assert resolve_model(model) is model


def test_claude_resolves_or_names_the_missing_sdk():
    if importlib.util.find_spec("anthropic"):
        assert (
            model_label(resolve_model("claude-3-5-haiku-20241022"))
            == "anthropic/claude-3-5-haiku-20241022"
        )
    else:
        with pytest.raises(ConversationValueError, match="pip install anthropic"):
            resolve_model("claude-3-5-haiku-20241022")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("frobnicate-9", "'frobnicate-9'.*service/model"),
        ("", "not a model name"),
        ("gpt 4o", "not a model name"),
        (42, "name or a dict"),
        ({"service": "nope", "model": "x"}, "service 'nope' is not known"),
        (
            {"service": "openai", "model": "gpt-4o", "colour": "red"},
            r"unknown key\(s\) \['colour'\]",
        ),
        ({"service": "openai", "model": "gpt-4o", "parameters": {"temprature": 1}}, "temprature"),
        ({"service": "openai", "model": "gpt-4o", "base_url": "http://127.0.0.1/v1"}, "base_url"),
        ({"service": "openai_compatible", "model": "x", "base_url": "ftp://host"}, "not an http"),
        (
            {"service": "openai_compatible", "model": "x", "base_url": "http://u:p@host/v1"},
            "credentials",
        ),
        ({"service": "openai_compatible", "model": "x", "api_key_env": SECRET}, "api_key_env"),
        ({"service": "offline", "parameters": {"sed": 1}}, "sed"),
        ({"service": "offline", "model": "gpt-4o"}, "does not fit service 'offline'"),
        ({"service": "openai", "model": None}, "model must be a model name"),
    ],
)
def test_bad_specs_name_the_value_and_the_fix(spec, expected):
    with pytest.raises(ConversationValueError, match=expected):
        resolve_model(spec)


def test_model_spec_is_json_without_secrets_and_rebuilds_the_model(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_SERVER_KEY", SECRET)
    models = [
        resolve_model("gpt-4o-mini"),
        resolve_model({"service": "openai", "model": "gpt-4o", "parameters": {"temperature": 0.1}}),
        resolve_model(
            {
                "service": "openai_compatible",
                "model": "tiny",
                "base_url": "http://127.0.0.1:8080/v1",
                "api_key_env": "MY_SERVER_KEY",
            }
        ),
        OfflineModel(seed=11, deal_phrase="DEAL", deal_after=6),
    ]
    for model in models:
        spec = model_spec(model)
        text = json.dumps(spec)
        assert SECRET not in text
        rebuilt = resolve_model(json.loads(text))
        assert rebuilt == model and model_label(rebuilt) == model_label(model)
        assert isinstance(rebuilt, OfflineModel) == isinstance(model, OfflineModel)
        assert getattr(rebuilt, "base_url", None) == getattr(model, "base_url", None)
        if getattr(model, "base_url", None):  # its key is read live from api_key_env
            assert rebuilt.sync_client().max_retries == 0
    assert model_spec(models[2])["api_key_env"] == "MY_SERVER_KEY"
    assert model_spec(models[3])["parameters"]["seed"] == 11


def test_a_scripted_offline_model_spec_keeps_settings_only():
    spec = model_spec(OfflineModel(seed=2, replies=["x"], func=lambda u, s: "y"))
    assert spec == {"service": "offline", "model": "offline", "parameters": {**spec["parameters"]}}
    assert "scripted" not in spec["parameters"] and spec["parameters"]["seed"] == 2


def _client_retries(model):
    async def inside():
        return model.async_client().max_retries

    return asyncio.run(inside())


def test_openai_family_clients_never_retry_on_their_own():
    base = "http://127.0.0.1:8080/v1"
    ours = resolve_model({"service": "openai_compatible", "model": "tiny", "base_url": base})
    assert _client_retries(ours) == 0
    assert ours.sync_client().max_retries == 0
    plain = Model("tiny", service_name="openai_compatible", base_url=base, skip_api_key_check=True)
    assert _client_retries(plain) == 2  # negative control: EDSL's own client retries by itself


def test_async_clients_are_kept_per_event_loop():
    model = resolve_model(
        {"service": "openai_compatible", "model": "tiny", "base_url": "http://127.0.0.1:8/v1"}
    )

    async def twice():
        return model.async_client(), model.async_client()

    first, again = asyncio.run(twice())
    other, _ = asyncio.run(twice())
    assert first is again
    assert other is not first
