"""A model spec dict is checked by one declarative schema (``ModelSpecIn``): each refusal names
``model spec <field>`` and the fix; what passes is ``(service, model, options)``."""

from __future__ import annotations

from typing import Any

import pytest

from conversation.exceptions import ConversationValueError
from conversation.models.providers.spec_schema import ModelSpecIn, spec_place
from conversation.text.schema import validated


def normalised(spec: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    return validated(ModelSpecIn, spec, place=spec_place).normalised()


def test_a_name_alone_names_its_service_and_options_hold_what_was_given() -> None:
    assert normalised({"model": "gpt-4o-mini"}) == ("openai", "gpt-4o-mini", {"parameters": {}})
    assert normalised({"model": "offline", "parameters": {"seed": 3}}) == (
        "offline",
        "offline",
        {"parameters": {"seed": 3}},
    )
    service, name, options = normalised(
        {
            "service": "openai_compatible",
            "model": "llama3",
            "base_url": "http://127.0.0.1:8080/v1/",
            "api_key_env": "MY_KEY",
            "remote": False,
        }
    )
    assert (service, name) == ("openai_compatible", "llama3")
    assert options == {
        "parameters": {},
        "base_url": "http://127.0.0.1:8080/v1",
        "api_key_env": "MY_KEY",
        "remote": False,
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"model": "x", "service": "test", "zz": 1}, "model spec has unknown key(s) ['zz']"),
        ({"service": "openai", "model": "gpt-4o", "remote": 1}, "model spec remote must be true"),
        ({"service": "openai", "model": "gpt-4o", "parameters": []}, "model spec parameters must"),
        ({"service": "openai", "model": "gpt-4o", "prompt_plan": 3}, "model spec prompt_plan"),
        ({"service": "ollama", "model": "l", "api_key_env": "sk-1"}, "model spec api_key_env"),
        ({"service": "ollama", "model": "l", "base_url": "http://h/v1?k=1"}, "model spec base_url"),
        ({"service": "nope", "model": "x"}, "model spec service 'nope' is not known"),
    ],
)
def test_a_bad_field_is_named_with_its_fix(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ConversationValueError) as caught:
        normalised(spec)
    assert str(caught.value).startswith(message)
