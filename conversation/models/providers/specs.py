"""Which model answers: provider keys, model specs, and turning a spec into an EDSL model.

A *spec* is what a room stores to rebuild its model binding: JSON, and never a secret.

- ``"offline"``: the ``OfflineModel``; ``{"service": "offline", "parameters": {"seed": 7}}``.
- a model name: ``"gpt-4o-mini"``, ``"claude-3-5-haiku-20241022"``; the service is taken from the
  name (EDSL's bundled model list, then well-known prefixes), never from a network lookup.
- ``"service/model"``: ``"ollama/llama3"``, ``"openai_compatible/qwen2.5"``, ``"openai/gpt-4o"``.
- a dict: ``{"service": "openai_compatible", "model": "llama3", "base_url": "http://...:8080/v1",
  "api_key_env": "MY_SERVER_KEY", "parameters": {"temperature": 0.2}}``. ``api_key_env`` names the
  environment variable holding the key; the key itself never enters a spec.
- any EDSL ``LanguageModel``: its spec is EDSL's own ``model.to_dict()`` (``inference_service``
  spelled ``service``, ``connection`` flattened into ``base_url``/``api_key_env``: the same keys as
  the dict form, so specs stored before read unchanged), and it is rebuilt with EDSL's
  ``LanguageModel.from_dict`` (OpenAI-family services through their no-retry subclass, see
  ``clients``). EDSL's test model (``Model("test", canned_response=...)``) is one of them. A model
  served from a URL keeps the URL it resolves to (``OPENAI_COMPATIBLE_BASE_URL`` when it names
  none), so another process rebuilds the same model without that variable.

``portability_problem(model)`` says why a model object cannot be rebuilt in another process (built
on a Python function, a scripted ``OfflineModel``, a class EDSL's registry does not know); rooms
refuse such a model unless they are created in-process only.

OpenAI-family models (OpenAI, OpenAI-compatible servers, Ollama, Groq, DeepSeek, xAI, ...) are built
on services whose clients do not retry on their own (see ``clients``). When a provider's key is
missing but ``EXPECTED_PARROT_API_KEY`` is set, the model is marked for Expected Parrot's remote
inference: EDSL 1.0.9 runs such a model only inside remote jobs (``analysis.analyze`` does), so
``ask()`` refuses it with a clear error instead of failing on a missing key.

Which model a new room gets (``default_model``), and why, is ``default_choice``'s question.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from edsl.inference_services.exceptions import InferenceServiceDependencyError
from edsl.inference_services.inference_service_registry import InferenceServiceRegistry
from edsl.inference_services.services.open_ai_service import OpenAIService
from edsl.language_models import LanguageModel

from conversation.exceptions import ConversationValueError
from conversation.models.offline.model import OFFLINE_MODEL_NAME, OfflineModel
from conversation.models.providers.clients import no_retry_service
from conversation.models.providers.families import family_of
from conversation.models.providers.labels import REMOTE_ATTRIBUTE, needs_remote_jobs
from conversation.models.providers.spec_schema import MODEL_NAME as _MODEL_NAME
from conversation.models.providers.spec_schema import SERVICES as _SERVICES
from conversation.models.providers.spec_schema import (
    ModelSpecIn,
    check_base_url,
    service_for,
    spec_place,
)
from conversation.text.schema import Problem, validated
from settings import env_name

EXPECTED_PARROT = "expected_parrot"
OFFLINE = OFFLINE_MODEL_NAME
MODEL_ENV = env_name("model")

# provider -> environment variables that EDSL reads for its key (first is the canonical name)
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GOOGLE_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "deep_infra": ("DEEP_INFRA_API_KEY",),
    "open_router": ("OPEN_ROUTER_API_KEY",),
    "perplexity": ("PERPLEXITY_API_KEY",),
    "openai_compatible": ("OPENAI_COMPATIBLE_BASE_URL",),  # a local server may need no key
    EXPECTED_PARROT: ("EXPECTED_PARROT_API_KEY",),
}
# the model default_model() picks for a provider, in order of preference
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-3-5-haiku-20241022",
    "google": "gemini-2.0-flash",
    "mistral": "mistral-small-latest",
    "groq": "llama-3.1-8b-instant",
    "deepseek": "deepseek-chat",
    "xai": "grok-3-mini",
}
REMOTE_DEFAULT = ("openai", "gpt-4o-mini")
TEST_SERVICE = "test"  # EDSL's own test model: canned replies, no key
# EDSL test-model settings that survive its to_dict (EDSL keeps them in ``parameters``)
_TEST_PARAMETERS = frozenset(
    {
        "canned_response",
        "fail_at_number",
        "never_ending",
        "throw_exception",
        "exception_probability",
    }
)


def available_providers(
    environ: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None
) -> list[str]:
    """Providers with a key (or, for ``openai_compatible``, an endpoint) configured.

    Looks in ``environ`` (default ``os.environ``) and then in ``secrets`` (e.g. ``st.secrets``).
    Returns names only, in ``PROVIDER_KEYS`` order, never a key value. EDSL itself reads keys
    from the environment only, so an app that keeps keys in secrets exports them at start-up.
    """
    return [provider for provider in PROVIDER_KEYS if _has_key(provider, environ, secrets)]


def resolve_model(
    spec: Any,
    *,
    environ: Mapping[str, str] | None = None,
    secrets: Mapping[str, Any] | None = None,
) -> LanguageModel:
    """An EDSL model for ``spec`` (see the module docstring); an EDSL model is returned as is.

    Raises ``ConversationValueError`` naming the value and the fix for an unknown or invalid spec.
    """
    if isinstance(spec, LanguageModel):
        return spec
    service, name, options = _normalise(spec)
    if service == OFFLINE:
        return _offline(options.get("parameters", {}))
    env = os.environ if environ is None else environ
    if (
        service == "openai_compatible"
        and "base_url" not in options
        and environ is not None
        and _lookup("OPENAI_COMPATIBLE_BASE_URL", env, None)
    ):  # the environment handed in, not the process's, says which server answers
        options = {**options, "base_url": _check_base_url(_default_base_url(service, env))}
    model = _build(service, name, options, env)
    remote = options.get("remote")
    if remote is None:
        remote = (
            not family_of(service).key_optional
            and service in PROVIDER_KEYS
            and not _has_key(service, env, secrets)
            and _has_key(EXPECTED_PARROT, env, secrets)
        )
    if remote:
        setattr(model, REMOTE_ATTRIBUTE, True)
    return model


def model_spec(model: Any) -> dict[str, Any]:
    """A JSON-serializable spec that ``resolve_model`` turns back into an equivalent model.

    Built from EDSL's own ``model.to_dict()``: the service, model name, parameters, and for
    servers the base URL and the *name* of the key's environment variable, never a key. An
    ``OfflineModel``'s script is not kept (see its serialization rule); whether a model survives
    the trip is ``portability_problem``'s question.
    """
    if isinstance(model, str | Mapping):
        model = resolve_model(model)
    if isinstance(model, OfflineModel):
        parameters = {k: v for k, v in model.parameters.items() if k != "scripted"}
        return {"service": OFFLINE, "model": OFFLINE, "parameters": parameters}
    if not isinstance(model, LanguageModel):
        raise ConversationValueError(
            f"model must be an EDSL language model or a spec, got {type(model).__name__}"
        )
    spec = spec_from_edsl(model.to_dict(add_edsl_version=False))
    if family_of(spec["service"]).at_a_url and "base_url" not in spec:
        # EDSL would read the URL from the environment at call time; store what it is now, so
        # every process (the worker, a restarted app) asks the same server.
        spec["base_url"] = _check_base_url(_default_base_url(spec["service"]))
    if needs_remote_jobs(model):
        spec["remote"] = True
    return spec


def spec_from_edsl(data: Mapping[str, Any]) -> dict[str, Any]:
    """A spec from EDSL's ``LanguageModel.to_dict()`` output (version fields ignored)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("model"), str):
        raise ConversationValueError(
            f"an EDSL model dict needs a 'model' name, got {data!r}; use model.to_dict()"
        )
    service = data.get("inference_service") or service_for(data["model"])
    spec: dict[str, Any] = {
        "service": service,
        "model": data["model"],
        "parameters": dict(data.get("parameters") or {}),
    }
    connection = data.get("connection") or {}
    for option in ("base_url", "api_key_env"):
        value = connection.get(option, data.get(option))
        if value:
            spec[option] = _check_base_url(value) if option == "base_url" else value
    if data.get("prompt_plan") is not None:
        spec["prompt_plan"] = data["prompt_plan"]
    return spec


