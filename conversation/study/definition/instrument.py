"""The study definition's sections for the study as a research instrument (issue 34), beside
``schema.StudyIn`` which holds them:

- ``[analysis]``: the analysis plan (``replication.plan.PlanIn``: follow-up questions, judges,
  statistics, exclusion rules), frozen with the study when it is preregistered;
- ``[signals]``: whether the participant's page records bot and AI-use signals, and an optional
  honeypot (an instruction automation reads and people do not see, and the word that shows it
  was followed);
- ``[withdrawal]``: what a withdrawal does to the person's messages (``redact``: they read
  ``marker``; ``remove``: deleted) and to the agents' replies in the same exchanges (``keep``
  or ``redact``).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, Strict

from conversation.text.limits import MAX_MESSAGE_CHARS
from conversation.text.schema import DoorModel, Problem, text_rule

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{3,39}")


class WithdrawnMessages(StrEnum):
    """What becomes of a withdrawn person's messages (``withdrawal.messages``)."""

    REDACT = "redact"
    """The message stays in the log, its text replaced by the marker."""
    REMOVE = "remove"
    """The message is deleted from the log."""


class AgentReplies(StrEnum):
    """What becomes of the agents' replies to a withdrawn person (``withdrawal.agent_replies``)."""

    KEEP = "keep"
    REDACT = "redact"
    """The agents' turns of the exchanges the person's messages opened read the marker too."""


def _word(value: str) -> str:
    if not _WORD.fullmatch(value):
        raise Problem("must be one word of 4-40 letters and digits, starting with a letter")
    return value


class HoneypotIn(DoorModel):
    """An instruction placed where automation reads and people do not (hidden from sight and
    from screen readers), and the word whose use in a message or answer shows it was followed."""

    instruction: Annotated[str, text_rule(MAX_MESSAGE_CHARS)]
    word: Annotated[str, AfterValidator(_word)]


class SignalsIn(DoorModel):
    record: bool = True
    """The page records paste, focus and timing signals with each message and survey."""
    honeypot: HoneypotIn | None = None


class WithdrawalIn(DoorModel):
    messages: Annotated[WithdrawnMessages, Strict(False)] = WithdrawnMessages.REDACT
    agent_replies: Annotated[AgentReplies, Strict(False)] = AgentReplies.KEEP
    marker: Annotated[str, text_rule(40, one_line=True)] = "[withdrawn]"


__all__ = [
    "AgentReplies",
    "HoneypotIn",
    "SignalsIn",
    "WithdrawalIn",
    "WithdrawnMessages",
]
