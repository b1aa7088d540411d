"""A person's payout from the definition's ``[payouts]`` and what was stored about them: pure
(no database, no clock), so the same inputs give the same amounts.

The rule, once:

- Every amount is a ``Decimal``. An amount of the definition is read from its shortest decimal
  text (``0.1`` is 0.1, not the float's binary value); an answer that is a number likewise.
- Each line is computed exactly and rounded **once**, to the currency's cents, half up
  (``0.125`` -> ``0.13``). The total is the sum of the rounded lines, so the lines a person sees
  add up to their total.
- ``base`` and the bonuses are paid to a person whose exit status is one of ``paid`` (default
  ``completed``); nobody still on their path is paid them yet.
- A bonus reads one answer (an analysis question's answer about the person's room, or one of
  their survey answers): ``offset + per_unit * answer`` for a number, ``table[answer]`` for a
  choice (an answer the table does not name: 0), then bounded by ``min`` and ``max``. A bonus
  limited to ``seats`` is paid only to a person in one of them. An answer not stored (yet) gives
  no amount (``None``): the line says so and counts 0.
- Waiting is paid per minute in the lobby, to the second, to everyone who waited whatever their
  exit: from entering the lobby to being assigned a seat, or to leaving from the lobby. A wait
  still going is not paid yet.
- The cap bounds the total: when the lines add up to more, a ``cap`` line takes the excess off.
- The part paid as a Prolific bonus is the total without the base (the base is the study's
  reward on Prolific, paid when the submission is approved), never below 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from conversation.study.definition.payouts import BonusIn, BonusSource, PayoutsIn

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

#: The names of the lines that are not bonuses (a bonus line is named by its bonus).
BASE = "base"
WAITING = "waiting"
CAP = "cap"


def money(value: Any) -> Decimal:
    """``value`` (an amount of the definition, an int or a float) as an exact ``Decimal``."""
    if isinstance(value, Decimal):
        return value
    return Decimal(str(value))


def rounded(value: Decimal) -> Decimal:
    """``value`` rounded to cents, half up (the one rounding of each line)."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def number_of(answer: Any) -> Decimal | None:
    """An answer read as a number (an int, a float or a numeric text), else None."""
    if isinstance(answer, bool) or answer is None:
        return None
    if isinstance(answer, int | float | Decimal):
        found = money(answer)
    elif isinstance(answer, str):
        try:
            found = Decimal(answer.strip())
        except InvalidOperation:
            return None
    else:
        return None
    return found if found.is_finite() else None


@dataclass(frozen=True, slots=True)
class PayoutLine:
    """One part of a person's payout: ``name`` (``base``, ``waiting``, ``cap`` or the bonus's
    name), what the person reads (``label``), the amount (None: its answer is not stored yet),
    and for a bonus its source and the answer it read."""

    name: str
    label: str
    amount: Decimal | None
    source: str | None = None
    answer: Any = None


@dataclass(frozen=True, slots=True)
class Person:
    """What a payout reads about one person (the stored facts)."""

    pseudonym: str
    recruitment_id: str | None
    seat: str | None
    exit_status: str | None
    lobby_at: datetime | None
    assigned_at: datetime | None
    finished_at: datetime | None
    pre_survey: Mapping[str, Any] = field(default_factory=dict)
    post_survey: Mapping[str, Any] = field(default_factory=dict)
    #: Their room's analysis answers by question name (what the analyses stored).
    analysis: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PersonPayout:
    """One person's payout: the lines, the total (after the cap), the part paid as a bonus."""

    pseudonym: str
    recruitment_id: str | None
    exit_status: str | None
    lines: tuple[PayoutLine, ...]
    total: Decimal
    bonus: Decimal
    waited_seconds: float | None

    @property
    def base(self) -> Decimal:
        return sum((line.amount or ZERO for line in self.lines if line.name == BASE), ZERO)

    @property
    def capped(self) -> Decimal:
        """How much the cap took off (0.00 when it did not apply)."""
        return -sum((line.amount or ZERO for line in self.lines if line.name == CAP), ZERO)

    def amount_of(self, name: str) -> Decimal | None:
        """The amount of the line ``name`` (None: no such line, or its answer is missing)."""
        return next((line.amount for line in self.lines if line.name == name), None)


