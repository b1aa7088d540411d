"""Coordinator-picked turns: a moderator (an agent, a callable, or a person) names the next speaker.

How a turn is decided, as a pure function of ``(roster, transcript)``:

1. The *eligible* speakers are the roster minus the coordinator, filtered by the transition rules
   after the previous speaker (the latest message's speaker).
2. A *pick event* (``RoomEvent(kind="pick", content=<name>)``) after the latest message is the
   decision for this turn, whoever recorded it (the coordinator agent, or a person overriding it).
   Its name must be eligible, else :class:`InvalidPickError`: a bad pick is never silently
   replaced. A pick with ``passed=True`` means "no one": the activity settles (``None``).
3. With no pick recorded: a ``picker`` callable, when given, is called with
   ``(eligible, transcript)`` and must return an eligible name or None; else, when a
   ``coordinator`` agent is named, the planner returns the coordinator's name: its turn is to
   *pick*, not to speak. The room asks it (see :meth:`CoordinatorPolicy.pick_needed`,
   :func:`parse_pick`) and stores the answer with :meth:`CoordinatorPolicy.record_pick`, so a
   replay reads the stored pick and never asks again. With neither, the planner waits (``None``)
   for a person's pick event.

**Coordinator-after** (``after=True``): instead of naming a speaker first, every eligible agent
drafts a candidate message and the coordinator picks one of the drafts (the coordinator agent's
model, or a person when the coordinator is not a roster agent). The chosen draft becomes the
chosen agent's message; the others are kept with it as audited candidates (stored, shown, exported,
never shown to agents). :meth:`CoordinatorPolicy.candidates_needed` says when such a turn is due.

Activities and caps work as for the other reactive policies: only the current activity's messages
count towards ``max_messages`` (default 20, ``None`` for no cap); pick events count for nothing.
A policy with a ``picker`` callable cannot be serialized.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.planning.base import PolicyBase, activity_messages
from conversation.planning.events import RoomEvent, check_roster, last_message
from conversation.planning.mentions import mentioned_roster
from conversation.planning.planner import cycle_round
from conversation.planning.transitions import TransitionRules, effective_rules

__all__ = ["CoordinatorPolicy", "InvalidPickError", "Picker", "parse_pick"]

Picker = Callable[[tuple[str, ...], Sequence[RoomEvent]], str | None]
_NO_ONE = {"none", "nobody", "no one", "pass"}


class InvalidPickError(ConversationValueError):
    """A pick named someone outside the eligible set (or could not be read)."""

    def __init__(self, pick: Any, eligible: Sequence[str], detail: str = "") -> None:
        self.pick = pick
        self.eligible = tuple(eligible)
        reason = detail or f"{pick!r} is not an eligible speaker"
        super().__init__(
            f"invalid pick: {reason}; eligible: {list(self.eligible)}. "
            "Pick one of them, or no one (a pick event with passed=True)"
        )


@dataclass(frozen=True, slots=True)
class CoordinatorPolicy(PolicyBase):
    """A coordinator (agent, callable or person) picks each next speaker among the eligible."""

    coordinator: str | None = None
    _: KW_ONLY
    picker: Picker | None = field(default=None, compare=False)
    max_messages: int | None = 20
    transitions: TransitionRules | None = None
    after: bool = False
    kind = "coordinator"
    label = "A coordinator picks who speaks"
    settings = ("coordinator", "max_messages", "after")

    def __post_init__(self) -> None:
        if self.coordinator is not None and (
            not isinstance(self.coordinator, str) or not self.coordinator
        ):
            raise ConversationValueError(
                f"CoordinatorPolicy.coordinator must be an agent name or None, "
                f"got {self.coordinator!r}"
            )
        if self.picker is not None and not callable(self.picker):
            raise ConversationValueError(
                "CoordinatorPolicy.picker must be a callable (eligible, transcript) -> name, "
                f"got {type(self.picker).__name__}"
            )
        self._check_cap("max_messages", self.max_messages)
        self._check_transitions()
        if not isinstance(self.after, bool):
            raise ConversationValueError(
                f"CoordinatorPolicy.after must be True or False, got {self.after!r}"
            )
        if self.after and self.picker is not None:
            raise ConversationValueError(
                "CoordinatorPolicy(after=True) picks among drafted candidates; it takes no picker "
                "callable"
            )

    def candidates_needed(
        self, roster: Sequence[str], transcript: Sequence[RoomEvent]
    ) -> tuple[str, ...] | None:
        """With ``after=True``: the agents who draft candidates for the next turn (the eligible,
        within the caps), or None when no turn is due."""
        if not self.after:
            return None
        names = check_roster(roster)
        if self.transitions is not None:
            self.transitions.check(names)
        activity = activity_messages(names, transcript)
        if not activity or (self.max_messages is not None and len(activity) >= self.max_messages):
            return None
        pick = self.pending_pick(transcript)
        if pick is not None and pick.passed:  # the coordinator chose no draft: settled
            return None
        eligible = self.eligible(names, transcript)
        return eligible or None

    def eligible(self, roster: Sequence[str], transcript: Sequence[RoomEvent]) -> tuple[str, ...]:
        """Who may be picked now, in roster order."""
        previous = last_message(transcript)
        prior = None if previous is None else previous.speaker
        candidates = [name for name in roster if name != self.coordinator]
        rules = effective_rules(self.transitions, roster, transcript)
        if rules is not None:
            candidates = rules.filter(prior, candidates)
        return tuple(candidates)

    @staticmethod
    def pending_pick(transcript: Sequence[RoomEvent]) -> RoomEvent | None:
        """The latest pick event after the latest message, if any."""
        for index in range(len(transcript) - 1, -1, -1):
            event = transcript[index]
            if event.kind == "message":
                return None
            if event.kind == "pick":
                return event
        return None

    def _choose(self, roster: tuple[str, ...], transcript: Sequence[RoomEvent]) -> str | None:
        activity = activity_messages(roster, transcript)
        if self.max_messages is not None and len(activity) >= self.max_messages:
            return None
        if self.after:
            # Who speaks is decided after the drafts (see candidates_needed): the first eligible
            # stands for the turn being due.
            candidates = self.candidates_needed(roster, transcript)
            return candidates[0] if candidates else None
        eligible = self.eligible(roster, transcript)
        pick = self.pending_pick(transcript)
        if pick is not None:
            if pick.passed:
                return None
            return self._validated(pick.content, eligible)
        if not eligible:
            return None
        if self.picker is not None:
            choice = self.picker(eligible, tuple(transcript))
            return None if choice is None else self._validated(choice, eligible)
        if self.coordinator is not None:
            if self.coordinator not in roster:
                raise ConversationValueError(
                    f"CoordinatorPolicy.coordinator {self.coordinator!r} is not on the roster "
                    f"{list(roster)}; add it or name a roster agent"
                )
            return self.coordinator
        return None

    def because(
        self, roster: tuple[str, ...], transcript: Sequence[RoomEvent], speaker: str
    ) -> str:
        pick = self.pending_pick(transcript)
        if pick is not None:
            if pick.speaker == self.coordinator:
                return "picked by coordinator"
            return f"picked by {pick.speaker}"
        if speaker == self.coordinator:
            return "coordinator's turn to pick"
        if self.picker is not None:
            return "picked by the picker function"
        return "picked by coordinator"

    @staticmethod
    def _validated(choice: Any, eligible: Sequence[str]) -> str:
        if not isinstance(choice, str) or choice not in eligible:
            raise InvalidPickError(choice, eligible)
        return choice

    def pick_needed(
        self, roster: Sequence[str], transcript: Sequence[RoomEvent]
    ) -> tuple[str, ...] | None:
        """The eligible names when the next step is the coordinator agent's pick; else None."""
        if self.picker is not None or self.coordinator is None or self.after:
            return None
        if self.pending_pick(transcript) is not None:
            return None
        if self.plan_next(roster, transcript) != self.coordinator:
            return None
        return self.eligible(check_roster(roster), transcript)

    def record_pick(
        self,
        roster: Sequence[str],
        transcript: Sequence[RoomEvent],
        choice: str | None,
        *,
        by: str | None = None,
    ) -> RoomEvent:
        """The pick event to store (validated first): ``choice=None`` picks no one."""
        names = check_roster(roster)
        author = by or self.coordinator
        if author is None:
            raise ConversationValueError(
                "record_pick needs by=<who picked> when the policy has no coordinator"
            )
        if choice is not None:
            self._validated(choice, self.eligible(names, transcript))
        return RoomEvent(
            speaker=author,
            content=choice or "",
            round=cycle_round(names, transcript),
            passed=choice is None,
            kind="pick",
        )

    def to_dict(self) -> dict[str, Any]:
        if self.picker is not None:
            raise ConversationValueError(
                "a CoordinatorPolicy with a picker callable cannot be serialized (arbitrary "
                "Python callables cannot be restored); use a coordinator agent whose picks are "
                "recorded as events"
            )
        data = PolicyBase.to_dict(self)
        data.pop("picker", None)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CoordinatorPolicy:
        if data.get("picker") is not None:
            raise ConversationValueError("a serialized CoordinatorPolicy cannot hold a picker")
        # Two-argument super(): slotted dataclasses are rebuilt, so the zero-argument form breaks.
        policy: CoordinatorPolicy = super(CoordinatorPolicy, cls).from_dict(data)
        return policy


def parse_pick(text: str, eligible: Sequence[str]) -> str | None:
    """Read a coordinator model's answer: an eligible name, or None for "no one".

    Accepted: ``none``/``nobody``/``no one``/``pass``; exactly one eligible ``@name``; the bare
    name; or exactly one eligible name as a whole word. Anything else raises
    :class:`InvalidPickError` (never a guess).
    """
    if not isinstance(text, str):
        raise InvalidPickError(text, eligible, "the pick is not text")
    bare = text.strip().strip(".!\"'`*").strip()
    if bare.lower() in _NO_ONE:
        return None
    if bare in eligible:
        return bare
    mentioned = mentioned_roster(text, eligible)
    if len(mentioned) == 1:
        return mentioned[0]
    if len(mentioned) > 1:
        raise InvalidPickError(text, eligible, f"{text!r} names several speakers {mentioned}")
    named = [n for n in eligible if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text)]
    if len(named) == 1:
        return named[0]
    detail = f"{text!r} names several speakers {named}" if named else f"{text!r} names no one"
    raise InvalidPickError(text, eligible, detail)
