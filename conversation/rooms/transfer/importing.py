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

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import storage
from conversation.boundary import storage_errors
from conversation.exceptions import (
    ConversationStateError,
    ConversationValueError,
    ImportRejected,
    StorageFailure,
)
from conversation.rooms.config import (
    RESERVED_SPEAKERS,
    RoomConfig,
    RoomSettings,
    check_name,
    check_placement,
    reserved_speaker,
)
from conversation.rooms.log import RESUMED, log_view
from conversation.rooms.transfer.reading import (
    ResumeWarning,
    as_import_error,
    check_messages,
    parse_import,
    remove_termination,
)
from conversation.rooms.transfer.schema import (
    MAX_CONTENT_CHARS as MAX_CONTENT_CHARS,
)
from conversation.rooms.transfer.schema import (
    ConfigVersion,
    ExportedEvent,
    RoomExport,
    export_place,
)
from conversation.text import limits
from conversation.text.limits import MAX_IMPORT_MESSAGES as MAX_MESSAGES
from conversation.text.schema import validated
from conversation.vocabulary import TURN_KINDS, EventKind, TurnState


class Row:
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


RESUME_MARK = {"kind": "system", "speaker": "room", "content": "", "round": 0, "visible_to": None}


#: What ``Room.import_messages`` passes on to ``RoomConfig.build`` for a message list.
_ROOM_OPTIONS = frozenset(RoomSettings.__annotations__) | {"in_process_only"}


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
    checked = check_messages(data, config.names, strict=strict)
    remove_termination(checked, remove_termination_string)
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
    rows = [Row(i + 1, m) for i, m in enumerate(checked)]
    rows.append(Row(len(rows) + 1, RESUME_MARK, data={"event": RESUMED}))
    decision = condition.evaluate(log_view(config.names, rows).state())
    if decision is not None:
        warnings.warn(
            f"the last imported message would stop the room at once ({decision.reason}); "
            "pass remove_termination_string to resume past it",
            ResumeWarning,
            stacklevel=4,
        )


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
        as_import_error(check_name)(speaker, f"event {index} speaker")
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
        room_id, _ = storage_errors(
            storage.create_room_with_log,
            db,
            name,
            config.to_dict(),
            records,
            status=status,
            stop_reason=stop_reason,
            config_versions=config_versions or (),
        )
    except (ConversationValueError, ConversationStateError, StorageFailure) as exc:
        raise ImportRejected(f"the import could not be stored: {exc}") from None
    return room_id


# -- export files -----------------------------------------------------------------------------------


__all__ = [
    "import_room",
]
