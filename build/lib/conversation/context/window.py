"""What each agent is shown on its turn (per-agent context: docs/design.md, "Turn policies and composable termination").

Guarantees of :func:`build_context`, a pure function of its arguments:

- **Visibility.** An agent sees an event when ``visible_to`` is None, names it, or it wrote it
  (:meth:`RoomEvent.visible_for`). Message and system events are shown; pick events (bookkeeping)
  never are; a summary event is shown in place of the events it covers.
- **Window.** :class:`ContextPolicy` keeps the latest ``max_messages`` events and/or as many of the
  latest events as fit in ``max_tokens`` (a contiguous run, newest first). The persona and the human
  message that opened the current activity (when the agent may see it) are always kept, outside
  the count but inside the token estimate; when they alone exceed the budget nothing else is shown.
- **Summary.** The latest summary event the agent may see replaces the events in its ``covers``
  range (the opener stays). Summaries are made by a model elsewhere: :func:`summary_request` says
  what text needs summarising (public events that fell out of the window and no summary covers,
  once at least ``summary_batch`` of them piled up, extending the previous summary), and
  :meth:`SummaryRequest.to_event` builds the summary event to store, so it is computed once.
  Summaries cover public events only: a private message is never copied into a shared summary.
- **Record.** :attr:`AgentContext.saw` lists what the turn was shown (positions, or the ``seqs``
  passed in), in display order, for the turn's ``saw`` field.
- **Turns left.** :class:`TurnsLeft` (``current_turn``, ``max_turns``, ``remaining``) for prompts.

Tokens are estimated, not counted, with ``conversation.text.tokens`` (an estimate that errs high,
since it bounds what is sent to a model): an event costs its speaker and content estimates plus
:data:`EVENT_OVERHEAD_TOKENS` for its framing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent, agent_turns, check_roster, opener_index
from conversation.planning.planner import check_positive_int
from conversation.text.tokens import (
    CHARS_PER_TOKEN,
    MESSAGE_OVERHEAD_TOKENS,
    estimate_tokens,
    prompt_tokens,
)
from conversation.text.transcript import render_record

__all__ = [
    "CHARS_PER_TOKEN",
    "EVENT_OVERHEAD_TOKENS",
    "SUMMARY_SPEAKER",
    "AgentContext",
    "ContextPolicy",
    "SummaryRequest",
    "TurnsLeft",
    "build_context",
    "context_policy_from_dict",
    "LINE_OVERHEAD_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "estimate_tokens",
    "event_tokens",
    "prompt_tokens",
    "summary_request",
    "turns_left",
    "visible_positions",
]

EVENT_OVERHEAD_TOKENS = 12  # a message's header line ("[seq 12] Name (flags):") and its breaks
LINE_OVERHEAD_TOKENS = 2  # the "| " that quotes each line of its text
SUMMARY_SPEAKER = "summary"
_SHOWN_KINDS = ("message", "system")


def event_tokens(event: RoomEvent) -> int:
    """Tokens an event takes in a prompt (speaker, content and framing: header, quote marks,
    the names it is private to), estimated high."""
    lines = max(1, len(event.content.splitlines()))
    private = sum(estimate_tokens(n) + 1 for n in event.visible_to or ())
    return (
        estimate_tokens(event.speaker)
        + estimate_tokens(event.content)
        + EVENT_OVERHEAD_TOKENS
        + LINE_OVERHEAD_TOKENS * lines
        + private
    )


def visible_positions(agent: str, events: Sequence[RoomEvent]) -> list[int]:
    """Positions of every event ``agent`` may see (any kind)."""
    return [i for i, event in enumerate(events) if event.visible_for(agent)]


@dataclass(frozen=True, slots=True)
class TurnsLeft:
    """The turns-left hint: ``remaining`` counts the current turn (1 on the last turn)."""

    current_turn: int
    max_turns: int
    remaining: int

    def to_dict(self) -> dict[str, int]:
        return {
            "current_turn": self.current_turn,
            "max_turns": self.max_turns,
            "remaining": self.remaining,
        }


def turns_left(current_turn: int, max_turns: int) -> TurnsLeft:
    """The hint for turn ``current_turn`` (0-based) of ``max_turns``."""
    for name, value in (("current_turn", current_turn), ("max_turns", max_turns)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConversationValueError(f"{name} must be a non-negative integer, got {value!r}")
    return TurnsLeft(current_turn, max_turns, max(0, max_turns - current_turn))


@dataclass(frozen=True, slots=True)
class ContextPolicy:
    """How much of the transcript an agent is shown (None: no limit of that kind)."""

    max_messages: int | None = None
    max_tokens: int | None = None
    summarize: bool = False
    summary_batch: int = 10

    def __post_init__(self) -> None:
        check_positive_int("ContextPolicy", "max_messages", self.max_messages, allow_none=True)
        check_positive_int("ContextPolicy", "max_tokens", self.max_tokens, allow_none=True)
        check_positive_int("ContextPolicy", "summary_batch", self.summary_batch)
        if not isinstance(self.summarize, bool):
            raise ConversationValueError(
                f"ContextPolicy.summarize must be True or False, got {self.summarize!r}"
            )

    @property
    def windowed(self) -> bool:
        return self.max_messages is not None or self.max_tokens is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_messages": self.max_messages,
            "max_tokens": self.max_tokens,
            "summarize": self.summarize,
            "summary_batch": self.summary_batch,
        }


def context_policy_from_dict(data: Mapping[str, Any] | None) -> ContextPolicy:
    """Restore a policy from :meth:`ContextPolicy.to_dict` (None: the default, no window)."""
    if data is None:
        return ContextPolicy()
    allowed = {"max_messages", "max_tokens", "summarize", "summary_batch"}
    if not isinstance(data, Mapping) or set(data) - allowed:
        raise ConversationValueError(
            f"a context policy dict may hold only {sorted(allowed)}, got {data!r}"
        )
    return ContextPolicy(**data)


@dataclass(frozen=True, slots=True)
class AgentContext:
    """What one agent is shown on one turn. ``positions`` index the transcript passed in."""

    agent: str
    persona: str
    positions: tuple[int, ...]
    saw: tuple[int, ...]
    opener: int | None
    summary: int | None
    omitted: tuple[int, ...]
    tokens: int
    turns_left: TurnsLeft | None = None

    def events(self, transcript: Sequence[RoomEvent]) -> list[RoomEvent]:
        """The shown events, in display order."""
        return [transcript[i] for i in self.positions]

    def records(self, transcript: Sequence[RoomEvent]) -> list[dict[str, Any]]:
        """The persona first, then one record per shown event (structured, never joined text)."""
        records: list[dict[str, Any]] = [{"kind": "persona", "content": self.persona}]
        for position in self.positions:
            event = transcript[position]
            records.append(
                {
                    "kind": event.kind,
                    "speaker": event.speaker,
                    "content": event.content,
                    "passed": event.passed,
                }
            )
        return records

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "agent": self.agent,
            "persona": self.persona,
            "positions": list(self.positions),
            "saw": list(self.saw),
            "opener": self.opener,
            "summary": self.summary,
            "omitted": list(self.omitted),
            "tokens": self.tokens,
            "turns_left": None if self.turns_left is None else self.turns_left.to_dict(),
        }
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentContext:
        try:
            hint = data.get("turns_left")
            return cls(
                agent=data["agent"],
                persona=data["persona"],
                positions=tuple(data["positions"]),
                saw=tuple(data["saw"]),
                opener=data["opener"],
                summary=data["summary"],
                omitted=tuple(data["omitted"]),
                tokens=data["tokens"],
                turns_left=None if hint is None else TurnsLeft(**hint),
            )
        except (KeyError, TypeError) as error:
            raise ConversationValueError(f"bad AgentContext dict: {error}") from None


def _latest_summary(events: Sequence[RoomEvent], viewer: str | None) -> int | None:
    """The latest summary event ``viewer`` may see (None as viewer: public summaries only)."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.kind == "summary" and (
            event.visible_to is None if viewer is None else event.visible_for(viewer)
        ):
            return index
    return None


