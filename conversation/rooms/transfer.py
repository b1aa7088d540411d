"""Moving rooms in and out: ``export()``, saved-chat imports, and export files.

Imports are untrusted input. Everything is checked before anything is written, and any failure
leaves the database as it was:

- size: at most ``MAX_IMPORT_BYTES`` of JSON (bytes and text measured by their length, data by
  one bounded walk, before anything is decoded or parsed; bytes must be UTF-8),
  ``MAX_MESSAGES`` messages, nesting at most ``MAX_DEPTH`` deep; ``NaN``/``Infinity`` are not
  JSON and are refused;
- schema: a message has ``content`` and a speaker (``speaker`` or, as autogen writes it,
  ``name``), optionally ``role``, ``seq``, ``round``, ``passed``, ``to``; any other field (an
  ``api_key``, say) is refused by name; seqs, when given, must run 1, 2, 3... with no gap;
- speakers: roster agents, or people with a valid name (no newline can forge a speaker) that is
  neither a notice name (``room``, ``system``) nor an agent's in another case; a system message
  or event never carries an agent's name;
- secrets: the config passes the secret guard, its model specs must resolve as a new room's do,
  and every event's data, error, model label and request id are guarded too (``storage``);
- versions: an export names its format and version; an unknown version is refused.

A message list resumes a group chat (docs/design.md, "Resuming a group chat"): the optional termination string (text, or a
function of the text) is removed from the last message, a warning is given when the last message
would stop the room at once, a system event records the resumption, and caps count from there.
An ``export()`` imports back as an identical room (same config, same log, same recorded times);
each exported event carries its ``provenance`` (``storage.PROVENANCE_COLUMNS``, the
columns every export shares), recomputed on import.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import storage
from conversation.exceptions import ConversationValueError, ImportRejected
from conversation.rooms.config import (
    RESERVED_SPEAKERS,
    RoomConfig,
    check_name,
    check_placement,
    reserved_speaker,
)
from conversation.rooms.log import RESUMED, log_view
from conversation.rooms.transfer_schema import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    MESSAGES,
    SYSTEM_SPEAKER,
    ConfigVersion,
    ExportedEvent,
    ImportedMessage,
    RoomExport,
    export_place,
    message_place,
)
from conversation.rooms.transfer_schema import (
    MAX_CONTENT_CHARS as MAX_CONTENT_CHARS,
)
from conversation.text import limits
from conversation.text.limits import MAX_IMPORT_BYTES as MAX_IMPORT_BYTES
from conversation.text.limits import MAX_IMPORT_MESSAGES as MAX_MESSAGES
from conversation.text.schema import validated
from conversation.vocabulary import TURN_KINDS, EventKind, TurnState
from storage import iso, provenance_row

#: An import may nest one level more than a config (the export around it).
MAX_DEPTH = limits.MAX_DEPTH + 1
#: The fields an imported message may have (declared by ``transfer_schema.ImportedMessage``).
MESSAGE_FIELDS = frozenset(ImportedMessage.model_fields)
#: The fields an exported event may have (declared by ``transfer_schema.ExportedEvent``).
EVENT_FIELDS = frozenset(ExportedEvent.model_fields)
_SAFE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")


class ResumeWarning(UserWarning):
    """The imported messages would stop the room as soon as it resumes."""


# -- parsing -------------------------------------------------------------------------------------


def _reject_constant(token: str) -> Any:
    raise ImportRejected(f"{token} is not valid JSON; use null or a number")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ImportRejected(f"{token[:40]} is not a finite number; use a smaller number or null")
    return value


def parse_import(data: Any) -> Any:
    """A JSON string or already-parsed data, checked for size, depth and non-finite numbers.
    Sizes are measured first (bytes and text by their length, data in one bounded walk), so an
    oversized import is refused before it is decoded, parsed or serialised."""
    if isinstance(data, bytes | bytearray | memoryview):
        if len(data) > MAX_IMPORT_BYTES:
            raise ImportRejected(
                f"the import is {len(data):,} bytes; the limit is {MAX_IMPORT_BYTES:,}"
            )
        try:
            data = bytes(data).decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise ImportRejected(
                f"the import is not UTF-8 text (byte {exc.start}); save the file as UTF-8 JSON"
            ) from None
    if isinstance(data, str):
        if len(data) > MAX_IMPORT_BYTES or len(data.encode("utf-8")) > MAX_IMPORT_BYTES:
            raise ImportRejected(f"the import is larger than {MAX_IMPORT_BYTES:,} bytes")
        try:
            data = json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float)
        except json.JSONDecodeError as exc:
            raise ImportRejected(f"the import is not valid JSON: {exc}") from None
        except RecursionError:
            raise ImportRejected(
                f"the import is nested more than {MAX_DEPTH} levels deep"
            ) from None
        # NaN, Infinity and 1e999 were refused while parsing; the depth is walked once, without recursion
        limits.check_depth(data, "the import", max_depth=MAX_DEPTH, error=ImportRejected)
    else:
        if isinstance(data, list | tuple) and len(data) > MAX_MESSAGES * 2:
            raise ImportRejected(
                f"at most {MAX_MESSAGES} messages can be imported, got {len(data)}"
            )
        limits.check_json_value(
            data,
            "the import",
            max_chars=MAX_IMPORT_BYTES,
            max_depth=MAX_DEPTH,
            error=ImportRejected,
        )
    return data


# -- messages (docs/design.md, "Resuming a group chat") ---------------------------------------------------------------------------


def _check_messages(
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
    speaker: str = _importing(check_name)(
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


def _importing(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` with its ``ConversationValueError`` as an ``ImportRejected`` (same message)."""

    def run(*args: Any) -> Any:
        try:
            return check(*args)
        except ImportRejected:
            raise
        except ConversationValueError as exc:
            raise ImportRejected(str(exc)) from None

    return run


