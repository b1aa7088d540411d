"""Attrition: who left without completing, by condition, with a Wilson 95% interval.

A condition's row counts the people assigned to it and those of them who left without
completing (absent in the room or at the post-survey, removed, their room failed): the rate is
that share. People who left before being assigned a condition (declined, away at the consent or
the pre-survey, dropped or timed out in the lobby) have a row of their own,
:data:`BEFORE_ASSIGNMENT`, whose denominator is everyone who joined and was never assigned.
People still on their path count in the denominator only.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from conversation.vocabulary import ExitStatus, ParticipantStage

#: The label of the row of people who left before a condition was drawn for them.
BEFORE_ASSIGNMENT = "(before assignment)"


@dataclass(frozen=True, slots=True)
class AttritionRow:
    """One condition's attrition (``assigned``: the row's people; ``dropped``: those who left
    absent with the ``dropped`` code; ``left``: everyone who left without completing, by exit
    status in ``left_by``; ``rate``: left / assigned with its interval)."""

    condition: str
    assigned: int
    completed: int
    dropped: int
    rate: float | None
    low: float | None
    high: float | None
    left: int = 0
    left_by: dict[str, int] = field(default_factory=dict)


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float | None, float | None]:
    """The Wilson score interval of a proportion (None, None for n = 0)."""
    if n == 0:
        return None, None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def attrition(people: list[Any], conditions: list[str]) -> list[AttritionRow]:
    """Per condition, then :data:`BEFORE_ASSIGNMENT` (see the module docstring)."""
    rows = [_row(label, [p for p in people if p.condition == label]) for label in conditions]
    unassigned = [p for p in people if p.condition is None]
    return [*rows, _row(BEFORE_ASSIGNMENT, unassigned)]


def _row(label: str, people: list[Any]) -> AttritionRow:
    left_by = Counter(
        str(p.exit_status)
        for p in people
        if p.stage == ParticipantStage.EXIT and p.exit_status != ExitStatus.COMPLETED
    )
    left = sum(left_by.values())
    completed = sum(p.exit_status == ExitStatus.COMPLETED for p in people)
    low, high = wilson(left, len(people))
    rate = left / len(people) if people else None
    dropped = left_by.get(ExitStatus.DROPPED, 0)
    return AttritionRow(
        label, len(people), completed, dropped, rate, low, high, left, dict(sorted(left_by.items()))
    )


__all__ = ["BEFORE_ASSIGNMENT", "AttritionRow", "attrition", "wilson"]
