"""Questions with right answers, and questions shown only on a condition (issue 33).

- A survey question with ``correct`` is a **comprehension check**: choices (one option, or a
  list of options any of which is right), or free text compared ignoring case, accents and the
  space around it (:func:`is_correct`). It allows ``attempts`` tries and may ``explain`` the
  answer after a wrong one; out of tries, the person leaves with ``failed_check``.
- A question with ``show_if`` is asked only when earlier answers meet its condition: one
  comparison (``{question, op, value}``) or ``all`` / ``any`` of conditions (AND / OR, nested).
  A condition names only questions asked before it (:func:`check_conditions`); a question not
  shown is not answered (:func:`shown_questions`).
- An attention check in the room is a :class:`ChoiceCheckIn` (``rules.AttentionCheckIn``).

Everything here is pure: the definition's shapes, and functions of answers.
"""

from __future__ import annotations

import operator
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from conversation.exceptions import ConversationValueError
from conversation.text.limits import MAX_MESSAGE_CHARS
from conversation.text.schema import DoorModel, Problem, text_rule

MAX_ATTEMPTS = 10
MAX_CONDITION_PARTS = 20
Answer = str | int
Op = Literal["==", "!=", "<", "<=", ">", ">=", "in", "not_in"]
_ORDERED: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def normalized(text: str) -> str:
    """``text`` as a free-text check compares it: no accents, case folded, no space around."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return bare.casefold().strip()


def _answers(value: Any) -> Any:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str | int) and not isinstance(v, bool) for v in items):
        raise Problem("must be an answer (text or a whole number) or a list of accepted answers")
    return value


class ShowIfIn(DoorModel):
    """``show_if``: one comparison (``question``, ``op``, ``value``), or ``all`` / ``any`` of
    conditions."""

    question: str | None = None
    op: Op = "=="
    value: Any = None
    all: list[ShowIfIn] | None = Field(default=None, max_length=MAX_CONDITION_PARTS)
    any: list[ShowIfIn] | None = Field(default=None, max_length=MAX_CONDITION_PARTS)

    @model_validator(mode="after")
    def _one_form(self) -> ShowIfIn:
        forms = [self.question is not None, self.all is not None, self.any is not None]
        if sum(forms) != 1:
            raise Problem(
                "must be one comparison {question, op, value} or one of all = [...] / any = [...]"
            )
        if self.question is not None:
            if self.value is None:
                raise Problem(f"compares {self.question!r} with a value: value is required")
            listed = isinstance(self.value, list)
            if (self.op in ("in", "not_in")) != listed:
                raise Problem(f"op {self.op!r} takes {'a list' if not listed else 'one value'}")
        elif not (self.all or self.any):
            raise Problem("all / any must hold at least one condition")
        return self

    def questions(self) -> list[str]:
        """Every question the condition reads."""
        if self.question is not None:
            return [self.question]
        return [name for part in (self.all or self.any or []) for name in part.questions()]

    def holds(self, answers: Mapping[str, Any]) -> bool:
        """Whether ``answers`` meet the condition (an unanswered question meets no comparison)."""
        if self.all is not None:
            return all(part.holds(answers) for part in self.all)
        if self.any is not None:
            return any(part.holds(answers) for part in self.any)
        answer = answers.get(str(self.question))
        if answer is None:
            return False
        if self.op == "==":
            return bool(answer == self.value)
        if self.op == "!=":
            return bool(answer != self.value)
        if self.op == "in":
            return answer in self.value
        if self.op == "not_in":
            return answer not in self.value
        numbers = (int, float)
        if not (isinstance(answer, numbers) and isinstance(self.value, numbers)):
            return False
        return _ORDERED[self.op](answer, self.value)


class CheckFields(DoorModel):
    """What a survey question may add to EDSL's spec: a right answer (a comprehension check),
    its attempts and explanation, and a condition for being asked."""

    correct: Annotated[Any, AfterValidator(_answers)] = None
    attempts: int = Field(default=1, ge=1, le=MAX_ATTEMPTS)
    explanation: Annotated[str, text_rule(MAX_MESSAGE_CHARS, optional=True)] | None = None
    show_if: ShowIfIn | None = None

    @model_validator(mode="after")
    def _key_fits(self) -> CheckFields:
        question_type = getattr(self, "question_type", None)
        options = list(getattr(self, "question_options", None) or [])
        if self.correct is None:
            if self.explanation is not None or "attempts" in self.model_fields_set:
                raise Problem("attempts and explanation belong to a check: give correct too")
            return self
        accepted = self.correct if isinstance(self.correct, list) else [self.correct]
        if question_type == "free_text":
            if not all(isinstance(a, str) and normalized(a) for a in accepted):
                raise Problem("correct: a free_text check's answers are non-empty texts")
        elif any(a not in options for a in accepted):
            raise Problem(f"correct: {accepted} must be among question_options {options}")
        return self

    @property
    def is_check(self) -> bool:
        return self.correct is not None

    def is_correct(self, answer: Any) -> bool:
        """Whether ``answer`` is right (see the module docstring)."""
        return is_correct(self.correct, answer)


def is_correct(correct: Any, answer: Any) -> bool:
    """Whether ``answer`` is one of the ``correct`` answers: texts compared :func:`normalized`,
    numbers as they are."""
    accepted = correct if isinstance(correct, list) else [correct]
    if isinstance(answer, str):
        return normalized(answer) in {normalized(a) for a in accepted if isinstance(a, str)}
    return answer in [a for a in accepted if not isinstance(a, str)]


class ChoiceCheckIn(DoorModel):
    """A question with choices and the right one (an attention check)."""

    name: Annotated[str, text_rule(64, one_line=True)]
    question_text: Annotated[str, text_rule(4_000)]
    question_options: list[Annotated[str, text_rule(200, one_line=True)]] = Field(
        min_length=2, max_length=30
    )
    correct: Annotated[str, text_rule(200, one_line=True)]

    @model_validator(mode="after")
    def _correct_is_an_option(self) -> ChoiceCheckIn:
        if self.correct not in self.question_options:
            raise Problem(f"correct: {self.correct!r} must be one of {self.question_options}")
        if len(set(self.question_options)) < len(self.question_options):
            raise Problem("question_options must be distinct")
        return self


def check_conditions(surveys: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Every ``show_if`` names only questions asked before it: earlier in its survey, or in a
    survey before it (``surveys``: ``(name, questions)`` in the order people answer them);
    a value compared with a choice question is one of its options.
    ``ConversationValueError`` naming the question."""
    asked: dict[str, Any] = {}
    for survey, questions in surveys:
        for i, question in enumerate(questions):
            condition = getattr(question, "show_if", None)
            if condition is not None:
                _check_condition(condition, asked, questions, f"{survey}[{i}].show_if")
            asked[question.question_name] = question