def edsl_dict(spec: Any) -> dict[str, Any]:
    """The EDSL ``LanguageModel.to_dict()`` form of a spec (what ``LanguageModel.from_dict``
    reads); never a key, only the name of its environment variable."""
    service, name, options = _normalise(spec)
    if service == OFFLINE:
        return OfflineModel(**options.get("parameters", {})).to_dict(add_edsl_version=False)
    data: dict[str, Any] = {
        "model": name,
        "parameters": dict(options.get("parameters", {})),
        "inference_service": service,
    }
    connection = {k: options[k] for k in ("base_url", "api_key_env") if k in options}
    if connection:
        data["connection"] = connection
    if "prompt_plan" in options:
        data["prompt_plan"] = options["prompt_plan"]
    return data


def portability_problem(model: Any) -> str | None:
    """Why ``model`` cannot be rebuilt from its spec in another process, or None when it can.

    Not rebuildable: a scripted ``OfflineModel`` (queued replies, a reply function, failures),
    a model carrying a Python function (EDSL's ``Model("test", func=...)``), a model class defined
    outside EDSL and this project, or one whose ``to_dict`` does not come back the same through
    ``LanguageModel.from_dict``.
    """
    if isinstance(model, str | Mapping):
        return None
    if isinstance(model, OfflineModel):
        if model.parameters.get("scripted"):
            return (
                "a scripted OfflineModel (queued replies, a reply function or failures) keeps "
                "its script in this process only"
            )
        return None
    if not isinstance(model, LanguageModel):
        return f"{type(model).__name__} is not an EDSL language model"
    functions = sorted(
        name
        for name, value in vars(model).items()
        if callable(value)
        and not isinstance(value, type)
        and not name.startswith("_")
        and name not in ("key_lookup",)
    )
    if functions:
        return f"it is built on a Python function ({', '.join(functions)}), which EDSL cannot store"
    module = type(model).__module__ or ""
    if not module.startswith(("edsl.", "conversation.")):
        return f"its class {type(model).__qualname__} ({module}) is not one EDSL can rebuild"
    try:
        spec = model_spec(model)
        rebuilt = resolve_model(spec)
    except ConversationValueError as exc:
        return f"it cannot be rebuilt from its spec ({exc})"
    if (
        model_spec(rebuilt) != spec
        or type(rebuilt).__name__ == "TestServiceLanguageModel"
        and (getattr(model, "_inference_service_", None) != TEST_SERVICE)
    ):
        return "EDSL's to_dict/from_dict does not give the same model back"
    return None