def waited_seconds(person: Person) -> float | None:
    """Seconds the person spent in the lobby (None: never there, or still waiting)."""
    if person.lobby_at is None:
        return None
    end = person.assigned_at or (person.finished_at if person.exit_status else None)
    if end is None:
        return None
    return max(0.0, (end - person.lobby_at).total_seconds())


def _waiting_amount(per_minute: Decimal, seconds: float) -> Decimal:
    # Whole microseconds, so the float of a timedelta never leaks binary digits into money.
    micro = Decimal(round(seconds * 1_000_000))
    return per_minute * micro / Decimal(60_000_000)


def answer_of(bonus: BonusIn, person: Person) -> Any:
    """The answer ``bonus`` reads for ``person`` (None: not stored)."""
    if bonus.source == BonusSource.ANALYSIS:
        return person.analysis.get(bonus.question)
    answers = person.pre_survey if bonus.source == BonusSource.PRE_SURVEY else person.post_survey
    return answers.get(bonus.question)


def bonus_amount(bonus: BonusIn, answer: Any) -> Decimal | None:
    """The bonus for ``answer``, exact (not rounded); None when there is no usable answer."""
    if answer is None:
        return None
    if bonus.per_unit is not None:
        value = number_of(answer)
        if value is None:
            return None
        amount = money(bonus.offset) + money(bonus.per_unit) * value
    else:
        key = str(answer).lower() if isinstance(answer, bool) else str(answer)
        amount = money((bonus.table or {}).get(key, 0))
    amount = max(amount, money(bonus.min))
    if bonus.max is not None:
        amount = min(amount, money(bonus.max))
    return amount


def bonus_label(bonus: BonusIn) -> str:
    return f"Bonus: {bonus.name.replace('_', ' ')}"


def person_payout(rules: PayoutsIn, person: Person) -> PersonPayout:
    """``person``'s payout under ``rules`` (the module docstring's rule)."""
    lines: list[PayoutLine] = []
    paid = person.exit_status is not None and person.exit_status in set(rules.paid)
    base = rounded(money(rules.base))
    if paid and base:
        lines.append(PayoutLine(BASE, "Base payment", base))
    if paid:
        for bonus in rules.bonuses:
            if bonus.seats is not None and person.seat not in bonus.seats:
                continue
            answer = answer_of(bonus, person)
            amount = bonus_amount(bonus, answer)
            lines.append(
                PayoutLine(
                    bonus.name,
                    bonus_label(bonus),
                    None if amount is None else rounded(amount),
                    str(bonus.source),
                    answer,
                )
            )
    waited = waited_seconds(person)
    per_minute = money(rules.waiting_per_minute)
    if per_minute and waited is not None:
        lines.append(
            PayoutLine(
                WAITING, "Waiting in the lobby", rounded(_waiting_amount(per_minute, waited))
            )
        )
    total = sum((line.amount or ZERO for line in lines), ZERO)
    if rules.cap is not None and total > rounded(money(rules.cap)):
        cap = rounded(money(rules.cap))
        lines.append(PayoutLine(CAP, "Cap on earnings", cap - total))
        total = cap
    paid_base = base if paid else ZERO
    return PersonPayout(
        person.pseudonym,
        person.recruitment_id,
        person.exit_status,
        tuple(lines),
        total,
        max(ZERO, total - paid_base),
        waited,
    )


def amount_text(amount: Decimal) -> str:
    """An amount as money is written: two decimals, no currency sign (``2.50``)."""
    return f"{rounded(amount):.2f}"


__all__ = [
    "BASE",
    "CAP",
    "WAITING",
    "Person",
    "PersonPayout",
    "PayoutLine",
    "amount_text",
    "bonus_amount",
    "money",
    "person_payout",
    "rounded",
    "waited_seconds",
]
