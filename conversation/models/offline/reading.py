"""What the offline model can read from the two prompt strings it is given.

Pure functions, no EDSL: the speaker's name, the persona's traits, and the transcript records
(``{"turn", "speaker", "text"}``) found in a prompt. The transcript may be written in the engine's
format (``text.transcript``: header lines and quoted text), as JSON lines, as a JSON array, or as Python reprs of dicts (what EDSL prints when a list
of records is put in a question through ``{{ conversation }}``). Reading is best-effort and never
raises: a prompt it cannot read simply yields no name, no traits or no messages.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

from conversation.text.safety import ZERO_WIDTH_SPACE
from conversation.text.transcript import message_spans

_NAME = r"[A-Z][\w'\-]*(?: [A-Z][\w'\-]*){0,3}"
_YOU_ARE = re.compile(r"\bYou are (" + _NAME + r")(?=[\s,.;:!?)]|$)")
# The project's own persona line names the agent exactly, whatever its case (``coder``).
_IN_CHARACTER = re.compile(
    r"\bStay in character as ([A-Za-z0-9][\w\-.']*?)(?= for\b|[\s,;:!?)]|\.\s|\.?$)"
)
_NAME_IS = re.compile(r"\b(?:[Yy]our name is|[Nn]ame:)\s*\"?(" + _NAME + r")")
_NOT_NAMES = frozenset({"I", "A", "An", "The", "You", "Not", "Now", "Here", "Answering", "An AI"})
_TRAITS_DICT = re.compile(r"[Tt]raits\s*[:=]\s*\{")
_KEY_VALUE_LINE = re.compile(r"^\s*[-*]?\s*([A-Za-z][\w ]{0,40}?)\s*[:=]\s*(.+?)\s*$")
_RECORD_START = re.compile(r"\{\s*[\"']")
_MAX_RECORD_CHARS = 20_000
_MAX_CLOSERS_TRIED = 64


@dataclass(frozen=True, slots=True)
class Message:
    """One transcript record read from a prompt."""

    speaker: str
    text: str
    turn: int | None = None


def speaker_name(system_prompt: str, user_prompt: str) -> str | None:
    """The name of the agent being asked to speak (``You are Alice.``), if the prompts give one."""
    own = _IN_CHARACTER.search(system_prompt)
    if own:
        return own.group(1)
    for text in (system_prompt, user_prompt):
        for pattern in (_YOU_ARE, _NAME_IS):
            for match in pattern.finditer(text):
                name = match.group(1).strip()
                if name not in _NOT_NAMES:
                    return name
    traits = persona_traits(system_prompt)
    for key in ("name", "Name", "agent_name"):
        if isinstance(traits.get(key), str) and traits[key].strip():
            return traits[key].strip()
    return None


def persona_traits(system_prompt: str) -> dict[str, str]:
    """The persona's traits: a ``traits: {...}`` dict literal, or ``key: value`` lines."""
    match = _TRAITS_DICT.search(system_prompt)
    if match:
        parsed, _ = _parse_record_at(system_prompt, match.end() - 1)
        if parsed is not None:
            return {str(k): str(v) for k, v in parsed.items()}
    found: dict[str, str] = {}
    for line in system_prompt.splitlines():
        pair = _KEY_VALUE_LINE.match(line)
        if pair and not pair.group(2).startswith("{"):
            found[pair.group(1).strip()] = pair.group(2).strip()
    return found


def transcript_messages(prompt: str) -> list[Message]:
    """Every ``{speaker, text}`` record written in ``prompt``, in order of appearance."""
    return [message for _, _, message in _records(prompt)]


def without_records(prompt: str) -> str:
    """``prompt`` with its transcript records cut out (what is left is the instruction)."""
    pieces: list[str] = []
    position = 0
    for start, end, _ in _records(prompt):
        pieces.append(prompt[position:start])
        position = end
    pieces.append(prompt[position:])
    return "".join(pieces)


def _records(prompt: str) -> list[tuple[int, int, Message]]:
    found: list[tuple[int, int, Message]] = []
    for start, end, line in message_spans(prompt):
        said = line.get("text")
        if isinstance(said, str):
            number = line.get("turn", line.get("seq"))
            message = Message(line["speaker"], said.replace(ZERO_WIDTH_SPACE, ""), number)
            found.append((start, end, message))
    if found:
        return found
    position = 0
    while True:
        match = _RECORD_START.search(prompt, position)
        if match is None:
            return found
        start = match.start()
        record, end = _parse_record_at(prompt, start)
        speaker = record.get("speaker") if record else None
        text = record.get("text") if record else None
        if not (isinstance(speaker, str) and isinstance(text, str)):
            position = start + 1  # not a message: records may still be nested inside it
            continue
        position = end
        turn = record.get("turn") if record else None
        message = Message(
            speaker=speaker,
            text=text.replace(ZERO_WIDTH_SPACE, ""),
            turn=turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
        )
        found.append((start, end, message))


def _parse_record_at(text: str, start: int) -> tuple[dict | None, int]:
    """Parse the dict literal that opens at ``start`` (JSON or Python repr); ``(None, start)``."""
    limit = min(len(text), start + _MAX_RECORD_CHARS)
    closer = start
    for _ in range(_MAX_CLOSERS_TRIED):
        closer = text.find("}", closer + 1, limit)
        if closer == -1:
            break
        parsed = _parse_mapping(text[start : closer + 1])
        if parsed is not None:
            return parsed, closer + 1
    return None, start


def _parse_mapping(candidate: str) -> dict | None:
    try:
        value = json.loads(candidate)
    except ValueError:
        try:
            value = ast.literal_eval(candidate)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            return None
    return value if isinstance(value, dict) else None


__all__ = ["Message", "speaker_name", "persona_traits", "transcript_messages", "without_records"]
