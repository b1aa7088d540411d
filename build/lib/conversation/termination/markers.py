"""Stop conditions that read what was said (conversation-specific conditions: docs/design.md, "Turn policies and composable termination").

All of them look only at the scope of ``state`` (the current activity, or from the resume point),
ignore passes, and match *markers*: tokens the agents' prompts ask them to write, matched as whole
words (``AGREE`` matches ``"I AGREE."`` but not ``"DISAGREEMENT"``), case-sensitive by default so
a marker in capitals stays distinct from ordinary prose. No marker detection understands negation:
pick explicit tokens.

- :class:`AllAgreed`: every agent's latest message in scope carries an agreement marker.
- :class:`Supervisor`: the latest message (or system event) comes from a supervisor (an agent or a
  person) and carries its signal.
- :class:`ContestedEscalation`: the same point was disputed ``repeats`` times in scope; it
  *escalates* (``StopDecision.escalate``): the room stops and asks a person. A dispute is a
  message with a disagreement marker; its point is the text after ``MARKER:`` on the same line
  (normalised), or no point at all, in which case every bare dispute counts together.
- :class:`Convergence`: the last ``window`` agent messages are near-duplicates (every pair's
  ``difflib`` similarity of their whitespace-normalised, case-folded text >= ``threshold``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import combinations

from conversation.exceptions import ConversationValueError
from conversation.planning.transitions import TransitionRules, retired_agents
from conversation.termination.base import SettingsCondition, check_limit, names_tuple
from conversation.termination.state import RoomState

__all__ = ["AllAgreed", "ContestedEscalation", "Convergence", "Supervisor"]


def _markers_re(owner: str, markers: object, case_sensitive: bool) -> re.Pattern[str]:
    names = names_tuple(owner, "markers", markers)
    assert names is not None
    alternatives = "|".join(re.escape(m) for m in names)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", 0 if case_sensitive else re.IGNORECASE)


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass(frozen=True)
class AllAgreed(SettingsCondition):
    """Stop when the latest message of every agent in scope carries an agreement marker.

    ``agents`` defaults to the roster; an agent that has not spoken in scope has not agreed.
    """

    markers: tuple[str, ...] = ("AGREE",)
    agents: tuple[str, ...] | None = None
    case_sensitive: bool = True
    kind = "all_agreed"
    label = "Everyone agrees"

    def __post_init__(self) -> None:
        object.__setattr__(self, "markers", names_tuple("AllAgreed", "markers", self.markers))
        object.__setattr__(self, "agents", names_tuple("AllAgreed", "agents", self.agents))
        _markers_re("AllAgreed", self.markers, self.case_sensitive)

    def check(self, state: RoomState) -> str | None:
        agents = self.agents or state.roster
        if not agents:
            return None
        latest: dict[str, str] = {}
        for _, event in state.scope_messages():
            if not event.passed and event.speaker in agents:
                latest[event.speaker] = event.content
        pattern = _markers_re("AllAgreed", self.markers, self.case_sensitive)
        if all(name in latest and pattern.search(latest[name]) for name in agents):
            return f"all agreed ({', '.join(agents)})"
        return None


@dataclass(frozen=True)
class AllSpoken(SettingsCondition):
    """Stop once every roster agent has spoken in scope or retired (said ``retire_on``, or took
    ``retire_after`` turns: the planner's retirement rules, see ``TransitionRules``)."""

    retire_on: str | None = None
    retire_after: int | None = None
    kind = "all_spoken"
    label = "Every role has spoken (or retired)"

    def __post_init__(self) -> None:
        TransitionRules(retire_on=self.retire_on, retire_after=self.retire_after)  # validates

    def describe(self) -> str:
        return "when every agent has spoken or retired"

    def check(self, state: RoomState) -> str | None:
        if not state.roster:
            return None
        spoken = {e.speaker for _, e in state.scope_messages() if not e.passed}
        retired = retired_agents(
            state.roster, state.events, retire_on=self.retire_on, retire_after=self.retire_after
        )
        missing = [n for n in state.roster if n not in spoken and n not in retired]
        if missing:
            return None
        if retired:
            return f"every agent has spoken or retired ({', '.join(sorted(retired))} retired)"
        return "every agent has spoken"


@dataclass(frozen=True)
class Supervisor(SettingsCondition):
    """Stop when a supervisor's latest message (or system event) carries ``signal``."""

    supervisors: tuple[str, ...]
    signal: str = "TERMINATE"
    case_sensitive: bool = True
    kind = "supervisor"
    label = "A supervisor signals"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "supervisors", names_tuple("Supervisor", "supervisors", self.supervisors)
        )
        if self.supervisors is None:
            raise ConversationValueError("Supervisor.supervisors needs at least one name")
        if not isinstance(self.signal, str) or not self.signal:
            raise ConversationValueError(
                f"Supervisor.signal must be a non-empty string, got {self.signal!r}"
            )

    def check(self, state: RoomState) -> str | None:
        for event in reversed(state.events):
            if event.kind not in ("message", "system"):
                continue
            if event.passed or event.speaker not in (self.supervisors or ()):
                return None
            text, signal = event.content, self.signal
            if not self.case_sensitive:
                text, signal = text.casefold(), signal.casefold()
            return (
                f"{event.speaker} signalled the end ({self.signal!r})" if signal in text else None
            )
        return None