def _costs_of(events: Sequence[RoomEvent], costs: Sequence[int] | None) -> Callable[[int], int]:
    """The token cost of the event at a position: from ``costs`` (kept per event by a room's
    log, so a long room's turn does not estimate every message again) or estimated now."""
    if costs is None:
        return lambda position: event_tokens(events[position])
    if len(costs) != len(events):
        raise ConversationValueError(
            f"costs must give one token count per event: {len(costs)} for {len(events)} events"
        )
    return costs.__getitem__


def _window(
    candidates: Sequence[int],
    cost_of: Callable[[int], int],
    policy: ContextPolicy,
    budget: int | None,
) -> tuple[list[int], int]:
    """The newest contiguous run of ``candidates`` within the count and token limits, and its
    token cost."""
    fits_count = policy.max_messages is None or len(candidates) <= policy.max_messages
    if fits_count:
        # Often everything fits: one C-speed sum instead of a walk (a long room's prompt shows
        # every message while the window allows).
        total = sum(map(cost_of, candidates))
        if budget is None or total <= budget:
            return list(candidates), total
    chosen: list[int] = []
    used = 0
    for position in reversed(candidates):
        if policy.max_messages is not None and len(chosen) >= policy.max_messages:
            break
        cost = cost_of(position)
        if budget is not None and used + cost > budget:
            break
        chosen.append(position)
        used += cost
    chosen.reverse()
    return chosen, used


