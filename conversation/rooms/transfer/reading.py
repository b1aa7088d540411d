"""Reading an import: bytes, text or data measured and parsed (JSON without ``NaN``, bounded in
size and depth), and a saved chat's messages checked (schema, speakers, seqs) before anything is
written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conversation.exceptions import ConversationValueError, ImportRejected
from conversation.rooms.config import (
    check_name,
    reserved_speaker,
)
from conversation.rooms.transfer.schema import (
    MAX_CONTENT_CHARS as MAX_CONTENT_CHARS,
)
from conversation.rooms.transfer.schema import (
    MESSAGES,
    SYSTEM_SPEAKER,
    ExportedEvent,
    ImportedMessage,
    message_place,
)
from conversation.text import limits
from conversation.text.json_input import read_json
from conversation.text.limits import MAX_IMPORT_BYTES as MAX_IMPORT_BYTES
from conversation.text.limits import MAX_IMPORT_MESSAGES as MAX_MESSAGES
from conversation.text.schema import validated

#: An import may nest one level more than a config (the export around it).
MAX_DEPTH = limits.MAX_DEPTH + 1
#: The fields an imported message may have (declared by ``schema.ImportedMessage``).
MESSAGE_FIELDS = frozenset(ImportedMessage.model_fields)
#: The fields an exported event may have (declared by ``schema.ExportedEvent``).
EVENT_FIELDS = frozenset(ExportedEvent.model_fields)


class ResumeWarning(UserWarning):
    """The imported messages would stop the room as soon as it resumes."""


# -- parsing -------------------------------------------------------------------------------------


def parse_import(data: Any) -> Any:
    """A JSON string or already-parsed data, checked for size, depth and non-finite numbers.
    Sizes are measured first (bytes and text by their length, data in one bounded walk), so an
    oversized import is refused before it is decoded, parsed or serialised."""
    if isinstance(data, bytes | bytearray | memoryview | str):
        return read_json(
            data,
            what="the import",
            max_bytes=MAX_IMPORT_BYTES,
            max_depth=MAX_DEPTH,
            error=ImportRejected,
        )
    if isinstance(data, list | tuple) and len(data) > MAX_MESSAGES * 2:
        raise ImportRejected(f"at most {MAX_MESSAGES} messages can be imported, got {len(data)}")
    limits.check_json_value(
        data, "the import", max_chars=MAX_IMPORT_BYTES, max_depth=MAX_DEPTH, error=ImportRejected
    )
    return data


# -- messages (docs/design.md, "Resuming a group chat") ---------------------------------------------------------------------------


def check_messages(
    messages: Any, roster: tuple[str, ...], *, strict: bool = False
) -> list[dict[str, Any]]:
    """The messages as log records. A first message without a name (AutoGen's system or manager
    message) becomes a system message; a speaker not on the roster is a person, unless
    ``strict``, where it is refused (only roster agents, and messages with ``role: "user"``)."""
    if not isinstance(messages, list):
        raise ImportRejected(
            f"messages must be a list of {{'speaker', 'content'}} objects, got {type(messages).__name__}"
        )
    if not messages:
        raise ImportRejected("messages is empty; there is nothing to resume")
    if len(messages) > MAX_MESSAGES:
        raise ImportRejected(
            f"at most {MAX_MESSAGES} messages can be imported, got {len(messages)}"
        )
    checked = validated(MESSAGES, messages, error=ImportRejected, place=message_place)
    return [_message_record(i, m, roster, strict) for i, m in enumerate(checked)]


def _message_record(
    index: int, message: ImportedMessage, roster: tuple[str, ...], strict: bool
) -> dict[str, Any]:
    """One checked message against the room: its seq, its speaker (an agent, a person, or the
    unnamed first message), its audience; the log record it becomes."""
    where = f"message {index}"
    unnamed = index == 0 and message.who is None
    speaker: str = as_import_error(check_name)(
        SYSTEM_SPEAKER if unnamed else message.who, f"{where} speaker"
    )
    if message.seq is not None and message.seq != index + 1:
        raise ImportRejected(
            f"{where} has seq {message.seq!r}; seqs must run 1, 2, 3... without gaps "
            f"(expected {index + 1})"
        )
    if message.to is not None and (not message.to or any(n not in roster for n in message.to)):
        raise ImportRejected(f"{where} 'to' must list agents of the roster {list(roster)}")
    human = speaker not in roster
    _check_message_speaker(where, message, speaker, roster, unnamed=unnamed, strict=strict)
    kind = "system" if unnamed else "human" if human else ("pass" if message.passed else "agent")
    return {
        "kind": kind,
        "speaker": speaker,
        "content": "" if message.passed else message.content,
        "round": message.round,
        "visible_to": list(message.to) if message.to else None,
    }


def _check_message_speaker(
    where: str,
    message: ImportedMessage,
    speaker: str,
    roster: tuple[str, ...],
    *,
    unnamed: bool,
    strict: bool,
) -> None:
    """Who may say what: a system message never under an agent's name, a person never under a
    notice's or an agent's name, only an agent passes; in ``strict`` mode only agents speak."""
    if message.role == "system" and not unnamed and speaker in roster:
        raise ImportRejected(
            f"{where} is a system message under the name of the agent {speaker!r}; a system "
            "message cannot carry an agent's name (leave the name out of the first message)"
        )
    human = speaker not in roster
    taken = reserved_speaker(speaker, roster) if human and not unnamed else None
    if taken is not None:
        raise ImportRejected(
            f"{where} is by {taken}; a person's message needs a person's name (a "
            "system message is the first message, without a name)"
        )
    if message.passed and (human or unnamed):
        raise ImportRejected(f"{where}: only an agent can pass; {speaker!r} is not on the roster")
    if strict and human and not unnamed and message.role != "user":
        raise ImportRejected(
            f"{where} is by {speaker!r}, who is not on the roster {list(roster)}; in strict "
            "mode every speaker must be an agent of the room (or the message must have "
            "role 'user'); pass strict=False to import unknown speakers as people"
        )


def as_import_error(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` with its ``ConversationValueError`` as an ``ImportRejected`` (same message)."""

    def run(*args: Any) -> Any:
        try:
            return check(*args)
        except ImportRejected:
            raise
        except ConversationValueError as exc:
            raise ImportRejected(str(exc)) from None

    return run


def remove_termination(messages: list[dict[str, Any]], remove: Any) -> None:
    if remove is None:
        return
    last = messages[-1]
    if isinstance(remove, str):
        if not remove:
            raise ConversationValueError("remove_termination_string must be non-empty text")
        last["content"] = last["content"].replace(remove, "").strip()
    elif callable(remove):
        changed = remove(last["content"])
        if not isinstance(changed, str):
            raise ConversationValueError(
                "remove_termination_string, as a function, must return the new text of the last message"
            )
        last["content"] = changed
    else:
        raise ConversationValueError(
            "remove_termination_string must be text or a function of the last message's text"
        )


__all__ = [
    "ResumeWarning",
    "parse_import",
]