def _remove_termination(messages: list[dict[str, Any]], remove: Any) -> None:
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


#: What ``Room.import_messages`` passes on to ``RoomConfig.build`` for a message list.
_ROOM_OPTIONS = frozenset(inspect.signature(RoomConfig.build).parameters) - {"agents"}


def import_room(
    room_class: Any,
    db: storage.Database,
    messages: Any,
    *,
    agents: Any,
    remove_termination_string: str | Callable[[str], str] | None,
    name: str,
    strict: bool = False,
    **room_options: Any,
) -> Any:
    """See ``Room.import_messages``."""
    name_override = room_options.pop("name_override", None)
    try:
        check_placement(name if name_override is None else name_override)
    except ConversationValueError as exc:
        raise ImportRejected(f"the imported room's {exc}") from None
    unknown = sorted(set(room_options) - _ROOM_OPTIONS)
    if unknown:
        raise ConversationValueError(
            f"unknown room option(s) {unknown} for an import; allowed: {sorted(_ROOM_OPTIONS)}"
        )
    data = parse_import(messages)
    if isinstance(data, Mapping):
        return _import_export(room_class, db, data, name_override=name_override)
    if agents is None:
        raise ConversationValueError("agents=... is required to resume from messages (the roster)")
    config = RoomConfig.build(agents=agents, **room_options)
    checked = _check_messages(data, config.names, strict=strict)
    _remove_termination(checked, remove_termination_string)
    _warn_if_it_would_stop(config, checked)
    last = checked[-1]["speaker"]
    records = [
        *checked,
        {
            "kind": "system",
            "speaker": "room",
            "content": f"Resumed from {len(checked)} imported messages; the last speaker was {last}.",
            "data": {"event": RESUMED, "messages": len(checked), "last_speaker": last},
        },
    ]
    room_id = _store(db, name_override or name, config, records, status="running")
    return room_class(db, room_id)


def _warn_if_it_would_stop(config: RoomConfig, checked: list[dict[str, Any]]) -> None:
    """``ResumeWarning`` when the room's stop rule would end it on its first step. The check
    reads the log as the room will (resume point included), so a cap that counts from the
    resume point, such as MaxTurns, does not warn about turns taken before it."""
    condition = config.termination_object()
    if condition is None:
        return
    rows = [_Row(i + 1, m) for i, m in enumerate(checked)]
    rows.append(_Row(len(rows) + 1, _RESUME_MARK, data={"event": RESUMED}))
    decision = condition.evaluate(log_view(config.names, rows).state())
    if decision is not None:
        warnings.warn(
            f"the last imported message would stop the room at once ({decision.reason}); "
            "pass remove_termination_string to resume past it",
            ResumeWarning,
            stacklevel=4,
        )


