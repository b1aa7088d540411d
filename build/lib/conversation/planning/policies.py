"""Turn policies beyond the round-robin room planner, all implementing ``plan_next(roster, transcript) -> str | None``.

Every policy is a frozen dataclass, a pure function of ``(roster, transcript)`` (randomness from
``random.Random(f"{seed}:{turn}")`` with the seed stored in the policy), serializable with
``to_dict()`` and restored by :func:`planner_from_dict`, and honours optional
:class:`~conversation.planning.transitions.TransitionRules` on every path: each policy ranks its candidates
and takes the first one the rules permit after the previous speaker (the latest message's
speaker), returning ``None`` rather than an excluded speaker.

**Conversation-API order policies** (:class:`RoundRobinPolicy`, :class:`FocalSpeakerPolicy`,
:class:`RandomPolicy`, :class:`RandomInclusivePolicy`) read only the *agent history*: the roster
agents' turns (messages and passes) in transcript order, across the whole transcript. Human
messages neither count as turns nor restart the order (a person stepping in does not make the
first agent speak twice), activities play no part, and a transcript without any human message
works (that is how ``Conversation`` uses them). The turn index seeding the random ones is the
number of agent turns so far. They never return ``None`` for a non-empty roster, except when
transition rules exclude everyone; caps come from termination conditions or ``max_turns``.

**Reactive policies** (:class:`AddressedPolicy`, :class:`FreePolicy`, and
:class:`~conversation.planning.coordinator.CoordinatorPolicy`) work within the current activity: from the
last human message on (the whole transcript when there is none). They keep a queue of agents
waiting to answer, replayed from the activity's messages: each message removes its speaker from the
queue (a pass too) and, unless it is a pass, appends the agents it invites, in roster order, that
are not already waiting. Addressed invites the roster agents @-mentioned in the message; Free
invites every other roster agent (so the floor is open until everyone invited passes). The first
waiting agent the rules permit speaks; ``None`` when no one waits. ``max_messages`` (default 20,
``None`` for no cap) bounds the activity like the round-robin room planner does, counting the human
message and passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, replace

from conversation.exceptions import ConversationValueError
from conversation.planning.base import (
    PolicyBase,
    activity_messages,
    check_seed,
    first_permitted,
    turn_rng,
)
from conversation.planning.coordinator import CoordinatorPolicy, InvalidPickError, parse_pick
from conversation.planning.events import RoomEvent, agent_turns, last_message
from conversation.planning.mentions import mentioned_roster
from conversation.planning.planner import PlannedTurn
from conversation.planning.transitions import TransitionRules, effective_rules

__all__ = [
    "AddressedPolicy",
    "CoordinatorPolicy",
    "FocalSpeakerPolicy",
    "FreePolicy",
    "InvalidPickError",
    "RandomInclusivePolicy",
    "RandomPolicy",
    "RoundRobinPolicy",
    "parse_pick",
]


def _rotation(roster: Sequence[str], last: str | None) -> list[str]:
    """``roster`` starting after ``last`` (``last`` itself at the end); from the top if None."""
    if last is None or last not in roster:
        return list(roster)
    index = roster.index(last)
    return [*roster[index + 1 :], *roster[: index + 1]]


class _HistoryPolicy(PolicyBase):
    """A policy of the agent history only; :meth:`choose` is shared with the conversation-API adapters."""

    __slots__ = ()

    def _choose(self, roster: tuple[str, ...], transcript: Sequence[RoomEvent]) -> str | None:
        previous = last_message(transcript)
        return self.choose(
            roster, agent_turns(roster, transcript), None if previous is None else previous.speaker
        )

    def choose(
        self, roster: Sequence[str], history: Sequence[str], previous: str | None = None
    ) -> str | None:
        """The next speaker after ``history`` (roster names); ``previous`` feeds the rules."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class RoundRobinPolicy(_HistoryPolicy):
    """The conversation API's default: the roster in order, continuing after the last agent who spoke."""

    _: KW_ONLY
    transitions: TransitionRules | None = None
    kind = "round_robin"
    label = "Round robin"
    settings = ()

    def __post_init__(self) -> None:
        self._check_transitions()

    def choose(
        self, roster: Sequence[str], history: Sequence[str], previous: str | None = None
    ) -> str | None:
        last = history[-1] if history else None
        return first_permitted(self.transitions, previous, _rotation(roster, last))

    def because(
        self, roster: tuple[str, ...], transcript: Sequence[RoomEvent], speaker: str
    ) -> str:
        turns = [e for e in transcript if e.kind == "message" and e.speaker in roster]
        if turns and turns[-1].passed:
            return "next in order after a pass"
        return "round robin"


