"""Assignment by composition (issue 33): who may make up a condition's group, from the
pre-survey's answers.

A condition's ``composition`` names a pre-survey question with choices and, per answer, the
fewest (``min``) and most (``max``) people of a group who gave it; answers it does not name are
"any" (0 to every seat). :func:`members` picks a group's people from the lobby, the earliest
arrivals first, or says it cannot be met now. Pure: the lobby's draw (``clock.lobby``) calls it
with what it records, so a draw can be replayed from the study's log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from conversation.exceptions import ConversationValueError
from conversation.text.schema import DoorModel

MAX_SEATS = 50


class CompositionIn(DoorModel):
    """``{question = "stance", min = {agree = 1, disagree = 1}, max = {agree = 1}}``."""

    question: str
    min: dict[str, int] = Field(default_factory=dict)
    max: dict[str, int] = Field(default_factory=dict)

    def to_rule(self) -> dict[str, Any]:
        """The rule as the assignment log records it."""
        return {"question": self.question, "min": dict(self.min), "max": dict(self.max)}


def check_composition(
    composition: CompositionIn, seats: int, pre_survey: Sequence[Any], where: str
) -> None:
    """The composition reads a pre-survey question with choices, names only its options, and
    can be met by a group of ``seats`` people. ``ConversationValueError`` naming ``where``."""
    question = next((q for q in pre_survey if q.question_name == composition.question), None)
    if question is None or question.question_type == "free_text":
        raise ConversationValueError(
            f"{where}.question: {composition.question!r} is not a pre-survey question with "
            "choices; a composition counts the people who gave each answer"
        )
    if question.show_if is not None:
        raise ConversationValueError(
            f"{where}.question: {composition.question!r} is asked only on a condition; a "
            "composition needs an answer from everyone"
        )
    options = [str(o) for o in question.question_options or []]
    for part in ("min", "max"):
        bounds: dict[str, int] = getattr(composition, part)
        unknown = sorted(set(bounds) - set(options))
        if unknown:
            raise ConversationValueError(
                f"{where}.{part}: {unknown} are not answers of {composition.question!r} {options}"
            )
        bad = {k: v for k, v in bounds.items() if not 0 <= v <= seats}
        if bad:
            raise ConversationValueError(
                f"{where}.{part}: counts must be whole numbers from 0 to the {seats} seats, "
                f"got {bad}"
            )
    for answer, low in composition.min.items():
        high = composition.max.get(answer, seats)
        if low > high:
            raise ConversationValueError(
                f"{where}: min {low} of {answer!r} is more than its max {high}"
            )
    if sum(composition.min.values()) > seats:
        raise ConversationValueError(
            f"{where}.min: {sum(composition.min.values())} people are more than the {seats} seats"
        )
    if set(composition.max) >= set(options) and sum(composition.max.values()) < seats:
        raise ConversationValueError(
            f"{where}.max: at most {sum(composition.max.values())} people, fewer than the "
            f"{seats} seats"
        )


def members(
    rule: Mapping[str, Any] | None,
    seats: int,
    waiting: Sequence[int],
    answers: Mapping[int, Mapping[str, Any]],
    *,
    fill: bool = False,
) -> list[int] | None:
    """The people of a group of ``seats`` seats under ``rule`` (a composition as recorded, or
    None: anyone), from ``waiting`` (ids in arrival order; ``answers``: each one's pre-survey
    answers by question): each answer's minimum from its earliest arrivals, then the earliest
    others within the maximums. None when the group cannot be met now. ``fill`` (a lobby
    timeout, empty seats to agents): the first waiting person and whoever fits the maximums,
    the minimums waived."""
    if not waiting:
        return None
    if rule is None:
        if not fill and len(waiting) < seats:
            return None
        return list(waiting[:seats])
    low: Mapping[str, int] = rule.get("min") or {}
    high: Mapping[str, int] = rule.get("max") or {}

    question = str(rule.get("question"))

    def answer_of(person: int) -> str:
        return str((answers.get(person) or {}).get(question))

    taken: list[int] = []
    counts: dict[str, int] = {}
    if not fill:
        for answer, needed in low.items():
            people = [p for p in waiting if answer_of(p) == answer][:needed]
            if len(people) < needed:
                return None
            taken += people
            counts[answer] = needed
    for person in waiting:
        if len(taken) >= seats:
            break
        answer = answer_of(person)
        if person in taken or counts.get(answer, 0) >= high.get(answer, seats):
            continue
        taken.append(person)
        counts[answer] = counts.get(answer, 0) + 1
    if fill and waiting[0] not in taken:
        return None
    if not fill and len(taken) < seats:
        return None
    order = {p: i for i, p in enumerate(waiting)}
    return sorted(taken, key=order.__getitem__)


__all__ = ["CompositionIn", "check_composition", "members"]