def _check_condition(
    condition: ShowIfIn, asked: Mapping[str, Any], questions: Sequence[Any], where: str
) -> None:
    parts = condition.all or condition.any
    if parts is not None:
        for part in parts:
            _check_condition(part, asked, questions, where)
        return
    name = str(condition.question)
    if name not in asked:
        later = any(q.question_name == name for q in questions)
        why = "comes later (or is this question)" if later else "is not a question of the study"
        raise ConversationValueError(
            f"{where}: {name!r} {why}; a condition reads only answers given before it"
        )
    target = asked[name]
    options = target.question_options
    values = condition.value if isinstance(condition.value, list) else [condition.value]
    if target.question_type != "free_text" and condition.op in ("==", "!=", "in", "not_in"):
        wrong = [v for v in values if v not in (options or [])]
        if wrong:
            raise ConversationValueError(
                f"{where}: {wrong} are not options of {name!r} {list(options or [])}"
            )


def shown_questions(questions: Sequence[Any], answers: Mapping[str, Any]) -> list[Any]:
    """The questions asked given ``answers`` (earlier surveys' and this one's, by name): those
    without a condition, and those whose condition holds."""
    return [q for q in questions if q.show_if is None or q.show_if.holds(answers)]


__all__ = [
    "MAX_ATTEMPTS",
    "CheckFields",
    "ChoiceCheckIn",
    "ShowIfIn",
    "check_conditions",
    "is_correct",
    "normalized",
    "shown_questions",
]