def _normalise(spec: Any) -> tuple[str, str, dict[str, Any]]:
    """``(service, model name, options)`` of a spec: a name is read here, a dict by its schema
    (``spec_schema.ModelSpecIn``)."""
    if isinstance(spec, str):
        text = spec.strip()
        if not text or not _MODEL_NAME.match(text):
            raise ConversationValueError(
                f"model {spec!r} is not a model name; use e.g. 'gpt-4o-mini', "
                "'ollama/llama3' or 'offline'"
            )
        if text == OFFLINE:
            return OFFLINE, OFFLINE, {}
        head, _, tail = text.partition("/")
        if tail and (head in _SERVICES or head == OFFLINE):
            return _normalise({"service": head, "model": tail})
        return service_for(text), text, {}
    if not isinstance(spec, Mapping):
        raise ConversationValueError(
            f"model spec must be a name or a dict, got {type(spec).__name__}; "
            "use e.g. 'gpt-4o-mini' or {'service': 'openai_compatible', 'model': 'llama3', "
            "'base_url': 'http://127.0.0.1:8080/v1'}"
        )
    return validated(ModelSpecIn, spec, place=spec_place).normalised()


def _offline(parameters: Mapping[str, Any]) -> OfflineModel:
    allowed = set(OfflineModel._parameters_) - {"scripted"}
    unknown = sorted(set(parameters) - allowed)
    if unknown:
        raise ConversationValueError(
            f"offline model has no setting(s) {unknown}; known: {sorted(allowed)}"
        )
    return OfflineModel(**parameters)


def _check_base_url(value: Any) -> str:
    try:
        return check_base_url(value)
    except Problem as exc:
        raise ConversationValueError(f"base_url {exc}") from None