def _covered(summary: RoomEvent | None, position: int) -> bool:
    return (
        summary is not None
        and summary.covers is not None
        and (summary.covers[0] <= position < summary.covers[1])
    )


def build_context(
    agent: str,
    roster: Sequence[str],
    events: Sequence[RoomEvent],
    *,
    persona: str = "",
    policy: ContextPolicy | None = None,
    seqs: Sequence[int] | None = None,
    current_turn: int | None = None,
    max_turns: int | None = None,
    costs: Sequence[int] | None = None,
) -> AgentContext:
    """What ``agent`` is shown now (see the module docstring for the guarantees).

    ``current_turn`` defaults to the number of agent turns so far; the turns-left hint is given
    when ``max_turns`` is. ``costs``, when given, are the events' ``event_tokens`` (one per event,
    computed once by the caller).
    """
    policy = policy or ContextPolicy()
    names = check_roster(roster)
    _check_inputs(persona, seqs, events)
    opener = opener_index(names, events)
    if opener is not None and not events[opener].visible_for(agent):
        opener = None
    summary_at = _latest_summary(events, agent)
    summary = None if summary_at is None else events[summary_at]
    visible = [
        i
        for i, e in enumerate(events)
        if e.kind in _SHOWN_KINDS and (e.visible_to is None or e.visible_for(agent)) and i != opener
    ]
    candidates = visible if summary is None else [i for i in visible if not _covered(summary, i)]
    cost_of = _costs_of(events, costs)
    fixed = estimate_tokens(persona)
    fixed += cost_of(opener) if opener is not None else 0
    fixed += cost_of(summary_at) if summary_at is not None else 0
    budget = None if policy.max_tokens is None else max(0, policy.max_tokens - fixed)
    chosen, used = _window(candidates, cost_of, policy, budget)
    positions, omitted = _arrange(events, visible, chosen, opener, summary_at)
    hint = None
    if max_turns is not None:
        turn = len(agent_turns(names, events)) if current_turn is None else current_turn
        hint = turns_left(turn, max_turns)
    return AgentContext(
        agent=agent,
        persona=persona,
        positions=positions,
        saw=positions if seqs is None else tuple(map(seqs.__getitem__, positions)),
        opener=opener,
        summary=summary_at,
        omitted=omitted,
        tokens=fixed + used,
        turns_left=hint,
    )


