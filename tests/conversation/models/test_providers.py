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


# --- which model answers, and why (issue 24: the set-up tells the truth) -----------------------


def test_a_server_url_alone_uses_the_model_the_server_serves():
    from conversation.models.default_choice import choose_default
    from conversation.models.server_window import forget_reported_windows
    from tests.support.openai_server import OpenAICompatibleServer

    forget_reported_windows()
    with OpenAICompatibleServer(model_ids=("smollm2",)) as server:
        env = {"OPENAI_COMPATIBLE_BASE_URL": server.base_url}
        choice = choose_default(env)
        assert model_label(choice.model) == "openai_compatible/smollm2"
        assert model_spec(choice.model)["base_url"] == server.base_url
        assert "OPENAI_COMPATIBLE_BASE_URL is set" in choice.reason and choice.missing is None
        assert model_label(default_model(env)) == "openai_compatible/smollm2"
        models_asked = [r for r in server.requests if r.path == "/v1/models"]
        assert len(models_asked) == 1  # asked once per process, remembered
    forget_reported_windows()


def test_a_server_url_with_no_server_says_which_line_to_add():
    from conversation.models.default_choice import choose_default
    from conversation.models.server_window import forget_reported_windows

    forget_reported_windows()
    choice = choose_default({"OPENAI_COMPATIBLE_BASE_URL": "http://127.0.0.1:9/v1"})
    assert isinstance(choice.model, OfflineModel)
    assert "OPENAI_COMPATIBLE_MODEL=" in choice.missing
    assert "http://127.0.0.1:9/v1" in choice.missing
    forget_reported_windows()


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({}, "Nothing chooses a model"),
        ({"ROOMS_MODEL": "offline", "OPENAI_API_KEY": SECRET}, "ROOMS_MODEL=offline"),
        ({"OPENAI_API_KEY": SECRET}, "OPENAI_API_KEY is set"),
        (
            {"OPENAI_COMPATIBLE_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_COMPATIBLE_MODEL": "q"},
            "OPENAI_COMPATIBLE_BASE_URL and OPENAI_COMPATIBLE_MODEL are set",
        ),
        ({"EXPECTED_PARROT_API_KEY": SECRET}, "EXPECTED_PARROT_API_KEY is set"),
    ],
)
def test_the_default_choice_names_the_setting_that_chose_it(env, reason):
    from conversation.models.default_choice import choose_default

    choice = choose_default(env)
    assert reason in choice.reason
    assert SECRET not in choice.reason + (choice.missing or "")


def test_a_key_that_chooses_no_model_says_the_line_to_add():
    from conversation.models.default_choice import choose_default

    choice = choose_default({"TOGETHER_API_KEY": SECRET})
    assert isinstance(choice.model, OfflineModel)
    assert "ROOMS_MODEL=together/" in choice.missing


def test_the_server_url_comes_from_the_environment_handed_in():
    """``_default_base_url`` read ``os.environ``, not ``default_model(environ=...)``'s."""
    env = {"OPENAI_COMPATIBLE_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_COMPATIBLE_MODEL": "q"}
    assert model_spec(default_model(env))["base_url"] == "http://127.0.0.1:9/v1"
