"""A person's limits in their room (issue 33): when they may leave, how many messages they must
and may still send, whether their message box is open, and the turn banner.

- Before ``min_seconds`` (from the room's start) and below ``min_messages`` a person cannot
  leave: :attr:`RoomLimits.leave_refusal` says why, with how long or how many are left.
- At ``max_messages`` their box closes, with the reason; in an ``ordered`` room it is closed
  when it is not their turn (the banner says whose turn it is).

Pure: a function of the room's rules, its log, the seat and the time. The participant's view
shows it and their acts (``acts.post_as_participant``, ``acts.leave_room``) apply the same
function, so the page and the server never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from conversation.study.definition.schema import RoomRulesIn, TurnOrder
from conversation.vocabulary import HumanMessage, entry_of

YOUR_TURN = "Your turn"


@dataclass(frozen=True, slots=True)
class RoomLimits:
    """What the rules allow a person now (see the module docstring)."""

    leave_in: float | None
    """Seconds until the minimum time is reached (None: no minimum left)."""
    messages_sent: int
    messages_needed: int
    """Messages still to send before the person may leave."""
    messages_left: int | None
    """Messages the person may still send (None: no maximum)."""
    closed_reason: str | None
    """Why the message box is closed (None: open)."""
    turn_banner: str | None
    """``"Your turn"`` or ``"Waiting for Buyer"`` in an ordered room."""

    @property
    def can_leave(self) -> bool:
        return self.leave_refusal is None

    @property
    def leave_refusal(self) -> str | None:
        """Why the person may not leave yet, in their words (None: they may)."""
        if self.leave_in:
            return f"You can leave in {clock(self.leave_in)}."
        if self.messages_needed:
            more = self.messages_needed
            return f"Please send {more} more message{'s' if more > 1 else ''} before you leave."
        return None


def clock(seconds: float) -> str:
    """``95.2`` -> ``"1:36"`` (rounded up: the page never says 0:00 while it still waits)."""
    whole = max(0, math.ceil(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


def sent_by(events: Sequence[Any], seat: str) -> int:
    """How many messages seat ``seat``'s person sent in the room (``events``: its log)."""
    return sum(
        1
        for e in events
        if isinstance(entry := entry_of(e), HumanMessage) and entry.speaker == seat
    )


def room_limits(
    rules: RoomRulesIn,
    seat: str,
    events: Sequence[Any],
    started_at: datetime,
    now: datetime,
    *,
    due: str | None = None,
) -> RoomLimits:
    """The person's limits now; ``due``: the seat whose turn it is (ordered rooms)."""
    sent = sent_by(events, seat)
    elapsed = (now - started_at).total_seconds()
    leave_in = max(0.0, rules.min_seconds - elapsed) or None
    left = None if rules.max_messages is None else max(0, rules.max_messages - sent)
    banner = closed = None
    if rules.turns == TurnOrder.ORDERED and due is not None:
        banner = YOUR_TURN if due == seat else f"Waiting for {due}"
        if due != seat:
            closed = f"It is {due}'s turn."
    if left == 0:
        closed = f"You have sent the most messages allowed here ({rules.max_messages})."
    return RoomLimits(
        leave_in=leave_in,
        messages_sent=sent,
        messages_needed=max(0, rules.min_messages - sent),
        messages_left=left,
        closed_reason=closed,
        turn_banner=banner,
    )


def needs_log(rules: RoomRulesIn) -> bool:
    """Whether a post must read the room's log to apply the rules (a maximum, ordered turns)."""
    return rules.max_messages is not None or rules.turns == TurnOrder.ORDERED


__all__ = ["YOUR_TURN", "RoomLimits", "clock", "needs_log", "room_limits", "sent_by"]
