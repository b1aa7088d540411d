"""A room's log read through one typed model: each stored event row is parsed once into a
:data:`LogEntry`, and every reader asks the entry what it means instead of testing words.

``LogEntry = HumanMessage | AgentTurn | Pass | Notice`` (frozen, slotted dataclasses, each with a
literal ``kind``; match on the type). :func:`entry_of` is the one parser; rows are duck-typed
(``seq, kind, speaker, content, round, state, visible_to, data``; a turn's error, usage and
timestamps stay on ``entry.row`` for the readers that show them). What an entry guarantees:

- **who may see it** (:meth:`visible_to`): everyone when it is public, else the names it is
  private to and its own speaker. The room's agents, a study's participants, the live view and
  the exports all ask this one method;
- **what it is to the room's agents** (:attr:`reading`, a :class:`Reading`): a message, a pass, a
  coordinator's pick, a context summary, a notice, or nothing they read (an open turn, a
  person's act on the room, a pick that never happened). ``conversation.rooms.log`` turns it into
  the core's ``RoomEvent`` without looking at a kind again;
- **where a turn is** (:attr:`is_open`, :attr:`is_draft`, :attr:`is_done`, :attr:`consumed`,
  :attr:`stopped`), whether it **published a message** (:attr:`is_message`) or **passed**
  (:attr:`passed`: a pass, a turn stopped, abandoned or failed, a pick of no one);
- **who acted** (:attr:`by`): a person's message's poster, the last moderation decision on a
  turn, the person behind a notice; and **who picked** a speaker (:attr:`picked_by`).

Standard library only: ``storage`` reads its rows through this model too (provenance, frames).
How a turn kind is *shown* and *exported* is its handler's (``conversation.rooms.engine.kinds``);
what it *means* is here, with the words.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, TypeAlias

from vocabulary.words import (
    AUDIT_NOTICES,
    CONSUMED_TURN_STATES,
    KIND_KEY,
    OPEN_TURN_STATES,
    OPERATOR_NOTICES,
    EventKind,
    NoticeKind,
    TurnKind,
    TurnState,
    kind_of,
)

#: The ``data["by"]`` of a pause made by a breakpoint (not a person): never shown to agents.
BREAKPOINT_ACTOR: Final = "breakpoint"

_NO_DATA: Final[Mapping[str, Any]] = MappingProxyType({})
_OPEN: Final = frozenset(OPEN_TURN_STATES)


def may_see(name: str, speaker: str, private_to: Collection[str] | None) -> bool:
    """The one visibility rule of a room's log: ``name`` may see what ``speaker`` said when it
    is public (``private_to`` None), private to ``name``, or ``name`` said it. The core's
    ``RoomEvent.visible_for`` and every entry's :meth:`visible_to` are this function."""
    return private_to is None or name == speaker or name in private_to


