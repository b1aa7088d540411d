"""A survey's comprehension checks, graded (issue 33).

Each submission of a survey with checks is one try, recorded in the study's log
(``check_attempt``: the survey, the try's number, the checked answers and the wrong ones).
A question answered wrongly as many times as its ``attempts`` ends the person's path with
``failed_check`` (its own code, counted in attrition); before that, the person stays at the
survey and the page shows each wrong question's explanation and the tries left
(:func:`feedback_of`). Right answers move them on as any survey does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conversation.study.definition.schema import QuestionIn
from conversation.vocabulary import StudyEventKind


@dataclass(frozen=True, slots=True)
class CheckFeedback:
    """A wrong answer to a check, as the page shows it before the next try."""

    question_name: str
    explanation: str | None
    attempts_left: int


@dataclass(frozen=True, slots=True)
class Grade:
    """One try at a survey's checks: what it records, the wrong questions, the failed ones
    (out of attempts)."""

    record: dict[str, Any]
    wrong: list[str]
    failed: list[str]


def survey_word(stage: str) -> str:
    """``pre_survey`` -> ``pre`` (how the log names a survey)."""
    return stage.removesuffix("_survey")


def grade(
    questions: Sequence[QuestionIn],
    checked: Mapping[str, Any],
    survey: str,
    tries: Iterable[Any],
) -> Grade | None:
    """The grade of ``checked`` (the asked questions' answers) against ``questions``' checks;
    None when no asked question is a check. ``tries``: the person's earlier ``check_attempt``
    entries (any survey)."""
    checks = [q for q in questions if q.is_check and q.question_name in checked]
    if not checks:
        return None
    earlier = [t for t in tries if (t.data or {}).get("survey") == survey]
    wrong = [q.question_name for q in checks if not q.is_correct(checked[q.question_name])]
    failed = []
    for question in checks:
        name = question.question_name
        misses = sum(name in (t.data or {}).get("wrong", []) for t in earlier)
        if name in wrong and misses + 1 >= question.attempts:
            failed.append(name)
    record = {
        "survey": survey,
        "attempt": len(earlier) + 1,
        "answers": {q.question_name: checked[q.question_name] for q in checks},
        "wrong": wrong,
    }
    return Grade(record, wrong, failed)


def feedback_of(
    questions: Sequence[QuestionIn], notes: Iterable[Any], survey: str
) -> list[CheckFeedback]:
    """What the page shows after a wrong try at ``survey``: each wrong question's explanation
    and tries left ([] before any try, or after a right one)."""
    tries = [
        n
        for n in notes
        if n.kind == StudyEventKind.CHECK_ATTEMPT and (n.data or {}).get("survey") == survey
    ]
    if not tries:
        return []
    by_name = {q.question_name: q for q in questions}
    shown = []
    for name in (tries[-1].data or {}).get("wrong", []):
        question = by_name.get(name)
        if question is None:
            continue
        misses = sum(name in (t.data or {}).get("wrong", []) for t in tries)
        left = max(0, question.attempts - misses)
        shown.append(CheckFeedback(name, question.explanation, left))
    return shown


__all__ = ["CheckFeedback", "Grade", "feedback_of", "grade", "survey_word"]
