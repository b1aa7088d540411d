"""The door's shared parts: the message rule (one copy) and pydantic's errors translated into
the project's typed errors, naming the field and the fix."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, TypeAdapter

from conversation.exceptions import ConversationValueError, ImportRejected
from conversation.text.limits import check_message, message_problem
from conversation.text.schema import DoorModel, Problem, validated


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("", "non-empty text"),
        ("   ", "non-empty text"),
        (b"hi", "non-empty text"),
        ("x" * 21, "limited to 20 characters (got 21"),
        ("a\x00b", "NUL"),
    ],
)
def test_the_message_rule_names_the_problem(value: Any, words: str) -> None:
    with pytest.raises(ConversationValueError, match="^a message ") as caught:
        check_message(value, limit=20)
    assert words in str(caught.value)


def test_the_message_rule_accepts_a_message_and_empty_text_where_allowed() -> None:
    assert check_message("hello") == "hello"
    assert message_problem("", empty=True) is None
    assert message_problem("a\x00", empty=True) is not None


def _even(value: int) -> int:
    if value % 2:
        raise Problem("must be even; add one")
    return value


class Inner(DoorModel):
    count: Annotated[int, AfterValidator(_even)] = 0
    label: str = ""


class Outer(DoorModel):
    items: list[Inner]
    flag: bool = False


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"items": [], "zzz": 1},
            "the input has unknown field(s) ['zzz']; allowed: ['flag', 'items']",
        ),
        ({"items": [{"count": 3}]}, "items[0].count must be even; add one"),
        ({"items": [{"label": 5}]}, "items[0].label must be text, got 5"),
        ({"items": [{"count": True}]}, "items[0].count must be a whole number, got True"),
        ({"items": "x" * 100}, "items must be a list, got 'xxx"),
        ({"flag": 1, "items": []}, "flag must be true or false, got 1"),
        ({}, "items is required"),
    ],
)
def test_pydantic_errors_become_typed_errors_naming_the_field(
    data: dict[str, Any], message: str
) -> None:
    with pytest.raises(ImportRejected) as caught:
        validated(Outer, data, error=ImportRejected)
    assert str(caught.value).startswith(message)


def test_a_nested_typed_error_keeps_its_message_after_the_field() -> None:
    def refuse(value: str) -> str:
        raise ConversationValueError("seed must be an integer of at most 63 bits")

    adapter = TypeAdapter(dict[str, Annotated[str, AfterValidator(refuse)]])
    with pytest.raises(ConversationValueError) as caught:
        validated(adapter, {"config": "x"}, place=lambda loc: f"the export's {loc[0]}")
    assert str(caught.value) == "the export's config: seed must be an integer of at most 63 bits"