class Reading(StrEnum):
    """What a log entry is to the room's agents (the engine's view of the log)."""

    MESSAGE = "message"
    """Said to the room: a person's message, or an agent's finished turn."""
    PASS = "pass"
    """A turn that said nothing (a pass, or a turn stopped, abandoned or failed)."""
    PICK = "pick"
    """A coordinator named the next speaker (or no one): bookkeeping, never said."""
    SUMMARY = "summary"
    """A summary of earlier messages, shown instead of them."""
    NOTICE = "notice"
    """A notice from the room itself (the room settled, terminated, was stopped...)."""
    UNSEEN = "unseen"
    """Nothing agents read: an open turn, a person's act on the room, a pick never made."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    """What every entry has (see the module doc); ``row`` is the stored row itself."""

    kind: ClassVar[EventKind]
    is_turn: ClassVar[bool] = False

    row: Any = field(repr=False, compare=False)
    seq: int
    speaker: str
    content: str
    round: int
    private_to: tuple[str, ...] | None
    """``None``: public; else the names it is private to (its speaker sees it too)."""
    data: Mapping[str, Any] = field(repr=False, compare=False)

    def visible_to(self, name: str) -> bool:
        """Whether ``name`` (an agent, a seat, a person) may see this entry (:func:`may_see`)."""
        return may_see(name, self.speaker, self.private_to)

    @property
    def is_private(self) -> bool:
        return self.private_to is not None

    @property
    def recorded(self) -> TurnKind | NoticeKind | None:
        """The kind recorded in the row's ``data["event"]`` (None: none, or an unknown word)."""
        return kind_of(self.data)

    @property
    def reading(self) -> Reading:
        return Reading.UNSEEN

    # Turn facts, False for entries that are not turns (overridden by ``_Turn``).
    @property
    def is_open(self) -> bool:
        """A turn still under way (running, waiting for a person, interrupted)."""
        return False

    @property
    def is_draft(self) -> bool:
        return False

    @property
    def is_running(self) -> bool:
        return False

    @property
    def is_interrupted(self) -> bool:
        return False

    @property
    def is_done(self) -> bool:
        return False

    @property
    def failed(self) -> bool:
        return False

    @property
    def consumed(self) -> bool:
        return False

    @property
    def stopped(self) -> bool:
        return False

    @property
    def is_message(self) -> bool:
        """A message the room's agents and people read as said (a person's message, an agent's
        finished turn that published one)."""
        return False

    @property
    def passed(self) -> bool:
        return False

    @property
    def choice(self) -> str | None:
        """The speaker a coordinator's pick named (None: no one, or not a pick)."""
        return None

    @property
    def decisions(self) -> tuple[Mapping[str, Any], ...]:
        """Every ``{"verb", "by", "at"}`` a person recorded on it (approve, edit, deny, pick,
        stop, resume, abandon), in order."""
        return _mappings(self.data.get("decisions"))

    @property
    def decision(self) -> Mapping[str, Any] | None:
        """An agent's decision before it spoke (a hand-raising turn): ``should_respond``,
        ``reason``, ``ready_to_end``, and ``by`` (``model``, or the room's rule that held it)."""
        value = self.data.get("decision")
        return value if isinstance(value, Mapping) else None

    @property
    def denials(self) -> tuple[Mapping[str, Any], ...]:
        """Every denied draft of a turn (``draft``, ``reason``, ``by``), in order."""
        return _mappings(self.data.get("denials"))

    @property
    def candidates(self) -> tuple[Mapping[str, Any], ...]:
        """A drafted turn's candidates (``speaker``, ``text``, ``passed``, ``chosen``)."""
        return _mappings(self.data.get("candidates"))

    @property
    def by(self) -> str | None:
        """Who did the human act this entry records: the last decision's person, else the
        ``data["by"]`` of the act (a notice's), else None (no person acted)."""
        decisions = self.decisions
        if decisions and decisions[-1].get("by"):
            return str(decisions[-1]["by"])
        by = self.data.get("by")
        return str(by) if by else None

    @property
    def picked_by(self) -> str | None:
        """Who chose the speaker: the picker recorded with a coordinator's drafts, or the
        coordinator agent whose own turn (or notice) was a pick."""
        picker = self.data.get("picked_by")
        if picker:
            return str(picker)
        return self.speaker if self.recorded is TurnKind.PICK else None


