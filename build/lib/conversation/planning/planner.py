"""The planner protocol and the round-robin room planner, ``RoundRobinRoomPlanner``.

The room rules (docs/design.md, "Rooms, activities and mentions"), to the letter:

- The current activity is the slice of the transcript from the last human (non-roster) message on;
  before any human message the planner returns ``None``.
- Round 0 lets every roster agent speak once, in roster order.
- Round N+1 admits only roster agents @-mentioned by a roster agent during round N of this
  activity, in roster order (not mention order), each at most once per round.
- A pass (``passed=True``) consumes the turn.
- ``max_rounds`` is a hard cap: no turn is scheduled at or beyond that round. ``max_messages`` caps
  the activity: no turn once it holds that many message events (the human message and passes
  included). Both must be ``>= 1``.
- Stale mentions from a settled activity never leak into a new one. ``None`` means settled: the
  room waits for the next human message.

Additions that change nothing when unused: only message events are read (pick, summary and system
events neither open an activity nor count against ``max_messages``); optional ``transitions``
(:class:`~conversation.planning.transitions.TransitionRules`) may delay an agent within its round (the first
admitted, unspoken agent in roster order that may follow the previous speaker goes next) and skip
it when no later chance comes; ``@reviewer.`` at the end of a sentence addresses ``reviewer``
(see :mod:`conversation.planning.mentions`).

:meth:`RoundRobinRoomPlanner.plan_turn` also tells which round the next event belongs to, so the
room can stamp it; :func:`plan_turn` does the same for any planner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from conversation.exceptions import ConversationValueError
from conversation.planning.events import (
    RoomEvent,
    activity_start,
    agent_turns_since,
    check_roster,
    opener_index,
)
from conversation.planning.mentions import mentioned_roster
from conversation.planning.transitions import (
    TransitionRules,
    effective_rules,
    transitions_from_dict,
)

__all__ = [
    "PlannedTurn",
    "RoomTurnPlannerProtocol",
    "RoundRobinRoomPlanner",
    "check_positive_int",
    "cycle_round",
    "mentioned_by_person",
    "plan_turn",
]


@runtime_checkable
class RoomTurnPlannerProtocol(Protocol):
    """Decides who speaks next in a room.

    Implementations must be pure: the same ``roster`` and ``transcript`` give the same answer, with
    no I/O, clock or global random state. ``None`` means the current activity is settled.
    """

    def plan_next(self, roster: Sequence[str], transcript: Sequence[RoomEvent]) -> str | None: ...


@dataclass(frozen=True, slots=True)
class PlannedTurn:
    """The next turn: who speaks, the round its event belongs to, (when the planner knows it)
    whom the speaker should address (e.g. the focal agent's next counterpart), and why."""

    speaker: str
    round: int
    addressee: str | None = None
    #: Why this speaker, in plain English ("round robin", "mentioned by Ana", ...).
    reason: str | None = field(default=None, compare=False)
    #: True when a person's @-mention chose the speaker (over the planner's own choice).
    mention: bool = field(default=False, compare=False)


def check_positive_int(owner: str, name: str, value: Any, *, allow_none: bool = False) -> None:
    """Raise :class:`ConversationValueError` unless ``value`` is an int ``>= 1``."""
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        extra = " or None" if allow_none else ""
        raise ConversationValueError(
            f"{owner}.{name} must be an integer >= 1{extra}, got {value!r}; pass e.g. {name}=3"
        )


def cycle_round(roster: Sequence[str], transcript: Sequence[RoomEvent]) -> int:
    """The round of the next turn for planners without rounds of their own.

    Completed passes over the roster in the current activity: agent turns there // roster size.
    """
    if not roster:
        return 0
    turns = agent_turns_since(roster, transcript, activity_start(roster, transcript))
    return turns // len(roster)


def plan_turn(
    planner: RoomTurnPlannerProtocol, roster: Sequence[str], transcript: Sequence[RoomEvent]
) -> PlannedTurn | None:
    """Who speaks next, in which round and why, for any planner (built-in or custom).

    One rule on top of every planner: an agent @-mentioned by a person in the message that opened
    the current activity answers next (the first such agent, in roster order, who has not spoken
    since), whenever the planner has a turn to give at all (its caps still hold)."""
    own = getattr(planner, "plan_turn", None)
    if callable(own):
        result: PlannedTurn | None = own(roster, transcript)
    else:
        speaker = planner.plan_next(roster, transcript)
        result = None if speaker is None else PlannedTurn(speaker, cycle_round(roster, transcript))
    if result is None:
        return None
    if result.reason is None:
        result = replace(result, reason="chosen by the planner")
    waiting = mentioned_by_person(roster, transcript)
    if waiting is None:
        return result
    agent, person = waiting
    addressee = result.addressee if agent == result.speaker else None
    return PlannedTurn(agent, result.round, addressee, f"mentioned by {person}", mention=True)


def mentioned_by_person(
    roster: Sequence[str], transcript: Sequence[RoomEvent]
) -> tuple[str, str] | None:
    """``(agent, person)``: the first roster agent (roster order) @-mentioned in the person's
    message that opened the current activity and who has not spoken (or passed) since."""
    names = tuple(roster)
    start = opener_index(names, transcript)
    if start is None:
        return None
    opener = transcript[start]
    mentioned = mentioned_roster(opener.content, names)
    if opener.visible_to is not None:
        mentioned = [n for n in mentioned if n in opener.visible_to]
    if not mentioned:
        return None
    spoken = {e.speaker for e in transcript[start + 1 :] if e.kind == "message"}
    for name in mentioned:
        if name not in spoken:
            return name, opener.speaker
    return None


@dataclass(frozen=True, slots=True)
class RoundRobinRoomPlanner:
    """The round-robin room planner: round-0 fan-out, then @-mention admission, with two hard caps."""

    max_rounds: int = 3
    max_messages: int = 20
    _: KW_ONLY
    transitions: TransitionRules | None = None

    kind = "round_robin_room"
    label = "Rounds with @-mention hand-offs"
    settings = ("max_rounds", "max_messages")

    def turn_bound(self, roster_size: int) -> int | None:
        """At most how many agent turns one activity can take (the human message counts)."""
        return min(self.max_messages - 1, self.max_rounds * roster_size)

    def __post_init__(self) -> None:
        check_positive_int("RoundRobinRoomPlanner", "max_rounds", self.max_rounds)
        check_positive_int("RoundRobinRoomPlanner", "max_messages", self.max_messages)
        if self.transitions is not None and not isinstance(self.transitions, TransitionRules):
            raise ConversationValueError(
                "RoundRobinRoomPlanner.transitions must be a TransitionRules or None, "
                f"got {type(self.transitions).__name__}"
            )

    def plan_next(self, roster: Sequence[str], transcript: Sequence[RoomEvent]) -> str | None:
        """The next speaker, or None when the activity is settled (or has not started)."""
        turn = self.plan_turn(roster, transcript)
        return None if turn is None else turn.speaker

    def plan_turn(
        self, roster: Sequence[str], transcript: Sequence[RoomEvent]
    ) -> PlannedTurn | None:
        """Like :meth:`plan_next`, with the round the next event belongs to."""
        names = check_roster(roster)
        if not names:
            return None
        if self.transitions is not None:
            self.transitions.check(names)
        # Only the current activity matters: find its opener from the end, so the cost follows
        # the activity's length, not the room's lifetime.
        start = opener_index(names, transcript)
        if start is None:
            return None
        activity = [e for e in transcript[start:] if e.kind == "message"]
        if len(activity) >= self.max_messages:
            return None
        rules = effective_rules(self.transitions, names, transcript)
        if rules is not self.transitions:
            return replace(self, transitions=rules)._plan_in(names, activity)
        return self._plan_in(names, activity)

    def _plan_in(self, names: tuple[str, ...], activity: list[RoomEvent]) -> PlannedTurn | None:
        previous = activity[-1].speaker
        # New turns go into the highest round present until it is complete; a later round only
        # exists if the round before admitted someone, so scanning forward always terminates.
        current = max(e.round for e in activity)
        for rnd in range(current, self.max_rounds):
            speaker = self._next_in_round(names, activity, rnd, previous)
            if speaker is not None:
                return PlannedTurn(
                    speaker, rnd, reason=_round_reason(names, activity, rnd, speaker)
                )
        return None

    def _next_in_round(
        self, roster: tuple[str, ...], activity: Sequence[RoomEvent], rnd: int, previous: str
    ) -> str | None:
        spoken = {e.speaker for e in activity if e.round == rnd}
        if rnd == 0:
            admitted = set(roster)
        else:
            members = set(roster)
            admitted = set()
            for event in activity:
                if event.round == rnd - 1 and event.speaker in members:
                    admitted.update(_admitted_by(event, roster))
        waiting = [name for name in roster if name in admitted and name not in spoken]
        if self.transitions is not None:
            waiting = self.transitions.filter(previous, waiting)
        return waiting[0] if waiting else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "max_rounds": self.max_rounds,
            "max_messages": self.max_messages,
            "transitions": None if self.transitions is None else self.transitions.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RoundRobinRoomPlanner:
        unknown = sorted(set(data) - {"kind", "max_rounds", "max_messages", "transitions"})
        if unknown:
            raise ConversationValueError(
                f"unknown field(s) {unknown} for planner kind {cls.kind!r}; "
                "allowed: max_rounds, max_messages, transitions"
            )
        return cls(
            max_rounds=data.get("max_rounds", 3),
            max_messages=data.get("max_messages", 20),
            transitions=transitions_from_dict(data.get("transitions")),
        )


def _round_reason(
    roster: tuple[str, ...], activity: Sequence[RoomEvent], rnd: int, speaker: str
) -> str:
    """Why the round-robin room planner gives ``speaker`` a turn in round ``rnd``."""
    if rnd == 0:
        return "round robin (round 0: everyone speaks once)"
    members = set(roster)
    for event in activity:
        if (
            event.round == rnd - 1
            and event.speaker in members
            and speaker in _admitted_by(event, roster)
        ):
            return f"mentioned by {event.speaker}"
    return f"admitted to round {rnd}"


def _admitted_by(event: RoomEvent, roster: Sequence[str]) -> list[str]:
    """The roster agents ``event`` admits to the next round: those it @-mentions, never its own
    speaker (an agent quoting a person's ``@reviewer`` does not admit itself by quoting)."""
    return [name for name in mentioned_roster(event.content, roster) if name != event.speaker]