class _Row:
    """A checked message seen as a stored row (for the warning check, before anything is stored)."""

    def __init__(
        self, seq: int, message: Mapping[str, Any], data: Mapping[str, Any] | None = None
    ) -> None:
        self.seq = seq
        self.kind = message["kind"]
        self.speaker = message["speaker"]
        self.content = message["content"]
        self.round = message["round"]
        self.state = TurnState.DONE if self.kind in TURN_KINDS else None
        self.visible_to = message["visible_to"]
        self.data = data
        self.input_tokens = self.output_tokens = None


_RESUME_MARK = {"kind": "system", "speaker": "room", "content": "", "round": 0, "visible_to": None}


# -- export and re-import ---------------------------------------------------------------------------


def export_room(room: Any) -> dict[str, Any]:
    record = room.record
    events = []
    for e in room.events():
        events.append(
            {
                "seq": e.seq,
                "kind": e.kind,
                "speaker": e.speaker,
                "content": e.content,
                "round": e.round,
                "activity": e.activity,
                "state": e.state,
                "request_id": e.request_id,
                "visible_to": e.visible_to,
                "data": e.data,
                "model": e.model,
                "input_tokens": e.input_tokens,
                "output_tokens": e.output_tokens,
                "cost": e.cost,
                "latency": e.latency,
                "error": e.error,
                "attempts": e.attempts,
                "saw": e.saw,
                "created_at": iso(e.created_at),
                "updated_at": iso(e.updated_at),
                # Derived from the fields above (the columns every export shares); an import
                # recomputes it, so it can never disagree with the log.
                "provenance": provenance_row(e),
            }
        )
    exported = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "name": record.name,
        "status": record.status,
        "stop_reason": record.stop_reason,
        "config": record.config,
        "events": events,
    }
    versions = storage.room_config_versions(room.db, room.id)
    if versions:  # an edited room: every configuration version it ran with
        exported["config_versions"] = [
            {
                "version": v.version,
                "config": v.config,
                "by": v.by,
                "changes": list(v.changes or []),
                "from_seq": v.from_seq,
            }
            for v in versions
        ]
    return exported


def _check_model_specs(config: RoomConfig) -> None:
    """An imported config's model specs are checked like a new room's: each must resolve (a
    known service, known parameters, no key; the secret guard then checks the whole config)."""
    from conversation import models

    specs = [("model", config.model)] + [
        (f"model of {spec.name!r}", spec.model) for spec in config.roster if spec.model
    ]
    for where, spec in specs:
        if "in_process" in spec:
            continue  # answered by an UnavailableModel outside the process that made it
        try:
            models.resolve_model({k: v for k, v in spec.items() if k != "instance"})
        except ConversationValueError as exc:
            raise ConversationValueError(f"{where}: {exc}") from None


def _import_export(
    room_class: Any, db: storage.Database, data: Mapping[str, Any], name_override: str | None
) -> Any:
    events = data.get("events")
    if isinstance(events, list) and len(events) > MAX_MESSAGES * 2:
        raise ImportRejected(
            f"the export holds {len(events)} events; at most {MAX_MESSAGES * 2} can be imported"
        )
    export = validated(RoomExport, data, error=ImportRejected, place=export_place)
    versions = _checked_versions(export.config_versions or [])
    config = _export_config(export.config or {})
    if export.stop_reason is not None:
        limits.check_text(
            export.stop_reason,
            "the export's stop_reason",
            limits.MAX_STOP_REASON_CHARS,
            error=ImportRejected,
        )
    if export.name and name_override is None:
        try:
            check_placement(export.name)
        except ConversationValueError as exc:
            raise ImportRejected(f"the export's {exc}") from None
    for index, event in enumerate(export.events):
        _check_event(index, event, config.names)
    room_id = _store(
        db,
        name_override or export.name or "imported room",
        config,
        [event.record() for event in export.events],
        status=export.status or "idle",
        stop_reason=export.stop_reason,
        config_versions=versions,
    )
    return room_class(db, room_id)


