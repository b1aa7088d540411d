"""Room events and the *activity* they form (docs/design.md, "Rooms, activities and mentions").

A :class:`RoomEvent` is one immutable entry of a room's transcript. The four seed fields
(``speaker``, ``content``, ``round``, ``passed``) keep their names, order and defaults; the optional
keyword-only fields add what rooms need beyond the seed:

- ``kind``: ``"message"`` (the default: a human or agent message, or a pass), ``"pick"`` (a
  coordinator named the next speaker: ``content`` is the name, ``passed=True`` means "no one"),
  ``"summary"`` (a stored summary of earlier events, see :mod:`conversation.context.window`) or
  ``"system"`` (a notice from the room itself, e.g. why a draft was denied).
- ``visible_to``: ``None`` (everyone) or the names that may see the event (a private message).
- ``covers``: for a summary, the half-open range ``(start, end)`` of transcript positions it
  summarises.
- ``stopped``: a pass that is a turn a person cut off with *Stop* before the agent's message. The
  rotation moves on as after any pass, but the turn counts toward no cap on agent turns (the agent
  did not take it).

Only message events take part in turn taking: a pick, summary or system event never opens an
activity, never counts against a cap and is never a turn.

**Activities.** The *human message* of a transcript is a message event whose speaker is not on the
roster. The current activity is the slice from the last human message on (inclusive). Helpers here
compute it once so every planner, condition and context policy agrees on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal

from conversation.exceptions import ConversationValueError
from vocabulary import log as log_model

__all__ = [
    "ROOM_EVENT_KINDS",
    "RoomEventKind",
    "EventLog",
    "RoomEvent",
    "activity_start",
    "agent_turns",
    "agent_turns_since",
    "check_roster",
    "current_activity",
    "last_message",
    "opener_index",
]

RoomEventKind = Literal["message", "pick", "summary", "system"]
ROOM_EVENT_KINDS: tuple[str, ...] = ("message", "pick", "summary", "system")
_FIELDS = ("speaker", "content", "round", "passed", "kind", "visible_to", "covers", "stopped")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class RoomEvent:
    """One immutable entry of a room transcript: frozen, hashable, safe to persist and replay.

    ``passed=True`` means the speaker was scheduled and passed: the turn is consumed. Construction
    validates every field and raises :class:`ConversationValueError` naming the field.
    """

    speaker: str
    content: str = ""
    round: int = 0
    passed: bool = False
    _: KW_ONLY
    kind: RoomEventKind = "message"
    visible_to: tuple[str, ...] | None = None
    covers: tuple[int, int] | None = None
    stopped: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.speaker, str) or not self.speaker:
            raise ConversationValueError(
                f"RoomEvent.speaker must be a non-empty string, got {self.speaker!r}; "
                "use the agent's name or the person's id"
            )
        if not isinstance(self.content, str):
            raise ConversationValueError(
                f"RoomEvent.content must be a string, got {type(self.content).__name__}"
            )
        if not _is_int(self.round) or self.round < 0:
            raise ConversationValueError(
                f"RoomEvent.round must be a non-negative integer, got {self.round!r}"
            )
        if not isinstance(self.passed, bool):
            raise ConversationValueError(
                f"RoomEvent.passed must be True or False, got {self.passed!r}"
            )
        if not isinstance(self.stopped, bool) or (self.stopped and not self.passed):
            raise ConversationValueError(
                f"RoomEvent.stopped must be True or False, and True only for a pass; got "
                f"stopped={self.stopped!r}, passed={self.passed!r}"
            )
        if self.kind not in ROOM_EVENT_KINDS:
            raise ConversationValueError(
                f"RoomEvent.kind must be one of {', '.join(ROOM_EVENT_KINDS)}; got {self.kind!r}"
            )
        if self.visible_to is not None:
            audience = self.visible_to
            if isinstance(audience, str) or not isinstance(audience, Iterable):
                raise ConversationValueError(
                    f"RoomEvent.visible_to must be None or a list of names, got {audience!r}; "
                    "wrap a single name in a list"
                )
            names = tuple(audience)
            if not all(isinstance(n, str) and n for n in names):
                raise ConversationValueError(
                    f"RoomEvent.visible_to must hold non-empty names, got {names!r}"
                )
            # Normalised to a tuple so the event stays hashable whatever the caller passed.
            object.__setattr__(self, "visible_to", names)
        self._check_covers()

    def _check_covers(self) -> None:
        if self.covers is None:
            if self.kind == "summary":
                raise ConversationValueError(
                    "a summary RoomEvent needs covers=(start, end): the transcript positions it "
                    "summarises"
                )
            return
        if self.kind != "summary":
            raise ConversationValueError(
                f"RoomEvent.covers is only for kind='summary', got kind={self.kind!r}"
            )
        pair = tuple(self.covers)
        if len(pair) != 2 or not all(_is_int(p) for p in pair) or not 0 <= pair[0] <= pair[1]:
            raise ConversationValueError(
                f"RoomEvent.covers must be (start, end) with 0 <= start <= end, got {self.covers!r}"
            )
        object.__setattr__(self, "covers", pair)

    @property
    def text(self) -> str:
        """Alias of ``content`` (conversation-API stopping functions read ``statements[-1].text``)."""
        return self.content

    @property
    def is_message(self) -> bool:
        """True for messages and passes: the only events that take part in turn taking."""
        return self.kind == "message"

    def visible_for(self, name: str) -> bool:
        """Whether ``name`` may see this event (its author always may): the log's one rule,
        ``vocabulary.log.may_see``, which every reader of a room's log asks."""
        return log_model.may_see(name, self.speaker, self.visible_to)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_dict` restores an equal event."""
        return {
            "speaker": self.speaker,
            "content": self.content,
            "round": self.round,
            "passed": self.passed,
            "kind": self.kind,
            "visible_to": None if self.visible_to is None else list(self.visible_to),
            "covers": None if self.covers is None else list(self.covers),
            "stopped": self.stopped,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RoomEvent:
        """Restore an event; unknown keys are rejected (they would be silently lost)."""
        if not isinstance(data, Mapping):
            raise ConversationValueError(
                f"a RoomEvent dict must be a mapping, got {type(data).__name__}"
            )
        unknown = sorted(set(data) - set(_FIELDS))
        if unknown:
            raise ConversationValueError(
                f"unknown RoomEvent field(s) {unknown}; allowed: {', '.join(_FIELDS)}"
            )
        if "speaker" not in data:
            raise ConversationValueError("a RoomEvent dict needs a 'speaker'")
        values = dict(data)
        if values.get("visible_to") is not None:
            values["visible_to"] = tuple(values["visible_to"])
        if values.get("covers") is not None:
            values["covers"] = tuple(values["covers"])
        return cls(**values)


def check_roster(roster: Sequence[str]) -> tuple[str, ...]:
    """The roster as a tuple of unique, non-empty names, or :class:`ConversationValueError`."""
    if isinstance(roster, str):
        raise ConversationValueError(
            f"roster must be a list of names, got the string {roster!r}; wrap it in a list"
        )
    names = tuple(roster)
    seen: set[str] = set()
    for name in names:
        if not isinstance(name, str) or not name:
            raise ConversationValueError(f"roster names must be non-empty strings, got {name!r}")
        if name in seen:
            raise ConversationValueError(f"roster names must be unique; {name!r} appears twice")
        seen.add(name)
    return names


class EventLog(tuple):  # type: ignore[type-arg]
    """An immutable transcript (a tuple of :class:`RoomEvent`) that carries what its keeper
    worked out incrementally for ``roster``: the position of the last human message, the roster
    agents' turns in order, and how many of them precede each position.

    A room's log builds one per view as events arrive (O(new events)), so the helpers below answer
    in O(1) for a long room instead of scanning it on every turn; they fall back to a scan for any
    other sequence, or for another roster. Use :meth:`of` to build one from scratch.
    """

    roster: tuple[str, ...]
    last_human: int | None
    speakers: tuple[str, ...]
    turns_before: tuple[int, ...]  # turns_before[i]: roster agents' turns in events[:i]

    @classmethod
    def build(
        cls,
        events: Sequence[RoomEvent],
        roster: tuple[str, ...],
        last_human: int | None,
        speakers: Sequence[str],
        turns_before: Sequence[int],
    ) -> EventLog:
        """From facts the caller kept (``turns_before`` has one entry per event plus one)."""
        log = cls(events)
        log.roster, log.last_human = roster, last_human
        log.speakers, log.turns_before = tuple(speakers), tuple(turns_before)
        return log

    @classmethod
    def of(cls, roster: Sequence[str], events: Sequence[RoomEvent]) -> EventLog:
        """Work the facts out with one scan of ``events``."""
        names = tuple(roster)
        members = set(names)
        last_human: int | None = None
        speakers: list[str] = []
        turns_before = [0]
        for index, event in enumerate(events):
            if event.kind == "message":
                if event.speaker in members:
                    speakers.append(event.speaker)
                else:
                    last_human = index
            turns_before.append(len(speakers))
        return cls.build(events, names, last_human, speakers, turns_before)

    def knows(self, roster: Sequence[str]) -> bool:
        return self.roster == tuple(roster)


def _known(roster: Sequence[str], events: Sequence[RoomEvent]) -> EventLog | None:
    return events if type(events) is EventLog and events.knows(roster) else None


def opener_index(roster: Sequence[str], events: Sequence[RoomEvent]) -> int | None:
    """Position of the last human (non-roster) message, or None when there is none."""
    known = _known(roster, events)
    if known is not None:
        return known.last_human
    members = set(roster)
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.kind == "message" and event.speaker not in members:
            return index
    return None


def activity_start(roster: Sequence[str], events: Sequence[RoomEvent]) -> int:
    """Where the current activity starts: the last human message, or 0 when there is none.

    Round-robin room planners treat "no human message" as "no activity" (see ``opener_index``); the
    conversation-API style policies and the termination conditions treat the whole transcript as one
    activity, which is what this returns.
    """
    start = opener_index(roster, events)
    return 0 if start is None else start


def current_activity(
    roster: Sequence[str], events: Sequence[RoomEvent]
) -> tuple[int, Sequence[RoomEvent]]:
    """``(start, events[start:])`` for the current activity (see :func:`activity_start`)."""
    start = activity_start(roster, events)
    return start, events[start:]


def agent_turns(roster: Sequence[str], events: Iterable[RoomEvent]) -> list[str]:
    """Speakers of the roster agents' turns (messages and passes), in transcript order."""
    if type(events) is EventLog and events.knows(roster):
        return list(events.speakers)
    members = set(roster)
    return [e.speaker for e in events if e.kind == "message" and e.speaker in members]


def agent_turns_since(roster: Sequence[str], events: Sequence[RoomEvent], start: int) -> int:
    """How many roster agents' turns (messages and passes) ``events[start:]`` holds."""
    known = _known(roster, events)
    if known is not None:
        return known.turns_before[-1] - known.turns_before[min(start, len(events))]
    members = set(roster)
    return sum(1 for e in events[start:] if e.kind == "message" and e.speaker in members)


def last_message(events: Sequence[RoomEvent]) -> RoomEvent | None:
    """The latest message event (a pass included), or None."""
    for index in range(len(events) - 1, -1, -1):
        if events[index].kind == "message":
            return events[index]
    return None