@dataclass(frozen=True, slots=True, kw_only=True)
class HumanMessage(_Entry):
    """A person's message (it opens an activity)."""

    kind: ClassVar[Literal[EventKind.HUMAN]] = EventKind.HUMAN
    turn_kind: ClassVar[None] = None
    state: ClassVar[None] = None

    @property
    def reading(self) -> Reading:
        return Reading.MESSAGE

    @property
    def is_message(self) -> bool:
        return True

    @property
    def by(self) -> str:
        """Who posted it: the person recorded in ``data["by"]`` (a moderator posting for a
        seat, a participant), else its speaker."""
        return str(self.data.get("by") or self.speaker)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Turn(_Entry):
    """An agent's turn (``agent`` or ``pass`` row): its kind and state."""

    is_turn: ClassVar[bool] = True

    turn_kind: TurnKind
    state: TurnState

    @property
    def is_open(self) -> bool:
        return self.state in _OPEN

    @property
    def is_draft(self) -> bool:
        """A draft waiting for a person (approve, edit, deny; or pick among candidates)."""
        return self.state is TurnState.WAITING

    @property
    def is_running(self) -> bool:
        return self.state is TurnState.RUNNING

    @property
    def is_interrupted(self) -> bool:
        """Its retries spent or its process gone: a person resumes or abandons it."""
        return self.state is TurnState.INTERRUPTED

    @property
    def is_done(self) -> bool:
        return self.state is TurnState.DONE

    @property
    def failed(self) -> bool:
        return self.state is TurnState.FAILED

    @property
    def consumed(self) -> bool:
        """Ended without saying anything (stopped, abandoned, failed): it counts as a pass."""
        return self.state in CONSUMED_TURN_STATES

    @property
    def stopped(self) -> bool:
        """Cut off by a person (Stop, Pass): it counts toward no cap on agent turns."""
        return self.state is TurnState.STOPPED

    @property
    def choice(self) -> str | None:
        """The speaker a pick named (``data["pick"]`` of a coordinator's pick turn,
        ``data["picked"]`` of a drafted turn); None: no one (or no pick recorded)."""
        data = self.data
        value = data["pick"] if "pick" in data else data.get("picked")
        return None if value is None else str(value)

    @property
    def reading(self) -> Reading:
        if self.state in _OPEN:
            return Reading.UNSEEN
        return _TURN_READINGS[self.turn_kind](self)

    @property
    def said_nothing(self) -> bool:
        """A pass, or a turn that ended without a message (stopped, abandoned, failed)."""
        return self.kind is EventKind.PASS or self.state in CONSUMED_TURN_STATES

    @property
    def passed(self) -> bool:
        """Published nothing: a pass, a turn stopped, abandoned or failed, a pick of no one."""
        if self.said_nothing:
            return True
        return self.state not in _OPEN and self.reading is Reading.PICK and self.choice is None

    @property
    def is_message(self) -> bool:
        return self.reading is Reading.MESSAGE


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentTurn(_Turn):
    """An agent's turn (``agent`` row): running, a draft, a message, or ended without one."""

    kind: ClassVar[Literal[EventKind.AGENT]] = EventKind.AGENT


@dataclass(frozen=True, slots=True, kw_only=True)
class Pass(_Turn):
    """A turn in which the agent chose to say nothing (``pass`` row)."""

    kind: ClassVar[Literal[EventKind.PASS]] = EventKind.PASS


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice(_Entry):
    """A notice from the room (``system`` row): what it records (``notice``: a ``NoticeKind``,
    or the ``TurnKind`` of a coordinator's pick or a summary stored as a notice) and who did it
    (``by``)."""

    kind: ClassVar[Literal[EventKind.SYSTEM]] = EventKind.SYSTEM
    turn_kind: ClassVar[None] = None
    state: ClassVar[None] = None

    notice: NoticeKind | TurnKind | None

    @property
    def for_people(self) -> bool:
        """How people ran the room (a pause, resume or fork by a person, new settings, a
        breakpoint's pause): shown to people, never to agents, and it changes no count."""
        notice, data = self.notice, self.data
        if notice in OPERATOR_NOTICES or data.get("by") == BREAKPOINT_ACTOR:
            return True
        return notice in AUDIT_NOTICES and "by" in data

    @property
    def is_resume_point(self) -> bool:
        """An import's resume point (``resumed`` with no person): turn caps count from here."""
        return self.notice is NoticeKind.RESUMED and "by" not in self.data

    @property
    def choice(self) -> str | None:
        """A pick notice's chosen speaker (its content); None: no one."""
        return None if self.data.get("passed") else self.content

    @property
    def reading(self) -> Reading:
        if self.for_people:
            return Reading.UNSEEN
        if self.notice is TurnKind.PICK:
            return Reading.PICK
        if self.notice is TurnKind.SUMMARY:
            return Reading.SUMMARY
        return Reading.NOTICE


LogEntry: TypeAlias = HumanMessage | AgentTurn | Pass | Notice
"""One entry of a room's log, parsed (see the module doc)."""
TurnEntry: TypeAlias = AgentTurn | Pass
"""An agent's turn, whatever it became (``isinstance(entry, TurnEntry)``)."""


