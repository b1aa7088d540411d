"""What a conversation accumulates: one ``AgentStatement`` per completed turn.

A statement is only ever created from a model reply that produced text; a failed or cancelled turn
never becomes a statement. ``AgentStatements`` is a list with the transcript views the seed names.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from conversation.text.transcript import render_transcript, transcript_record


@dataclass(frozen=True, slots=True)
class AgentStatement:
    """One turn's outcome: who spoke, what they said, and what it took.

    ``agent`` is the caller's EDSL Agent (never modified). ``usage`` holds ``input_tokens`` and
    ``output_tokens``; ``cost`` is in US dollars when the provider's price is known.
    """

    turn: int
    speaker: str
    speaker_index: int
    text: str
    agent: Any = field(default=None, compare=False, repr=False)
    model: str | None = None
    system_prompt: str = field(default="", repr=False)
    user_prompt: str = field(default="", repr=False)
    round_message: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    latency: float | None = None
    cache_used: bool = False
    attempts: int = 1
    raw_model_response: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def agent_name(self) -> str:
        return self.speaker

    def to_record(self) -> dict[str, Any]:
        """The seed's transcript record ``{turn, speaker, speaker_index, text}``."""
        return transcript_record(self.turn, self.speaker, self.speaker_index, self.text)

    def to_dict(self) -> dict[str, Any]:
        """Everything except the agent object (the conversation stores its agents once)."""
        return {
            "turn": self.turn,
            "speaker": self.speaker,
            "speaker_index": self.speaker_index,
            "text": self.text,
            "model": self.model,
            "system_prompt": self.system_prompt,
            "user_prompt": self.user_prompt,
            "round_message": self.round_message,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "latency": self.latency,
            "cache_used": self.cache_used,
            "attempts": self.attempts,
            "raw_model_response": copy.deepcopy(self.raw_model_response),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], agent: Any = None) -> AgentStatement:
        known = set(cls.__dataclass_fields__) - {"agent"}  # the caller's Agent comes apart
        values = {k: copy.deepcopy(v) for k, v in data.items() if k in known}
        return cls(agent=agent, **values)


class AgentStatements(list[AgentStatement]):
    """The statements of a conversation, in turn order (a plain list with transcript helpers)."""

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The conversation-API records ``{turn, speaker, speaker_index, text}``."""
        return [s.to_record() for s in self]

    def render(self) -> str:
        """The transcript as a model sees it (JSON lines)."""
        return render_transcript(self.transcript)

    @property
    def speakers(self) -> list[str]:
        return [s.speaker for s in self]

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self]


__all__ = ["AgentStatement", "AgentStatements"]
