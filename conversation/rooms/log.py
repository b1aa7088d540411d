"""Reading a room's stored log as the pure core sees it.

Storage keeps one row per event (human, agent, pass, system) with a turn state; planners,
termination conditions and context windows read ``RoomEvent`` values. This module is the one
translation between the two, so every worker, every restart and every replay sees the same thing.
Each row is parsed once into its typed entry (``vocabulary.log``), whose ``reading`` says what it
is to the agents; this module only builds the core's values from it:

- a human message is a message by a non-roster speaker (it opens an activity);
- a finished agent turn (``done``) is the agent's message; a pass, or a turn that was stopped,
  abandoned or failed, is a pass (the turn was consumed); a stopped one is marked ``stopped``
  and counts toward no cap on agent turns (the agent never took it);
- open turns (``running``, ``waiting``, ``interrupted``) are left out: nothing is planned while
  one is open, and a turn's own prompt is built from the events before it;
- system events stay ``system`` (shown, never a turn), except those whose ``data.event`` is
  ``pick`` or ``summary`` (bookkeeping of the coordinator and of context summaries),
  ``resumed`` without ``by`` (an import's resume point, from which caps count), and the audit
  notices of a person's act on the room (``paused``, ``resumed``, ``forked`` with ``by``), a
  settings change (``config_changed``) and a breakpoint's pause (``data.by == "breakpoint"``):
  those are for people reading the log, never shown to agents, and change no count.

Rows are duck-typed (``seq, kind, speaker, content, round, state, visible_to, data,
input_tokens, output_tokens, cost``) so this module needs nothing from ``storage``; a
``LogEntry`` may stand for its row anywhere a row is taken.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

from conversation.context.window import event_tokens
from conversation.planning.events import EventLog, RoomEvent
from conversation.termination.budget import Spend
from conversation.termination.state import RoomState, TokenUsage
from conversation.text.copies import MessageIndex
from conversation.text.transcript import event_line
from vocabulary import (
    CONSUMED_TURN_STATES,
    OPEN_TURN_STATES,
    LogEntry,
    Notice,
    NoticeKind,
    Reading,
    entry_of,
)

#: Kept for their readers: the vocabulary's sets (``vocabulary.OPEN_TURN_STATES``, ...).
OPEN_STATES = frozenset(OPEN_TURN_STATES)
CONSUMED_STATES = CONSUMED_TURN_STATES
RESUMED = NoticeKind.RESUMED


def to_room_event(row: Any) -> RoomEvent | None:
    """The ``RoomEvent`` a stored row (or its parsed entry) stands for, or None: an open turn,
    an entry agents never read, or a summary turn (placed by the view, which knows the
    positions it covers). What the row is comes from its entry (``vocabulary.LogEntry``)."""
    entry = entry_of(row)
    reading = entry.reading
    if reading is Reading.MESSAGE:
        return RoomEvent(entry.speaker, entry.content, entry.round, visible_to=entry.private_to)
    if reading is Reading.PASS:
        return RoomEvent(
            entry.speaker,
            "",
            entry.round,
            True,
            visible_to=entry.private_to,
            stopped=entry.stopped,  # cut off by a person: no cap counts it
        )
    if reading is Reading.PICK:
        choice = entry.choice
        return RoomEvent(entry.speaker, choice or "", entry.round, choice is None, kind="pick")
    if reading is Reading.NOTICE:
        return RoomEvent(
            entry.speaker, entry.content, entry.round, kind="system", visible_to=entry.private_to
        )
    if reading is Reading.SUMMARY and not entry.is_turn:
        covers = entry.data.get("covers")
        return RoomEvent(
            entry.speaker,
            entry.content,
            entry.round,
            kind="summary",
            covers=tuple(covers) if covers else None,
        )
    return None


#: The log's view is the termination conditions' state: one type, read by conditions, planners
#: and prompt builders (``LogView`` is its old name here).
LogView = RoomState


class RoomLog:
    """A room's rows and their view (a :class:`RoomState`), kept current as rows arrive:
    extending it costs O(new rows), so a long room's next turn costs the same as a short room's.

    Rows are folded into the view in seq order up to the first open turn (which may still become
    a message at its place); rows after an open turn are read again on each ``view()`` (in
    practice none or one: at most one turn is open). ``log_view`` is this class used once, so
    every reader of a log, incremental or not, sees exactly the same view.
    """

    __slots__ = (
        "roster",
        "rows",
        "entries",
        "_events",
        "_seqs",
        "_usage",
        "_resumed_at",
        "_folded",
        "_lines",
        "_costs",
        "_tokens",
        "_members",
        "_turns",
        "_last_human",
        "_speakers",
        "_turns_before",
        "_spent",
        "copies",
    )

    def __init__(self, roster: Sequence[str], rows: Sequence[Any] = ()) -> None:
        self.roster = tuple(roster)
        self.rows: list[Any] = []
        self.entries: list[LogEntry] = []  # each row parsed once, as it arrives
        self._events: list[RoomEvent] = []
        self._seqs: list[int] = []
        self._usage: dict[int, TokenUsage] = {}
        self._resumed_at = 0
        self._folded = 0  # rows[:_folded] are in the view for good
        self._lines: list[str] = []
        self._costs: list[int] = []
        self._tokens = [0, 0]  # prompt, completion totals of the folded rows
        self._members = frozenset(self.roster)
        self._turns = 0  # roster agents' messages since the resume point
        # What EventLog carries (see planning.events): kept as events are folded in.
        self._last_human: int | None = None
        self._speakers: list[str] = []
        self._turns_before = [0]
        self._spent = [0, 0.0]  # tokens and dollars of every folded row (budgets)
        #: The messages by their words, for the copy check of the next reply (``text.copies``).
        self.copies = MessageIndex()
        self.extend(rows)

    @property
    def open_turn(self) -> Any | None:
        """The room's open turn (running, waiting, interrupted), if any: the first row not
        folded (O(1); at most one turn is open)."""
        return self.rows[self._folded] if self._folded < len(self.rows) else None

    @property
    def last_seq(self) -> int:
        return self.rows[-1].seq if self.rows else 0

    def extend(self, rows: Sequence[Any]) -> None:
        """Append rows (stored rows, or their entries) that follow the last one (in seq
        order)."""
        entries = [entry_of(row) for row in rows]
        self.rows.extend(entry.row for entry in entries)
        self.entries.extend(entries)
        self._fold()

    def spent(self) -> Spend:
        """Tokens and US dollars recorded on every row (each model call: turns, passes, picks,
        summaries), for budgets; O(1) but for rows after an open turn."""
        tokens, dollars = self._spent
        for row in self.rows[self._folded :]:
            tokens += (row.input_tokens or 0) + (row.output_tokens or 0)
            dollars += row.cost or 0.0
        return Spend(int(tokens), float(dollars))

    def replace_last(self, row: Any) -> None:
        """The last row as it is now (a claimed turn, committed)."""
        entry = entry_of(row)
        self.rows[-1] = entry.row
        self.entries[-1] = entry
        self._fold()

    def view(self, *, before_seq: int | None = None) -> RoomState:
        """The view of every row (or only those with ``seq < before_seq``)."""
        if before_seq is not None:
            return _view_of(self.roster, [e for e in self.entries if e.seq < before_seq])
        if self._folded < len(self.entries):  # rows after an open turn: a one-off view (rare)
            return _view_of(self.roster, self.entries)
        # Copies (C-speed, microseconds): a view handed out never changes as the log grows.
        seqs = tuple(self._seqs)
        return RoomState.of_checked(
            self.roster,
            EventLog.build(
                self._events, self.roster, self._last_human, self._speakers, self._turns_before
            ),
            usage=TokenUsage(*self._tokens),
            event_usage=dict(self._usage),
            resumed_at=self._resumed_at,
            seqs=seqs,
            last_seq=self.last_seq,
            lines=tuple(self._lines),
            costs=tuple(self._costs),
            turns=self._turns,
        )

    def _fold(self) -> None:
        entries = self.entries
        while self._folded < len(entries):
            entry = entries[self._folded]
            if entry.is_open:
                return
            row = entry.row
            self._spent[0] += (row.input_tokens or 0) + (row.output_tokens or 0)
            self._spent[1] += row.cost or 0.0
            known, resumed = len(self._events), self._resumed_at
            self._resumed_at = _fold_entry(
                entry, self._events, self._seqs, self._usage, self._resumed_at
            )
            if self._resumed_at != resumed:
                self._turns = 0  # counted again from the new resume point
            if len(self._events) > known:
                event = self._events[-1]
                if event.kind == "message":
                    if not event.passed:
                        self.copies.add(self._seqs[-1], event.content)
                    if event.speaker in self._members:
                        self._turns += 0 if event.stopped else 1
                        self._speakers.append(event.speaker)
                    else:
                        self._last_human = len(self._events) - 1
                self._turns_before.append(len(self._speakers))
                self._lines.append(event_line(self._seqs[-1], event))
                self._costs.append(event_tokens(event))
                self._tokens[0] += row.input_tokens or 0
                self._tokens[1] += row.output_tokens or 0
            self._folded += 1


def _fold_entry(
    entry: LogEntry,
    events: list[RoomEvent],
    seqs: list[int],
    usage: dict[int, TokenUsage],
    resumed_at: int,
) -> int:
    """Add one entry to a view under construction; returns the (possibly moved) resume point."""
    if isinstance(entry, Notice) and entry.is_resume_point:
        return len(events)
    event = to_room_event(entry)
    if event is None:
        event = _summary_event(entry, seqs)
    if event is None:
        return resumed_at
    row = entry.row
    if row.input_tokens or row.output_tokens:
        usage[len(events)] = TokenUsage(row.input_tokens or 0, row.output_tokens or 0)
    events.append(event)
    seqs.append(entry.seq)
    return resumed_at


def _view_of(roster: Sequence[str], entries: Sequence[LogEntry]) -> RoomState:
    events: list[RoomEvent] = []
    seqs: list[int] = []
    usage: dict[int, TokenUsage] = {}
    resumed_at = 0
    for entry in entries:
        resumed_at = _fold_entry(entry, events, seqs, usage, resumed_at)
    last = entries[-1].seq if entries else 0
    return RoomState(
        roster, events, event_usage=usage, resumed_at=resumed_at, seqs=seqs, last_seq=last
    )


def log_view(
    roster: Sequence[str], rows: Sequence[Any], *, before_seq: int | None = None
) -> RoomState:
    """The view of ``rows`` (stored rows or their entries, in seq order), optionally only those
    with ``seq < before_seq``."""
    entries = [entry_of(row) for row in rows]
    if before_seq is not None:
        entries = [e for e in entries if e.seq < before_seq]
    return _view_of(roster, entries)


def _summary_event(entry: LogEntry, seqs: Sequence[int]) -> RoomEvent | None:
    """A finished context-summary turn as a summary event. It stores what it covers as seqs
    (stable whatever is filtered out); the core reads positions in this view."""
    if entry.reading is not Reading.SUMMARY or not entry.is_done or not entry.content:
        return None
    covered = entry.data.get("covers_seqs")
    if not covered:
        return None
    covers = (_position(seqs, covered[0]), _position(seqs, covered[1]))
    return RoomEvent(entry.speaker, entry.content, entry.round, kind="summary", covers=covers)


def _position(seqs: Sequence[int], seq: int) -> int:
    """The position of the first event at or after ``seq`` (len(seqs) when none)."""
    return bisect.bisect_left(list(seqs), seq)


def covers_seqs(view: RoomState, covers: tuple[int, int]) -> list[int]:
    """A summary's covered positions ``[start, end)`` as seqs ``[start, end)``."""

    def seq_at(position: int) -> int:
        return view.seqs[position] if position < len(view.seqs) else view.last_seq + 1

    return [seq_at(covers[0]), seq_at(covers[1])]


def max_turns_of(termination: Mapping[str, Any] | None) -> int | None:
    """The smallest ``max_turns`` anywhere in a stored termination condition (for the hint)."""
    if not isinstance(termination, Mapping):
        return None
    found: list[int] = []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            if node.get("kind") == "max_turns" and isinstance(node.get("max_turns"), int):
                found.append(node["max_turns"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(termination)
    return min(found) if found else None


def turn_request_id(seq: int) -> str:
    """The deterministic request id of the agent turn at ``seq`` (the same turn, the same id)."""
    return f"turn-{seq}"


__all__ = [
    "covers_seqs",
    "event_line",
    "CONSUMED_STATES",
    "OPEN_STATES",
    "LogView",
    "RoomLog",
    "log_view",
    "max_turns_of",
    "to_room_event",
    "turn_request_id",
]
