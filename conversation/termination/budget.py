"""Spending limits: a room's or an experiment's budget in tokens and/or US dollars (pure).

A budget is checked before a new turn starts: once what was spent reaches a limit, no new turn
starts and the room terminates with a reason such as ``"budget reached: $0.50 spent of $0.50"``
(an experiment's: ``"experiment budget reached: ..."``). A turn already running finishes, so the
spend can pass the limit by the turns in flight at that moment (one per room).

What counts: every model call recorded on the room's events (turns, passes, picks, drafts,
summaries): ``input_tokens + output_tokens`` for tokens, ``cost`` for dollars. A call whose price
is unknown (``cost`` None: a self-hosted server, a model missing from EDSL's price table) counts
its tokens but no dollars; a reply from the cache costs nothing.

Distinct from the ``token_budget`` termination condition (``conditions.TokenBudget``), which reads
the tokens of the transcript's messages and composes with other stop rules; a budget counts every
call and is shared by an experiment's rooms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conversation.exceptions import ConversationValueError

__all__ = [
    "Budget",
    "Spend",
    "format_cost",
    "format_cost_short",
    "format_dollars",
    "format_tokens",
]


def format_dollars(value: float) -> str:
    """``$0.50``; small amounts keep their significant digits (``$0.0031``)."""
    if value == 0 or abs(value) >= 0.01:
        return f"${value:,.2f}"
    return f"${value:.2g}" if abs(value) < 0.0001 else f"${value:.4f}"


def format_tokens(tokens: int, *, estimated: bool = False) -> str:
    """``8,440 tokens``; ``≈8,440 tokens (estimated)`` when the count is (partly) an estimate."""
    return f"≈{tokens:,} tokens (estimated)" if estimated else f"{tokens:,} tokens"


def format_cost(dollars: float | None, unpriced: int = 0) -> str:
    """A total a person can trust: ``$0.42``; ``$0.42 + 3 calls of unknown price`` when some calls
    have no known price; ``unknown (3 calls of unknown price)`` when no dollars are known at all
    (a self-hosted server), never ``$0.00`` for an unknown price."""
    unpriced = int(unpriced or 0)
    known = float(dollars or 0.0)
    if not unpriced:
        return format_dollars(known)
    calls = f"{unpriced:,} call{'s' if unpriced != 1 else ''} of unknown price"
    return f"{format_dollars(known)} + {calls}" if known > 0 else f"unknown ({calls})"


def format_cost_short(dollars: float | None, unpriced: int = 0) -> str:
    """``format_cost`` in a few characters, for a metric tile (the full sentence goes beside
    it): ``$0.42``, ``≥ $0.42`` when some calls have no known price, ``unknown`` when none
    has one."""
    known = float(dollars or 0.0)
    if not unpriced:
        return format_dollars(known)
    return f"≥ {format_dollars(known)}" if known > 0 else "unknown"


@dataclass(frozen=True, slots=True)
class Spend:
    """What was spent: tokens (prompt + completion), US dollars (known prices only), the
    number of model calls whose price is unknown (their dollars are not in ``dollars``) and the
    number whose token counts are estimates (the server reported none: llama.cpp's stream)."""

    tokens: int = 0
    dollars: float = 0.0
    unpriced: int = 0
    estimated: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            self.tokens + other.tokens,
            self.dollars + other.dollars,
            self.unpriced + other.unpriced,
            self.estimated + other.estimated,
        )

    @property
    def cost_text(self) -> str:
        """``format_cost`` of this spend."""
        return format_cost(self.dollars, self.unpriced)

    @property
    def cost_short(self) -> str:
        """``format_cost_short`` of this spend (a metric tile; ``cost_text`` beside it)."""
        return format_cost_short(self.dollars, self.unpriced)

    @property
    def tokens_text(self) -> str:
        """``8,440 tokens``, or ``≈8,440 tokens (estimated)`` when some counts are estimates:
        never an estimate shown as exact."""
        return format_tokens(self.tokens, estimated=self.estimated > 0)


@dataclass(frozen=True, slots=True)
class Budget:
    """At most ``max_tokens`` tokens and/or ``max_dollars`` US dollars (None: no limit)."""

    max_tokens: int | None = None
    max_dollars: float | None = None

    def __post_init__(self) -> None:
        tokens, dollars = self.max_tokens, self.max_dollars
        if tokens is not None and (
            not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1
        ):
            raise ConversationValueError(
                f"budget max_tokens must be a positive whole number of tokens, got {tokens!r}; "
                "leave it empty for no token limit"
            )
        if dollars is not None and (
            not isinstance(dollars, int | float)
            or isinstance(dollars, bool)
            or not math.isfinite(dollars)
            or dollars <= 0
        ):
            raise ConversationValueError(
                f"budget max_dollars must be a positive amount in US dollars, got {dollars!r}; "
                "leave it empty for no dollar limit"
            )
        if dollars is not None:
            object.__setattr__(self, "max_dollars", float(dollars))

    @property
    def limited(self) -> bool:
        return self.max_tokens is not None or self.max_dollars is not None

    def reached(self, spent: Spend, *, scope: str = "budget") -> str | None:
        """The stop reason once ``spent`` reached a limit, else None."""
        if self.max_dollars is not None and spent.dollars >= self.max_dollars - 1e-12:
            return (
                f"{scope} reached: {format_dollars(spent.dollars)} spent of "
                f"{format_dollars(self.max_dollars)}"
            )
        if self.max_tokens is not None and spent.tokens >= self.max_tokens:
            return f"{scope} reached: {spent.tokens:,} tokens used of {self.max_tokens:,}"
        return None

    def describe(self, spent: Spend | None = None) -> str:
        """``"$0.12 of $0.50, 1,200 of 5,000 tokens"`` (or the limits alone)."""
        parts = []
        if self.max_dollars is not None:
            limit = format_dollars(self.max_dollars)
            parts.append(limit if spent is None else f"{spent.cost_text} of {limit}")
        if self.max_tokens is not None:
            parts.append(
                f"{self.max_tokens:,} tokens"
                if spent is None
                else f"{'≈' if spent.estimated else ''}{spent.tokens:,} of {self.max_tokens:,} "
                f"tokens{' (estimated)' if spent.estimated else ''}"
            )
        return ", ".join(parts) if parts else "no budget"

    def to_dict(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "max_dollars": self.max_dollars}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, field: str = "budget") -> Budget | None:
        """A stored budget (None or one with no limit: None)."""
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise ConversationValueError(
                f"{field} must be a dict with max_tokens and/or max_dollars, got "
                f"{type(data).__name__}"
            )
        unknown = set(data) - {"max_tokens", "max_dollars"}
        if unknown:
            raise ConversationValueError(
                f"{field} has unknown field(s) {sorted(unknown)}; allowed: max_tokens, max_dollars"
            )
        try:
            budget = cls(data.get("max_tokens"), data.get("max_dollars"))
        except ConversationValueError as exc:
            raise ConversationValueError(f"{field}: {exc}") from None
        return budget if budget.limited else None