def _build(service: str, name: str, options: dict[str, Any], env: Mapping[str, str]) -> Any:
    if service == TEST_SERVICE:
        return _edsl_test_model(name, options)
    registry = InferenceServiceRegistry()
    try:
        service_class = registry.get_service_class(service)
    except InferenceServiceDependencyError as exc:
        raise ConversationValueError(
            f"model {name!r} needs the {service} SDK, which is not installed; "
            f"install it (e.g. `pip install {_sdk(service)}`) or choose another model"
        ) from exc
    if isinstance(service_class, type) and issubclass(service_class, OpenAIService):
        service_class = no_retry_service(service_class)
    model_class = service_class().create_model(name)
    parameters = options.get("parameters", {})
    known = set(getattr(model_class, "_parameters_", {}) or {})
    unknown = sorted(set(parameters) - known)
    if unknown:
        raise ConversationValueError(
            f"model {service}/{name} has no parameter(s) {unknown}; known: {sorted(known)}"
        )
    kwargs: dict[str, Any] = dict(parameters)
    if "prompt_plan" in options:
        from edsl.invigilators.prompt_helpers import PromptPlan

        kwargs["prompt_plan"] = PromptPlan.from_dict(dict(options["prompt_plan"]))
    for option in ("base_url", "api_key_env"):
        if option in options:
            kwargs[option] = options[option]
    if family_of(service).key_optional and not _key_for_server(service, options, env):
        kwargs["skip_api_key_check"] = True  # a local server needs no key; EDSL sends "local"
    return model_class(**kwargs)


def _edsl_test_model(name: str, options: Mapping[str, Any]) -> LanguageModel:
    """EDSL's test model, rebuilt the EDSL way (``LanguageModel.from_dict``)."""
    parameters = dict(options.get("parameters", {}))
    unknown = sorted(set(parameters) - {"temperature"} - _TEST_PARAMETERS)
    if unknown:
        raise ConversationValueError(
            f"model test/{name} has no parameter(s) {unknown}; known: "
            f"{sorted({'temperature'} | _TEST_PARAMETERS)}"
        )
    if name != TEST_SERVICE:
        raise ConversationValueError(
            f"EDSL's test service serves the model 'test' only, got {name!r}; use "
            "{'service': 'test', 'model': 'test', 'parameters': {'canned_response': '...'}}"
        )
    data: dict[str, Any] = {"model": name, "parameters": parameters, "inference_service": "test"}
    if "prompt_plan" in options:
        data["prompt_plan"] = dict(options["prompt_plan"])
    return LanguageModel.from_dict(data)


def _default_base_url(service: str, env: Mapping[str, str] | None = None) -> str:
    """The URL EDSL would call for a server service that names none (``env``, default
    ``os.environ``, then EDSL's default)."""
    if service == "openai_compatible":
        from edsl.inference_services.services.openai_compatible_service import (
            OpenAICompatibleService,
        )

        env = os.environ if env is None else env
        return env.get("OPENAI_COMPATIBLE_BASE_URL") or str(OpenAICompatibleService._base_url_)
    from edsl.inference_services.services.ollama_service import OllamaService

    return str(OllamaService._base_url_)  # EDSL reads no environment variable for it


def _key_for_server(service: str, options: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    if "api_key_env" in options:
        return bool(env.get(options["api_key_env"]))
    variable = "OPENAI_COMPATIBLE_API_KEY" if service == "openai_compatible" else "OLLAMA_API_KEY"
    return bool(env.get(variable))


def _sdk(service: str) -> str:
    return {"anthropic": "anthropic", "google": "google-genai", "mistral": "mistralai"}.get(
        service, f"edsl[{service}]"
    )


def _lookup(name: str, environ: Mapping[str, str], secrets: Mapping[str, Any] | None) -> str:
    value = environ.get(name)
    if not value and secrets is not None:
        try:
            value = secrets.get(name)
        except Exception:  # a secrets object without the file raises on access
            value = None
    return value.strip() if isinstance(value, str) else ""


def _has_key(
    provider: str, environ: Mapping[str, str] | None, secrets: Mapping[str, Any] | None
) -> bool:
    env = os.environ if environ is None else environ
    return any(_lookup(variable, env, secrets) for variable in PROVIDER_KEYS.get(provider, ()))


__all__ = [
    "PROVIDER_KEYS",
    "DEFAULT_MODELS",
    "EXPECTED_PARROT",
    "MODEL_ENV",
    "available_providers",
    "resolve_model",
    "model_spec",
    "portability_problem",
    "spec_from_edsl",
    "edsl_dict",
    "service_for",
]