@dataclass(frozen=True)
class ContestedEscalation(SettingsCondition):
    """Stop and ask a person when the same point was disputed ``repeats`` times in scope."""

    repeats: int = 3
    markers: tuple[str, ...] = ("DISAGREE",)
    case_sensitive: bool = True
    kind = "contested_escalation"
    label = "A disputed point escalates"
    escalates = True

    def __post_init__(self) -> None:
        check_limit("ContestedEscalation", "repeats", self.repeats, 2)
        object.__setattr__(
            self, "markers", names_tuple("ContestedEscalation", "markers", self.markers)
        )

    def points(self, state: RoomState) -> dict[str, int]:
        """How many messages in scope disputed each point ("" for disputes without a point)."""
        pattern = _markers_re("ContestedEscalation", self.markers, self.case_sensitive)
        counts: dict[str, int] = {}
        for _, event in state.scope_messages():
            if event.passed:
                continue
            seen: set[str] = set()
            for match in pattern.finditer(event.content):
                rest = event.content[match.end() :]
                point = ""
                if rest.startswith(":"):
                    point = _normalise(rest[1:].splitlines()[0] if rest[1:] else "").strip(".!?;, ")
                seen.add(point)
            for point in seen:
                counts[point] = counts.get(point, 0) + 1
        return counts

    def check(self, state: RoomState) -> str | None:
        counts = self.points(state)
        if not counts:
            return None
        # Most disputed first; ties by point text so the reason is deterministic.
        point, count = min(counts.items(), key=lambda item: (-item[1], item[0]))
        if count < self.repeats:
            return None
        what = f"{point!r} disputed {count} times" if point else f"{count} disagreements"
        return f"contested: {what} in this activity; a person should decide"


@dataclass(frozen=True)
class Convergence(SettingsCondition):
    """Stop when the last ``window`` agent messages in scope are near-duplicates."""

    window: int = 3
    threshold: float = 0.9
    kind = "convergence"
    label = "The replies repeat"

    def __post_init__(self) -> None:
        check_limit("Convergence", "window", self.window, 2)
        value = self.threshold
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
            raise ConversationValueError(
                f"Convergence.threshold must be a number in (0, 1], got {value!r}; e.g. 0.9"
            )

    def check(self, state: RoomState) -> str | None:
        members = set(state.roster)
        texts = [
            _normalise(e.content)
            for _, e in state.scope_messages()
            if not e.passed and e.speaker in members
        ][-self.window :]
        if len(texts) < self.window:
            return None
        for a, b in combinations(texts, 2):
            matcher = SequenceMatcher(None, a, b, autojunk=False)
            # The quick upper bounds reject most pairs without the quadratic comparison.
            if (
                matcher.real_quick_ratio() < self.threshold
                or matcher.quick_ratio() < self.threshold
            ):
                return None
            if matcher.ratio() < self.threshold:
                return None
        return (
            f"converged: the last {self.window} messages are near-duplicates "
            f"(similarity >= {self.threshold:g})"
        )
