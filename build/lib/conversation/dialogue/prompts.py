"""How a turn's prompts are made: the agent's persona (system prompt) and the question (user prompt).

The question text is the seed's default template or the caller's own ``next_statement_question``;
either way the project renders it in the sandbox of ``safety.SafeTemplate`` with a fixed set of
variables, and the values (transcript, round message) are inserted as data, never re-rendered.
The result is a plain string sent straight to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.text.safety import SafeTemplate

QUESTION_NAME = "dialogue"

DEFAULT_QUESTION_TEXT = """You are {{ speaker_name }}. This is the conversation so far: {{ conversation }}
{% if round_message is not none %}
{{ round_message }}
{% endif %}
What do you say next?"""

#: Variables a turn's question text may use.
QUESTION_VARIABLES = (
    "speaker_name",
    "conversation",
    "round_message",
    "current_turn",
    "max_turns",
    "turns_left",
    "agent_names",
)
#: Variables a per-round message template may use (seed: ``max_turns``, ``current_turn``).
ROUND_MESSAGE_VARIABLES = ("max_turns", "current_turn", "turns_left", "speaker_name")

_ROUND_MESSAGE_USE = re.compile(r"\{\{-?\s*round_message\s*-?\}\}")


def question_template(question: Any | None) -> SafeTemplate:
    """The sandboxed template of a turn's question: the default, or a caller's custom question.

    A custom question must be named ``dialogue`` (so its answer is the statement).
    """
    if question is None:
        return SafeTemplate(DEFAULT_QUESTION_TEXT, allowed=QUESTION_VARIABLES, field="question")
    name = getattr(question, "question_name", None)
    text = getattr(question, "question_text", None)
    if name != QUESTION_NAME:
        raise ConversationValueError(
            f"next_statement_question must have question_name='{QUESTION_NAME}', got {name!r}; "
            f"create it with question_name='{QUESTION_NAME}'"
        )
    if not isinstance(text, str) or not text.strip():
        raise ConversationValueError(
            "next_statement_question needs a non-empty question_text; pass an EDSL question "
            "such as QuestionFreeText(question_text=..., question_name='dialogue')"
        )
    return SafeTemplate(text, allowed=QUESTION_VARIABLES, field="next_statement_question")


def require_round_message_slot(question: Any | None, template: str | None) -> None:
    """A per-round template needs ``{{ round_message }}`` in a custom question to be seen at all."""
    if template is None or question is None:
        return
    if not _ROUND_MESSAGE_USE.search(getattr(question, "question_text", "") or ""):
        raise ConversationValueError(
            "per_round_message_template is set but next_statement_question does not contain "
            "{{ round_message }}; add it to the question text or drop the template"
        )


def round_message_template(source: str | None) -> SafeTemplate | None:
    """The sandboxed per-round message template, or None."""
    if source is None:
        return None
    return SafeTemplate(source, allowed=ROUND_MESSAGE_VARIABLES, field="per_round_message_template")


def persona(name: str, traits: Mapping[str, Any], instruction: str | None = None) -> str:
    """The system prompt that puts the model in the agent's shoes (traits shown as JSON data)."""
    lines = [f"You are {name}. Stay in character as {name} for the whole conversation."]
    if traits:
        shown = json.dumps(dict(traits), ensure_ascii=False, indent=1, default=str)
        lines.append(f"Your traits: {shown}")
    if instruction:
        lines.append(instruction)
    return "\n".join(lines)


def _unescape_edsl(value: Any) -> Any:
    """Undo the HTML entities EDSL puts in place of braces in traits (the model is shown the
    literal text; this prompt is never rendered by a template engine)."""
    if isinstance(value, str):
        return value.replace("&#123;", "{").replace("&#125;", "}")
    if isinstance(value, dict):
        return {k: _unescape_edsl(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unescape_edsl(v) for v in value]
    return value


def agent_persona(agent: Any, name: str) -> str:
    """``persona`` for an EDSL Agent, read afresh each turn (custom agents may change traits)."""
    traits = _unescape_edsl(dict(getattr(agent, "traits", {}) or {}))
    instruction = getattr(agent, "instruction", None)
    return persona(name, traits, instruction if isinstance(instruction, str) else None)


def user_prompt(
    template: SafeTemplate,
    *,
    speaker_name: str,
    conversation: str,
    round_message: str | None,
    current_turn: int,
    max_turns: int,
    agent_names: Sequence[str],
) -> str:
    """Render the turn's question; ``conversation`` is the transcript already rendered as JSON
    lines (``transcript.render_lines``)."""
    return template.render(
        {
            "speaker_name": speaker_name,
            "conversation": conversation,
            "round_message": round_message,
            "current_turn": current_turn,
            "max_turns": max_turns,
            "turns_left": max(max_turns - current_turn, 0),
            "agent_names": list(agent_names),
        }
    ).strip()


__all__ = [
    "QUESTION_NAME",
    "DEFAULT_QUESTION_TEXT",
    "QUESTION_VARIABLES",
    "ROUND_MESSAGE_VARIABLES",
    "question_template",
    "require_round_message_slot",
    "round_message_template",
    "persona",
    "agent_persona",
    "user_prompt",
]