@dataclass(frozen=True, slots=True)
class FocalSpeakerPolicy(_HistoryPolicy):
    """One agent (e.g. an auctioneer) speaks first and between every other agent's turn.

    The focal agent is ``focal_speaker`` (a name) when given, else ``roster[focal_speaker_index]``;
    ``None`` as the index means 0. The index is checked against the roster when planning. The
    others take their turns in roster order, continuing after the last of them who spoke.
    """

    focal_speaker_index: int | None = 0
    _: KW_ONLY
    focal_speaker: str | None = None
    transitions: TransitionRules | None = None
    kind = "focal"
    label = "Focal speaker (every other turn)"
    settings = ("focal_speaker",)

    def __post_init__(self) -> None:
        index = 0 if self.focal_speaker_index is None else self.focal_speaker_index
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise ConversationValueError(
                f"FocalSpeakerPolicy.focal_speaker_index must be an integer >= 0, got {index!r}; "
                "pass the position of the focal agent in the agent list"
            )
        object.__setattr__(self, "focal_speaker_index", index)
        if self.focal_speaker is not None and (
            not isinstance(self.focal_speaker, str) or not self.focal_speaker
        ):
            raise ConversationValueError(
                f"FocalSpeakerPolicy.focal_speaker must be an agent name or None, "
                f"got {self.focal_speaker!r}"
            )
        self._check_transitions()

    def focal_name(self, roster: Sequence[str]) -> str:
        """The focal agent's name; :class:`ConversationValueError` if it is not on the roster."""
        if self.focal_speaker is not None:
            if self.focal_speaker not in roster:
                raise ConversationValueError(
                    f"focal_speaker {self.focal_speaker!r} is not on the roster {list(roster)}; "
                    "use one of those names"
                )
            return self.focal_speaker
        index = self.focal_speaker_index or 0
        if index >= len(roster):
            raise ConversationValueError(
                f"focal_speaker_index={index} is out of range for {len(roster)} agent(s); "
                f"use 0..{len(roster) - 1}"
            )
        return roster[index]

    def plan_turn(
        self, roster: Sequence[str], transcript: Sequence[RoomEvent]
    ) -> PlannedTurn | None:
        """The next turn; when it is the focal agent's, also whom it addresses: the agent the
        policy lets speak right after it."""
        planned = super(FocalSpeakerPolicy, self).plan_turn(roster, transcript)
        if planned is None:
            return None
        names = tuple(roster)
        focal = self.focal_name(names)
        if planned.speaker != focal or len(names) < 2:
            return planned
        rules = effective_rules(self.transitions, names, transcript)
        policy = self if rules is self.transitions else replace(self, transitions=rules)
        after = policy.choose(names, [*agent_turns(names, transcript), focal], focal)
        addressee = after if after is not None and after != focal else None
        return PlannedTurn(planned.speaker, planned.round, addressee, planned.reason)

    def because(
        self, roster: tuple[str, ...], transcript: Sequence[RoomEvent], speaker: str
    ) -> str:
        if speaker == self.focal_name(roster):
            return "focal agent"
        return "next in order after the focal agent"

    def choose(
        self, roster: Sequence[str], history: Sequence[str], previous: str | None = None
    ) -> str | None:
        focal = self.focal_name(roster)
        others = [name for name in roster if name != focal]
        spoken_others = [name for name in history if name != focal]
        rotation = _rotation(others, spoken_others[-1] if spoken_others else None)
        if history and history[-1] == focal and others:
            preference = [*rotation, focal]
        else:
            preference = [focal, *rotation]
        return first_permitted(self.transitions, previous, preference)


def _draw(
    policy: RandomPolicy | RandomInclusivePolicy,
    turn: int,
    previous: str | None,
    tiers: Sequence[Sequence[str]],
) -> str | None:
    """A seeded draw from the first tier with a permitted candidate (the tiers are fallbacks)."""
    for tier in tiers:
        permitted = [
            n for n in tier if policy.transitions is None or policy.transitions.permits(previous, n)
        ]
        if permitted:
            # __post_init__ replaced a None seed with a concrete one.
            assert policy.seed is not None
            return turn_rng(policy.seed, turn).choice(permitted)
    return None


@dataclass(frozen=True, slots=True)
class RandomPolicy(_HistoryPolicy):
    """Seeded random order with no immediate repeat (one agent: that agent every turn).

    ``seed=None`` draws a concrete seed once, at construction; ``to_dict`` keeps it.
    """

    seed: int | str | None = None
    _: KW_ONLY
    transitions: TransitionRules | None = None
    kind = "random"
    label = "Random speaker (seeded)"
    settings = ("seed",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "seed", check_seed("RandomPolicy", self.seed))
        self._check_transitions()

    def choose(
        self, roster: Sequence[str], history: Sequence[str], previous: str | None = None
    ) -> str | None:
        last = history[-1] if history else None
        fresh = [name for name in roster if name != last]
        repeat = [last] if last is not None and last in roster else []
        return _draw(self, len(history), previous, [fresh, repeat])

    def because(
        self, roster: tuple[str, ...], transcript: Sequence[RoomEvent], speaker: str
    ) -> str:
        return "random draw (seeded)"


