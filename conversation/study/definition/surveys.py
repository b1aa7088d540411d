"""Survey answers at the door, and the answers as EDSL ``Results`` for the analysis pages.

A survey is a list of EDSL question specs (``schema.QuestionIn``). :func:`checked_answers`
checks a participant's answers against them (every question answered, each by its type; free
text under the message rule). :func:`survey_results` turns a study's stored answers into EDSL
``Results`` (one row per participant, answered by that person: EDSL is told the answers, it
asks no model), so they sit beside the agents' in the same tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.study.definition.schema import QuestionIn
from conversation.text.limits import MAX_MESSAGE_CHARS, check_text


def checked_answers(
    questions: Sequence[QuestionIn], answers: Any, earlier: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``answers`` (``{question_name: answer}``) checked against ``questions``: every question
    asked answered (a question whose ``show_if`` does not hold, given ``earlier`` surveys'
    answers and this one's, is not asked, and an answer to it is dropped), free text as bounded
    text, a choice among the options, a scale value among its numbers;
    ``ConversationValueError`` naming the question."""
    if not isinstance(answers, Mapping):
        raise ConversationValueError("answers must map each question's name to its answer")
    names = {q.question_name for q in questions}
    unknown = sorted(str(k) for k in answers if k not in names)
    if unknown:
        raise ConversationValueError(f"answers name unknown question(s) {unknown[:5]}")
    checked: dict[str, Any] = {}
    known = dict(earlier or {})
    for question in questions:
        if question.show_if is not None and not question.show_if.holds(known):
            continue  # not asked: these answers do not meet its condition
        checked[question.question_name] = _checked_answer(question, answers)
        known[question.question_name] = checked[question.question_name]
    return checked


def _checked_answer(question: QuestionIn, answers: Mapping[str, Any]) -> Any:
    """One asked question's answer, checked by its type."""
    name = question.question_name
    if name not in answers or answers[name] is None:
        raise ConversationValueError(f"Please answer: {question.question_text}")
    value = answers[name]
    if question.question_type == "free_text":
        return check_text(value, f"the answer to {name!r}", MAX_MESSAGE_CHARS)
    options = list(question.question_options or [])
    if question.question_type == "linear_scale" and isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or value not in options:
        raise ConversationValueError(
            f"the answer to {name!r} must be one of {options}, got {str(value)[:60]!r}"
        )
    return value


def edsl_question(spec: QuestionIn) -> Any:
    """The EDSL question of a spec."""
    from edsl import QuestionFreeText, QuestionLinearScale, QuestionMultipleChoice

    if spec.question_type == "free_text":
        return QuestionFreeText(question_name=spec.question_name, question_text=spec.question_text)
    if spec.question_type == "multiple_choice":
        return QuestionMultipleChoice(
            question_name=spec.question_name,
            question_text=spec.question_text,
            question_options=list(spec.question_options or []),
        )
    labels = {int(k): v for k, v in (spec.option_labels or {}).items()}
    return QuestionLinearScale(
        question_name=spec.question_name,
        question_text=spec.question_text,
        question_options=list(spec.question_options or []),
        option_labels=labels or None,
    )


__all__ = ["checked_answers", "edsl_question"]
