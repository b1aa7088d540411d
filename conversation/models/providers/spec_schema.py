"""The shape of a model spec given as a dict, declared once (see ``specs`` for what a spec
is): ``{"service", "model", "base_url", "api_key_env", "parameters", "prompt_plan", "remote"}``
plus the process-local marks ``instance`` and ``in_process``.

``ModelSpecIn`` checks each field where it is declared (a base URL without credentials, the
*name* of a key's environment variable, never a key) and the fields together (the service
known, or taken from the model's name; ``offline`` with no other model; a base URL only for a
server). ``specs`` receives ``(service, model name, options)`` from :meth:`normalised`; a
refusal is a ``ConversationValueError`` naming ``model spec <field>`` and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from edsl.enums import InferenceServiceType
from edsl.inference_services.inference_service_registry import InferenceServiceRegistry
from pydantic import AfterValidator, model_validator

from conversation.exceptions import ConversationValueError
from conversation.models.offline.model import OFFLINE_MODEL_NAME as OFFLINE
from conversation.models.providers.families import services_where
from conversation.text.schema import DoorModel, Loc, Problem

SERVICES = tuple(s.value for s in InferenceServiceType)
#: Services reached at a URL of the user's choosing.
URL_SERVICES = services_where("at_a_url")
MODEL_NAME = re.compile(r"^[\w.:/@+\-]{1,200}$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,100}$")
_PREFIXES = (
    (("gpt-", "o1", "o3", "o4", "chatgpt-"), "openai"),
    (("claude-",), "anthropic"),
    (("gemini-",), "google"),
    (("mistral-", "open-mistral", "codestral", "ministral", "pixtral", "devstral"), "mistral"),
    (("grok-",), "xai"),
    (("deepseek-",), "deepseek"),
)


def service_for(name: str) -> str:
    """The EDSL service that serves a bare model ``name``, decided offline (EDSL's bundled model
    list, then well-known prefixes), never by a network lookup."""
    from edsl.inference_services.default_models import data as bundled

    hosts = [service for service, names in bundled.items() if name in names]
    if hosts:
        preferences = InferenceServiceRegistry._default_service_preferences
        return min(hosts, key=lambda s: preferences.index(s) if s in preferences else 99)
    for prefixes, service in _PREFIXES:
        if name.startswith(prefixes):
            return service
    raise ConversationValueError(
        f"cannot tell which provider serves model {name!r}; write it as 'service/model' "
        f"(e.g. 'ollama/{name}' or 'openai_compatible/{name}' with a base_url), "
        f"or use 'offline'. Services: {', '.join(SERVICES)}"
    )


def check_base_url(value: Any) -> str:
    """An http(s) URL without credentials, query or fragment (the trailing ``/`` dropped)."""
    if not isinstance(value, str):
        raise Problem(f"must be a URL string, got {value!r}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Problem(f"{value!r} is not an http(s) URL; e.g. 'http://127.0.0.1:11434/v1'")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise Problem(
            "must not carry credentials, a query or a fragment; put the key in an "
            "environment variable and name it with api_key_env"
        )
    return value.rstrip("/")


def _optional(check: Callable[[Any], Any]) -> AfterValidator:
    return AfterValidator(lambda value: None if value is None else check(value))


def _env_name(value: Any) -> str:
    if not isinstance(value, str) or not _ENV_NAME.match(value):
        raise Problem(
            f"must name an environment variable (like 'MY_SERVER_KEY'), got {value!r}; never "
            "put the key itself in a spec"
        )
    return value


def _object(example: str) -> Callable[[Any], dict[str, Any]]:
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise Problem(f"must be {example}, got {value!r}")
        return dict(value)

    return check


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Problem(f"must be true or false, got {value!r}")
    return value


class ModelSpecIn(DoorModel):
    """A model spec as a dict, checked (see the module docstring)."""

    unknown_noun: ClassVar[str] = "key"

    service: Any = None
    model: Any = None
    base_url: Annotated[Any, _optional(check_base_url)] = None
    api_key_env: Annotated[Any, _optional(_env_name)] = None
    parameters: Annotated[Any, AfterValidator(_object("a dict; e.g. {'temperature': 0.2}"))] = {}
    prompt_plan: Annotated[Any, _optional(_object("EDSL's PromptPlan.to_dict()"))] = None
    remote: Annotated[Any, _optional(_flag)] = None
    #: Marks of a model held by the process that created the room; resolving ignores them.
    instance: Any = None
    in_process: Any = None

    @model_validator(mode="after")
    def _fits_together(self) -> ModelSpecIn:
        service = self.service
        if service is None and isinstance(self.model, str):
            service = OFFLINE if self.model == OFFLINE else service_for(self.model)
            object.__setattr__(self, "service", service)
        if service != OFFLINE and service not in SERVICES:
            raise Problem(
                f"service {service!r} is not known; use one of: offline, {', '.join(SERVICES)}"
            )
        if service == OFFLINE and self.model not in (None, OFFLINE):
            raise Problem(
                f"model {self.model!r} does not fit service 'offline'; omit it or use 'offline'"
            )
        if service != OFFLINE and (
            not isinstance(self.model, str) or not MODEL_NAME.match(self.model)
        ):
            raise Problem(f"model must be a model name, got {self.model!r}; e.g. 'gpt-4o-mini'")
        if self.base_url is not None and service not in URL_SERVICES:
            raise Problem(
                f"base_url is for {sorted(URL_SERVICES)} services, not {service!r}; remove it "
                "or use service 'openai_compatible'"
            )
        return self

    def normalised(self) -> tuple[str, str, dict[str, Any]]:
        """``(service, model name, options)``: options hold ``parameters`` always, and each of
        ``base_url``, ``api_key_env``, ``prompt_plan``, ``remote`` when given."""
        options: dict[str, Any] = {"parameters": self.parameters}
        if self.service == OFFLINE:
            return OFFLINE, OFFLINE, options
        for name in ("base_url", "api_key_env", "prompt_plan", "remote"):
            if getattr(self, name) is not None:
                options[name] = getattr(self, name)
        return self.service, self.model, options


def spec_place(loc: Loc) -> str:
    """``("base_url",)`` -> ``model spec base_url``."""
    return " ".join(["model spec", *map(str, loc)])


__all__ = [
    "MODEL_NAME",
    "OFFLINE",
    "SERVICES",
    "URL_SERVICES",
    "ModelSpecIn",
    "check_base_url",
    "service_for",
    "spec_place",
]