def _check_inputs(persona: Any, seqs: Sequence[int] | None, events: Sequence[RoomEvent]) -> None:
    if not isinstance(persona, str):
        raise ConversationValueError(f"persona must be a string, got {type(persona).__name__}")
    if seqs is not None and len(seqs) != len(events):
        raise ConversationValueError(
            f"seqs must give one seq per event: {len(seqs)} seqs for {len(events)} events"
        )


def _arrange(
    events: Sequence[RoomEvent],
    visible: Sequence[int],
    chosen: Sequence[int],
    opener: int | None,
    summary_at: int | None,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The positions shown, in the order shown, and the visible positions left out (those a
    summary covers are not left out: the summary tells them)."""
    summary = None if summary_at is None else events[summary_at]
    extra = [p for p in (opener, summary_at) if p is not None]
    if summary is None and len(chosen) == len(visible):
        # Everything visible is shown: nothing omitted, and the order is already the log's.
        return tuple(sorted([*chosen, *extra]) if extra else chosen), ()

    def order(position: int) -> tuple[int, int]:
        # A summary sits where the part it covers began; everything else at its own position.
        if position == summary_at and summary is not None and summary.covers is not None:
            return (summary.covers[0], -1)
        return (position, 0)

    shown = set(chosen) | set(extra)
    positions = tuple(sorted(shown, key=order) if summary is not None else sorted(shown))
    omitted = tuple(
        i
        for i in visible
        if i not in shown and not (_covered(summary, i) and events[i].visible_to is None)
    )
    return positions, omitted


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """Public events to summarise: ``text`` (the transcript form of ``text.transcript``, the
    previous summary first) covering
    transcript positions ``covers``; ``positions`` are the newly summarised events."""

    covers: tuple[int, int]
    positions: tuple[int, ...]
    previous: str | None
    text: str

    def to_event(self, summary: str) -> RoomEvent:
        """The summary event to append to the transcript (computed once, replayed after)."""
        if not isinstance(summary, str) or not summary.strip():
            raise ConversationValueError("a summary must be non-empty text")
        return RoomEvent(SUMMARY_SPEAKER, summary, kind="summary", covers=self.covers)


def summary_request(
    roster: Sequence[str],
    events: Sequence[RoomEvent],
    policy: ContextPolicy,
    *,
    persona: str = "",
    costs: Sequence[int] | None = None,
) -> SummaryRequest | None:
    """What needs summarising now, or None (no summaries wanted, or not enough fell out yet)."""
    if not policy.summarize or not policy.windowed:
        return None
    names = check_roster(roster)
    previous_at = _latest_summary(events, None)
    previous = None if previous_at is None else events[previous_at]
    covered_end = previous.covers[1] if previous is not None and previous.covers else 0
    opener = opener_index(names, events)
    if opener is not None and events[opener].visible_to is not None:
        opener = None
    public = [
        i
        for i, e in enumerate(events)
        if e.kind in _SHOWN_KINDS and e.visible_to is None and i >= covered_end and i != opener
    ]
    cost_of = _costs_of(events, costs)
    fixed = estimate_tokens(persona)
    fixed += cost_of(opener) if opener is not None else 0
    fixed += cost_of(previous_at) if previous_at is not None else 0
    budget = None if policy.max_tokens is None else max(0, policy.max_tokens - fixed)
    kept, _ = _window(public, cost_of, policy, budget)
    window_start = kept[0] if kept else len(events)
    fresh = tuple(
        i
        for i in range(covered_end, window_start)
        if events[i].kind in _SHOWN_KINDS and events[i].visible_to is None
    )
    if len(fresh) < policy.summary_batch:
        return None
    lines = (
        []
        if previous is None
        else [render_record({"speaker": SUMMARY_SPEAKER, "summary": previous.content})]
    )
    for i in fresh:
        event = events[i]
        record: dict[str, Any] = {"speaker": event.speaker, "passed": event.passed}
        if not event.passed:
            record["text"] = event.content
        lines.append(render_record(record))
    start = previous.covers[0] if previous is not None and previous.covers else 0
    return SummaryRequest(
        covers=(start, window_start),
        positions=fresh,
        previous=None if previous is None else previous.content,
        text="\n".join(lines),
    )