def _speaks(turn: _Turn) -> Reading:
    return Reading.PASS if turn.said_nothing else Reading.MESSAGE


def _drafts(turn: _Turn) -> Reading:
    # Every eligible agent drafted; the chosen draft is its agent's message. No draft chosen:
    # "no one", a pick (the activity settles); the drafts themselves are never said.
    return Reading.PICK if turn.data.get("picked") is None else _speaks(turn)


def _picks(turn: _Turn) -> Reading:
    # A coordinator's pick asked of its model as a turn: bookkeeping once made, else nothing.
    return Reading.PICK if turn.state is TurnState.DONE else Reading.UNSEEN


def _summarises(turn: _Turn) -> Reading:
    return Reading.SUMMARY


#: What a finished turn of each kind is to the room's agents (a new kind adds its line).
_TURN_READINGS: Final[dict[TurnKind, Callable[[_Turn], Reading]]] = {
    TurnKind.SPEAK: _speaks,
    TurnKind.CANDIDATES: _drafts,
    TurnKind.PICK: _picks,
    TurnKind.SUMMARY: _summarises,
    TurnKind.HAND: _speaks,
}


def _mappings(values: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(values, list | tuple):
        return ()
    return tuple(v for v in values if isinstance(v, Mapping))


def entry_of(row: Any) -> LogEntry:
    """The typed entry of one stored event row (duck-typed; see the module doc). A turn with no
    recorded state is done (rows imported or written before turns had states). Raises
    ``ValueError`` for a kind no entry has, or a turn state no turn has (storage writes
    neither)."""
    if isinstance(row, _Entry):
        return row  # type: ignore[return-value]
    kind = row.kind
    raw = row.data
    data = raw if isinstance(raw, Mapping) else _NO_DATA
    visible = row.visible_to
    private = tuple(visible) if visible else None
    content, round_ = row.content or "", row.round or 0
    made = _TURNS.get(kind)
    if made is not None:
        word = data.get(KIND_KEY)
        turn_kind = _TURN_KIND_OF.get(word, TurnKind.SPEAK) if isinstance(word, str) else _SPEAK
        state = _STATE_OF.get(row.state or TurnState.DONE)
        if state is None:
            raise ValueError(f"turn {row.seq} has state {row.state!r}; states: {list(TurnState)}")
        return made(
            row=row,
            seq=row.seq,
            speaker=row.speaker,
            content=content,
            round=round_,
            private_to=private,
            data=data,
            turn_kind=turn_kind,
            state=state,
        )
    if kind == EventKind.HUMAN:
        return HumanMessage(
            row=row,
            seq=row.seq,
            speaker=row.speaker,
            content=content,
            round=round_,
            private_to=private,
            data=data,
        )
    if kind == EventKind.SYSTEM:
        return Notice(
            row=row,
            seq=row.seq,
            speaker=row.speaker,
            content=content,
            round=round_,
            private_to=private,
            data=data,
            notice=kind_of(data),
        )
    raise ValueError(f"an event of kind {kind!r} is not a log entry; kinds: {list(EventKind)}")


_TURNS: Final[dict[str, type[AgentTurn] | type[Pass]]] = {
    EventKind.AGENT: AgentTurn,
    EventKind.PASS: Pass,
}
_SPEAK: Final = TurnKind.SPEAK
_TURN_KIND_OF: Final[dict[str, TurnKind]] = {k.value: k for k in TurnKind if k is not _SPEAK}
_STATE_OF: Final[dict[str, TurnState]] = {s.value: s for s in TurnState}


def entries_of(rows: Iterable[Any]) -> list[LogEntry]:
    """:func:`entry_of` of each row, in order."""
    return [entry_of(row) for row in rows]


__all__ = [
    "BREAKPOINT_ACTOR",
    "AgentTurn",
    "HumanMessage",
    "LogEntry",
    "Notice",
    "Pass",
    "Reading",
    "TurnEntry",
    "entries_of",
    "entry_of",
    "may_see",
]
