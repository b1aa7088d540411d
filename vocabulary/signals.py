"""The words of a participant page's bot and AI-use signals (issue 34): what a record of signals
is about (``SignalKind``) and the measures summarised per person (``SignalMeasure``), which a
study's preregistered exclusion rules name. Signals are never a verdict: nothing is decided
from them automatically, and a person never sees them.
"""

from __future__ import annotations

from enum import StrEnum


class SignalKind(StrEnum):
    """What one stored record of signals is about."""

    MESSAGE = "message"
    """One message posted in the room: pasted characters, focus lost while composing, the
    composing time, the reply latency to the partner's last message."""
    SURVEY = "survey"
    """One survey answered: the answers text was pasted into."""
    HONEYPOT = "honeypot"
    """The honeypot instruction (visible to automation, not to people) was followed."""


class SignalMeasure(StrEnum):
    """A person's signals summarised (the monitor's and the exports' columns; what exclusion
    rules compare)."""

    MESSAGES = "messages"
    """How many messages they posted with signals recorded."""
    PASTED_SHARE = "pasted_share"
    """Characters pasted / characters posted, over all their messages (0 to 1)."""
    FOCUS_LOST_SHARE = "focus_lost_share"
    """The share of their messages during whose composing the page lost focus (0 to 1)."""
    CHARS_PER_SECOND = "chars_per_second"
    """The median of a message's length over its composing time."""
    REPLY_SECONDS = "reply_seconds"
    """The median time from the partner's last message to theirs."""
    SURVEY_PASTES = "survey_pastes"
    """How many survey answers had text pasted into them."""
    HONEYPOT = "honeypot"
    """1 when they followed the honeypot instruction, else 0."""


__all__ = ["SignalKind", "SignalMeasure"]