@dataclass(frozen=True, slots=True)
class RandomInclusivePolicy(_HistoryPolicy):
    """Seeded random order in cycles: everyone speaks once before anyone speaks again.

    No immediate repeat across a cycle boundary either (as in the conversation API). The cycle is replayed
    from the history: it closes once every roster agent has spoken in it.
    """

    seed: int | str | None = None
    _: KW_ONLY
    transitions: TransitionRules | None = None
    kind = "random_inclusive"
    label = "Random, everyone before repeats (seeded)"
    settings = ("seed",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "seed", check_seed("RandomInclusivePolicy", self.seed))
        self._check_transitions()

    def choose(
        self, roster: Sequence[str], history: Sequence[str], previous: str | None = None
    ) -> str | None:
        members = set(roster)
        seen: set[str] = set()
        for name in history:
            if name in members:
                seen.add(name)
            if seen >= members:
                seen = set()
        last = history[-1] if history else None
        unseen = [n for n in roster if n not in seen and n != last]
        others = [n for n in roster if n != last]
        repeat = [last] if last is not None and last in members else []
        return _draw(self, len(history), previous, [unseen, others, repeat])

    def because(
        self, roster: tuple[str, ...], transcript: Sequence[RoomEvent], speaker: str
    ) -> str:
        return "random draw (seeded) among those yet to speak this cycle"


class _QueuePolicy(PolicyBase):
    """Replays the activity's answer queue (see the module docstring)."""

    __slots__ = ()
    max_messages: int | None

    def _invited(self, roster: Sequence[str], event: RoomEvent) -> list[str]:
        raise NotImplementedError

    def waiting(self, roster: Sequence[str], transcript: Sequence[RoomEvent]) -> list[str]:
        """The agents still waiting to answer in the current activity, in queue order."""
        queue: list[str] = []
        for event in activity_messages(roster, transcript):
            if event.speaker in queue:
                queue.remove(event.speaker)
            if not event.passed:
                for name in self._invited(roster, event):
                    if name != event.speaker and name not in queue:
                        queue.append(name)
        return queue

    def _choose(self, roster: tuple[str, ...], transcript: Sequence[RoomEvent]) -> str | None:
        activity = activity_messages(roster, transcript)
        if self.max_messages is not None and len(activity) >= self.max_messages:
            return None
        previous = activity[-1].speaker if activity else None
        return first_permitted(self.transitions, previous, self.waiting(roster, transcript))

    def inviter(self, roster: Sequence[str], transcript: Sequence[RoomEvent], name: str) -> str:
        """Who put ``name`` in the queue it is answering now (the latest such message)."""
        who = ""
        for event in activity_messages(roster, transcript):
            if event.speaker == name:
                who = ""
            elif not event.passed and not who and name in self._invited(roster, event):
                who = event.speaker
        return who


@dataclass(frozen=True, slots=True)
class AddressedPolicy(_QueuePolicy):
    """Only agents @-mentioned answer (AddressedTurnPolicy: docs/design.md, "Turn policies and composable termination"), each once per mention."""

    max_messages: int | None = 20
    _: KW_ONLY
    transitions: TransitionRules | None = None
    kind = "addressed"
    label = "Only the @-mentioned answer"
    settings = ("max_messages",)

    def __post_init__(self) -> None:
        self._check_cap("max_messages", self.max_messages)
        self._check_transitions()

    def _invited(self, roster: Sequence[str], event: RoomEvent) -> list[str]:
        return mentioned_roster(event.content, roster)

    def because(
        self, roster: tuple[str, ...], transcript: Sequence[RoomEvent], speaker: str
    ) -> str:
        who = self.inviter(roster, transcript, speaker)
        return f"mentioned by {who}" if who else "mentioned"


@dataclass(frozen=True, slots=True)
class FreePolicy(_QueuePolicy):
    """Every agent may answer each message, in roster order, once (a pass declines)."""

    max_messages: int | None = 20
    _: KW_ONLY
    transitions: TransitionRules | None = None
    kind = "free"
    label = "Open floor (everyone may answer)"
    settings = ("max_messages",)

    def __post_init__(self) -> None:
        self._check_cap("max_messages", self.max_messages)
        self._check_transitions()

    def _invited(self, roster: Sequence[str], event: RoomEvent) -> list[str]:
        return list(roster)

    def because(
        self, roster: tuple[str, ...], transcript: Sequence[RoomEvent], speaker: str
    ) -> str:
        who = self.inviter(roster, transcript, speaker)
        return f"open floor: answering {who}" if who else "open floor"
