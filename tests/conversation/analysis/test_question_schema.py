"""A question spec at the door: one declarative schema (``QuestionSpecIn``); the variables a
text may use come with the validation, and each refusal names ``question <field>``."""

from __future__ import annotations

import pytest

from conversation.analysis.question_schema import QuestionSpecIn, question_place
from conversation.exceptions import ConversationValueError
from conversation.text.schema import validated


def checked(spec: dict, variables: tuple[str, ...] = ("transcript",)) -> QuestionSpecIn:
    return validated(QuestionSpecIn, spec, place=question_place, context={"variables": variables})


def test_the_checked_spec_is_what_edsl_will_see() -> None:
    spec = checked(
        {"type": "multiple_choice", "name": "who", "text": "Who won?", "options": [" A ", "B"]}
    )
    assert spec.text == "Transcript:\n{{ transcript }}\n\nWho won?"
    assert spec.options == ["A", "B"]
    own = checked({"type": "free_text", "name": "s", "text": "In {{ room }}?"}, ("room",))
    assert own.text == "In {{ room }}?"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"type": "yes_no", "name": "d"}, "question text must be non-empty text"),
        ({"type": "yes_no", "text": "x"}, "question name is required"),
        ({"type": "multiple_choice", "name": "c", "text": "x"}, "question options must be a list"),
        ({"type": "yes_no", "name": "d", "text": "{{ room }}"}, "question text"),
        (
            {"type": "numerical", "name": "n", "text": "x", "max_value": float("inf")},
            "question max_value",
        ),
    ],
)
def test_a_bad_spec_names_the_field(spec: dict, message: str) -> None:
    with pytest.raises(ConversationValueError) as caught:
        checked(spec)
    assert str(caught.value).startswith(message)
