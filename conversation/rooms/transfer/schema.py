"""The shapes of an import, declared once: a message of a saved chat (docs/design.md, "Resuming a group chat") and a room
export (its envelope, events and configuration versions).

``transfer.py`` measures an import's size first (``parse_import``), then validates it with these
models (``text.schema.validated``); what passes is checked data, and only the rules that need the
room (speakers against the roster, the config as a ``RoomConfig``) are left to the handler. A
refusal is an ``ImportRejected`` naming the message or event, the field and the fix.

Every event field the storage layer writes is checked here (kind, turn state, counts, finite
numbers, an error's shape, times with an offset, the message rule on content), so the storage
layer receives import records that already passed the door.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field, TypeAdapter, field_validator, model_validator

import storage
from conversation.rooms.config import NAME_PATTERN
from conversation.text.limits import MAX_REQUEST_ID_CHARS, message_problem
from conversation.text.schema import DoorModel, Loc, Problem, text_rule
from conversation.vocabulary import TURN_KINDS

EXPORT_FORMAT = "conversation-room"
EXPORT_VERSION = 1
#: An imported message may be longer than a person's (an agent's reply).
MAX_CONTENT_CHARS = 100_000
#: The speaker name of an imported message that names no one (a system or manager message).
SYSTEM_SPEAKER = "system"


def _content(value: str) -> str:
    """The message rule (``text.limits.message_problem``), with the longer limit of an import;
    empty content is a pass or a notice."""
    problem = message_problem(value, MAX_CONTENT_CHARS, empty=True)
    if problem is not None:
        raise Problem(problem)
    return value


def _name(value: Any) -> Any:
    if value is not None and (
        not isinstance(value, str) or len(value) > 64 or not NAME_PATTERN.fullmatch(value)
    ):
        shown = repr(value[:70]) if isinstance(value, str) else repr(value)[:70]
        raise Problem(
            f"{shown} is not a valid name: use 1-64 letters, digits, '_', '-' or '.', starting "
            "with a letter or digit (no spaces, so it can be @-mentioned)"
        )
    return value


Content = Annotated[str, AfterValidator(_content)]
Name = Annotated[Any, AfterValidator(_name)]
Count = Annotated[int, Field(ge=0)]


class ImportedMessage(DoorModel):
    """One message of a saved chat: ``content`` and a speaker (``speaker`` or, as autogen writes
    it, ``name``); optionally ``role``, ``seq``, ``round``, ``passed`` and ``to``."""

    content: Content
    speaker: Name = None
    name: Name = None
    role: str | None = None
    seq: Any = None
    round: Count = 0
    passed: bool = False
    to: list[str] | None = None

    @property
    def who(self) -> str | None:
        return self.speaker if self.speaker is not None else self.name


MESSAGES = TypeAdapter(list[ImportedMessage])


def message_place(loc: Loc) -> str:
    """``(2, "content")`` -> ``message 2 content`` (autogen's ``name`` is the speaker)."""
    if not loc:
        return "messages"
    rest = ["speaker" if part == "name" else str(part) for part in loc[1:]]
    return " ".join([f"message {loc[0]}", *rest])


def _time(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise Problem(f"{value[:60]!r} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise Problem(f"{value[:60]!r} must be a time with a UTC offset (e.g. +00:00)")
    return value


def _finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise Problem(f"holds {value!r}, which is not a finite number")
    return value


Time = Annotated[str | None, AfterValidator(_time)]
Number = Annotated[float | None, AfterValidator(_finite)]


def _one_of(values: frozenset[str], what: str) -> AfterValidator:
    """A field whose value, when given, is one of ``values`` (a storage vocabulary)."""

    def check(value: str | None) -> str | None:
        if value is not None and value not in values:
            raise Problem(f"{_shown(value)} is not a {what}; use one of {sorted(values)}")
        return value

    return AfterValidator(check)


TurnState = Annotated[str | None, _one_of(storage.TURN_STATES, "turn state")]
RoomStatus = Annotated[str | None, _one_of(storage.ROOM_STATUSES, "room status")]


def _error(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None and not {"type", "message"} <= set(value):
        raise Problem("must be an object with 'type' and 'message' (a failed turn's error)")
    return value


class ExportedEvent(DoorModel):
    """One event of an export, every column as ``export_room`` writes it."""

    seq: int
    kind: Any
    speaker: Any = None
    content: Content = ""
    round: Count | None = None
    activity: Count | None = None
    state: TurnState = None
    request_id: Annotated[Any, text_rule(MAX_REQUEST_ID_CHARS, one_line=True, optional=True)] = None
    visible_to: list[str] | None = None
    data: dict[str, Any] | None = None
    model: str | None = None
    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cost: Number = None
    latency: Number = None
    error: Annotated[dict[str, Any] | None, AfterValidator(_error)] = None
    attempts: Count | None = None
    saw: list[int] | None = None
    created_at: Time = None
    updated_at: Time = None
    #: Derived from the other fields; recomputed on import.
    provenance: dict[str, Any] | None = None

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        if value not in storage.EVENT_KINDS:
            raise Problem(
                f"is an unknown kind {_shown(value)}; use one of {sorted(storage.EVENT_KINDS)}"
            )
        return value

    @model_validator(mode="after")
    def _state_fits_kind(self) -> ExportedEvent:
        if self.kind not in TURN_KINDS and self.state is not None:
            raise Problem(f"is a {self.kind} event, which has no turn state (got {self.state!r})")
        if self.kind in TURN_KINDS and "state" in self.model_fields_set and not self.state:
            raise Problem(
                f"is a {self.kind!r} turn, which needs a turn state (e.g. 'done'); leave the "
                "field out for 'done'"
            )
        return self

    def record(self) -> dict[str, Any]:
        """The record ``storage.create_room_with_log`` writes (no seq, no provenance)."""
        fields = self.model_fields_set - {"seq", "provenance"}
        return {name: getattr(self, name) for name in fields}


class ConfigVersion(DoorModel):
    """One configuration version of an edited room (``storage.room_config_versions``)."""

    version: int
    config: dict[str, Any]
    by: str | None = None
    changes: list[Any] = []
    from_seq: Count | None = None


class RoomExport(DoorModel):
    """A room as ``Room.export()`` writes it: format and version first, then the room."""

    format: str
    version: Any
    name: str | None = None
    status: RoomStatus = None
    stop_reason: str | None = None
    config: dict[str, Any] | None = None
    events: list[ExportedEvent]
    config_versions: list[ConfigVersion] | None = None

    @model_validator(mode="before")
    @classmethod
    def _format_first(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        if data.get("format") != EXPORT_FORMAT:
            raise Problem(
                f"is not a room export (format {EXPORT_FORMAT!r}): an object import must be a "
                "room export; to resume from messages pass a list of messages"
            )
        if data.get("version") != EXPORT_VERSION:
            raise Problem(
                f"has unknown export version {_shown(data.get('version'))}; this library reads "
                f"version {EXPORT_VERSION}"
            )
        return data


def export_place(loc: Loc) -> str:
    """``("events", 3, "content")`` -> ``event 3 content``; ``("name",)`` -> ``the export's
    name``; ``("config_versions", 0)`` -> ``config version 0``."""
    if not loc:
        return "the import"
    head, *rest = loc
    if head in ("events", "config_versions") and rest and isinstance(rest[0], int):
        label = "event" if head == "events" else "config version"
        return " ".join([f"{label} {rest[0]}", *map(str, rest[1:])])
    return " ".join([f"the export's {head}", *map(str, rest)])


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "MAX_CONTENT_CHARS",
    "MESSAGES",
    "SYSTEM_SPEAKER",
    "ConfigVersion",
    "ExportedEvent",
    "ImportedMessage",
    "RoomExport",
    "export_place",
    "message_place",
]
