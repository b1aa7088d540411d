"""Payout rules at the door (issue 33): a base amount, bonuses from the room's outcome, pay for
waiting in the lobby, a cap.

A bonus reads one answer per person: an analysis question's answer about their room (the deal
price) or one of their survey answers, and turns it into an amount: ``offset + per_unit *
answer`` for a number, or ``table[answer]`` for a choice; then bounded by ``min`` / ``max``.
Amounts are computed by ``study.payouts`` (decimals, two places); this module is the shape.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, Field, Strict, model_validator

from conversation.exceptions import ConversationValueError
from conversation.text.schema import DoorModel, Problem
from conversation.vocabulary import ExitStatus

MAX_AMOUNT = 10_000.0
MAX_BONUSES = 20
_CURRENCY = re.compile(r"[A-Z]{3}")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


class BonusSource(StrEnum):
    """Where a bonus reads its answer."""

    ANALYSIS = "analysis"
    """An analysis question's answer about the person's room (``question``: its name)."""
    PRE_SURVEY = "pre_survey"
    POST_SURVEY = "post_survey"


def _amount(value: float | int) -> float:
    if isinstance(value, bool) or not -MAX_AMOUNT <= value <= MAX_AMOUNT:
        raise Problem(f"must be an amount from {-MAX_AMOUNT} to {MAX_AMOUNT}, got {value!r}")
    return float(value)


def _positive(value: float | int) -> float:
    if isinstance(value, bool) or not 0 <= value <= MAX_AMOUNT:
        raise Problem(f"must be an amount from 0 to {MAX_AMOUNT}, got {value!r}")
    return float(value)


Amount = Annotated[float | int, AfterValidator(_amount)]
Positive = Annotated[float | int, AfterValidator(_positive)]


def _name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise Problem("must be 1-64 lowercase letters, digits and underscores, e.g. 'deal'")
    return value


class BonusIn(DoorModel):
    """One bonus (see the module docstring)."""

    name: Annotated[str, AfterValidator(_name)]
    source: Annotated[BonusSource, Strict(False)]
    question: Annotated[str, AfterValidator(_name)]
    seats: list[str] | None = None
    """The seats it is paid to (None: every human seat)."""
    offset: Amount = 0.0
    per_unit: Amount | None = None
    table: dict[str, Amount] | None = None
    min: Amount = 0.0
    max: Amount | None = None

    @model_validator(mode="after")
    def _one_formula(self) -> BonusIn:
        if (self.per_unit is None) == (self.table is None):
            raise Problem("takes per_unit (a number's bonus) or table (a choice's), not both")
        if self.max is not None and self.max < self.min:
            raise Problem(f"max ({self.max}) must be at least min ({self.min})")
        return self


def _bonuses(value: list[BonusIn]) -> list[BonusIn]:
    if len(value) > MAX_BONUSES:
        raise Problem(f"holds {len(value)} bonuses; at most {MAX_BONUSES}")
    names = [b.name for b in value]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise Problem(f"bonus names must be unique; {repeated} repeated")
    return value


def _currency(value: str) -> str:
    if not _CURRENCY.fullmatch(value):
        raise Problem("must be a three-letter currency code such as 'GBP' or 'USD'")
    return value


class PayoutsIn(DoorModel):
    """``[payouts]``: what each person earns."""

    currency: Annotated[str, AfterValidator(_currency)] = "GBP"
    base: Positive = 0.0
    """Paid to everyone who left with a status of ``paid``."""
    bonuses: Annotated[list[BonusIn], AfterValidator(_bonuses)] = []
    waiting_per_minute: Positive = 0.0
    """Paid per minute in the lobby (to everyone who waited, whatever their exit)."""
    cap: Positive | None = None
    """The most one person earns, all parts together."""
    paid: list[Annotated[ExitStatus, Strict(False)]] = Field(
        default_factory=lambda: [ExitStatus.COMPLETED]
    )
    """The exit statuses paid the base and the bonuses."""


def check_payouts(
    payouts: PayoutsIn, seats: set[str], surveys: dict[str, list[Any]], where: str = "payouts"
) -> None:
    """The bonuses name human seats and survey questions of the study (an analysis question is
    asked after the study runs: its name is checked then). ``ConversationValueError`` naming
    the bonus."""
    for i, bonus in enumerate(payouts.bonuses):
        place = f"{where}.bonuses[{i}]"
        unknown = sorted(set(bonus.seats or []) - seats)
        if unknown:
            raise ConversationValueError(
                f"{place}.seats: {unknown} are not human seats of the study {sorted(seats)}"
            )
        if bonus.source == BonusSource.ANALYSIS:
            continue
        questions = surveys.get(bonus.source, [])
        question = next((q for q in questions if q.question_name == bonus.question), None)
        if question is None:
            raise ConversationValueError(
                f"{place}.question: {bonus.question!r} is not a question of the {bonus.source}"
            )
        numeric = question.question_type == "linear_scale"
        if bonus.per_unit is not None and not numeric:
            raise ConversationValueError(
                f"{place}.per_unit: {bonus.question!r} is not answered with a number; use table"
            )


__all__ = ["BonusIn", "BonusSource", "PayoutsIn", "check_payouts"]