def _export_config(data: Mapping[str, Any]) -> RoomConfig:
    """The export's config, validated as a stored config and its model specs as a new room's."""
    try:
        config = RoomConfig.from_dict(data)
        _check_model_specs(config)
    except ConversationValueError as exc:
        raise ImportRejected(f"the export's config is invalid: {exc}") from None
    return config


def _check_event(index: int, event: ExportedEvent, roster: tuple[str, ...]) -> None:
    """An exported event against the room: its place in the log, and a speaker that fits its
    kind (a person's name for a human message, the room's for a notice, an agent's for a turn:
    the planner takes a roster name for an agent turn, so a "human" event by Bob would forge a
    Bob turn)."""
    if event.seq != index + 1:
        raise ImportRejected(
            f"event {index} has seq {event.seq!r}; seqs must run 1, 2, 3... without gaps"
        )
    speaker = event.speaker
    if event.kind not in TURN_KINDS:
        _importing(check_name)(speaker, f"event {index} speaker")
        taken = reserved_speaker(speaker, roster)
        if event.kind == EventKind.HUMAN and taken is not None:
            raise ImportRejected(
                f"event {index} is a human message by {taken}; human messages need a person's name"
            )
        if event.kind == EventKind.SYSTEM and taken and speaker.casefold() not in RESERVED_SPEAKERS:
            raise ImportRejected(
                f"event {index} is a system event by {taken}; a system event speaks for "
                "the room ('room' or 'system'), never for an agent"
            )
    elif speaker not in roster:
        raise ImportRejected(
            f"event {index} is an agent turn by {_clip(speaker)}, who is not on the roster"
        )


def _checked_versions(versions: list[ConfigVersion]) -> list[dict[str, Any]]:
    """An export's configuration versions, each config validated like the room's own."""
    checked = []
    for index, item in enumerate(versions):
        if item.version != index + 1:
            raise ImportRejected(f"config version {index} must have version {index + 1}")
        try:
            config = RoomConfig.from_dict(item.config)
        except ConversationValueError as exc:
            raise ImportRejected(f"config version {index + 1} is invalid: {exc}") from None
        checked.append({**item.model_dump(), "config": config.to_dict()})
    return checked


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _store(
    db: storage.Database,
    name: str,
    config: RoomConfig,
    records: list[dict[str, Any]],
    *,
    status: str,
    stop_reason: str | None = None,
    config_versions: list[dict[str, Any]] | None = None,
) -> int:
    """Store the imported room and its whole log in one transaction (no worker can ever see the
    room half-imported); a refusal (a secret in the config, a bad record) is an ``ImportRejected``
    naming the problem, with nothing written."""
    try:
        room_id, _ = storage.create_room_with_log(
            db,
            name,
            config.to_dict(),
            records,
            status=status,
            stop_reason=stop_reason,
            config_versions=config_versions or (),
        )
    except storage.StorageError as exc:
        raise ImportRejected(f"the import could not be stored: {exc}") from None
    return room_id


# -- export files -----------------------------------------------------------------------------------


def safe_export_path(folder: str | Path, filename: str) -> Path:
    """``folder / filename`` for an export file, refusing names that could leave ``folder``
    (separators, ``..``, absolute paths, hidden files) or are not plain file names."""
    if (
        not isinstance(filename, str)
        or len(filename) > 100
        or not _SAFE_FILE.fullmatch(filename)
        or ".." in filename
    ):
        shown = repr(filename[:60]) if isinstance(filename, str) else type(filename).__name__
        raise ConversationValueError(
            f"export file name {shown} is not allowed: use at most 100 letters, digits, '_', '-' "
            "and '.', starting with a letter or digit (no folders)"
        )
    base = Path(folder).resolve()
    path = (base / filename).resolve()
    if path.parent != base:
        raise ConversationValueError(f"export file name {filename!r} leaves the export folder")
    return path


def write_export(room: Any, folder: str | Path, filename: str | None = None) -> Path:
    """Write ``room.export()`` as JSON into ``folder`` (created if needed); return the path."""
    path = safe_export_path(folder, filename or f"room-{room.id}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(room.export(), ensure_ascii=False, indent=1), encoding="utf-8")
    return path


__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ImportRejected",
    "ResumeWarning",
    "export_room",
    "import_room",
    "parse_import",
    "safe_export_path",
    "write_export",
]
