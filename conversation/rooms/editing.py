"""Changing a room after it was created: new configuration versions, and edited forks.

``Room.update_config`` and ``Room.fork(edit=..., speaker=...)`` call these. A change is
validated exactly as ``Room.create`` validates a new room (``RoomConfig.build``), and the
configuration it produces is stored as a new version, applied from the next turn (a turn already
claimed keeps the version it was planned with).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import storage
from conversation.boundary import storage_errors
from conversation.exceptions import ConversationValueError
from conversation.rooms.config import RoomConfig, check_name
from conversation.rooms.config.settings import EDITABLE, FIELDS, KEYWORDS
from conversation.text.limits import check_message
from conversation.vocabulary import AgentTurn, HumanMessage, entry_of


def build_arguments(config: RoomConfig) -> dict[str, Any]:
    """The ``RoomConfig.build`` arguments that rebuild ``config`` as it is: every setting by its
    keyword (the stored form of each), the roster as its specs."""
    data = config.to_dict()
    arguments = {KEYWORDS[name]: data.get(name, getattr(config, name)) for name in FIELDS}
    arguments["agents"] = list(config.roster)
    arguments["in_process_only"] = config.in_process_only
    return arguments


def changed_config(
    current: RoomConfig, changes: Mapping[str, Any] | RoomConfig
) -> tuple[RoomConfig, list[str]]:
    """The new configuration and the names of the config fields it changes (``roster``,
    ``planner``, ...; empty when nothing changes). ``changes`` is a whole ``RoomConfig`` or a
    dict of ``Room.create`` arguments; ``ConversationValueError`` names a bad one."""
    arguments = build_arguments(current)
    # The model is kept as stored (with its live instance) unless it is changed.
    model: Mapping[str, Any] | None = current.model
    if isinstance(changes, RoomConfig):
        arguments.update(build_arguments(changes))
        model = changes.model
    elif isinstance(changes, Mapping):
        given = dict(changes)
        if "roster" in given:
            if "agents" in given:
                raise ConversationValueError("pass the new agents as roster or agents, not both")
            given["agents"] = given.pop("roster")
        unknown = sorted(set(given) - set(EDITABLE))
        if unknown:
            raise ConversationValueError(
                f"update_config cannot change {unknown}; it changes {', '.join(EDITABLE)}"
            )
        if "seed" in given and given["seed"] is None:
            raise ConversationValueError("seed must be an integer (the room's seed is kept)")
        arguments.update(given)
        model = None if "model" in given else model
    else:
        raise ConversationValueError(
            "update_config takes a dict of settings (e.g. {'moderated': True}) or a RoomConfig, "
            f"got {type(changes).__name__}"
        )
    new = RoomConfig.build(**arguments)
    if model is not None:
        new = new.model_copy(update={"model": model})
    before, after = current.to_dict(), new.to_dict()
    fields = [k for k in after.keys() | before.keys() if before.get(k) != after.get(k)]
    order = list(after)
    return new, sorted(fields, key=lambda k: order.index(k) if k in order else len(order))


def config_versions(db: storage.Database, room_id: int) -> list[dict[str, Any]]:
    """Every configuration version of room ``room_id``, oldest first: ``{version, config, by,
    changes, from_seq, created_at}`` (version 1 is the one the room was created with)."""
    rows = storage_errors(storage.room_config_versions, db, room_id)
    if not rows:
        record = storage_errors(storage.get_room, db, room_id)
        return [
            {
                "version": 1,
                "config": dict(record.config),
                "by": None,
                "changes": [],
                "from_seq": 0,
                "created_at": record.created_at,
            }
        ]
    return [
        {
            "version": row.version,
            "config": row.config,
            "by": row.by,
            "changes": list(row.changes or []),
            "from_seq": row.from_seq,
            "created_at": row.created_at,
        }
        for row in rows
    ]


def version_notice(by: str, changes: list[str]) -> str:
    """The system notice of a configuration change (its version is in the event's data)."""
    return f"Settings changed by {by}: {', '.join(changes)} (applied from the next turn)"


def check_by(by: Any) -> str:
    """Who acts (a signed-in identity or a person's name): non-empty text of at most 200."""
    if not isinstance(by, str) or not by.strip() or len(by) > 200:
        raise ConversationValueError(
            f"by={by!r} must name who acts (non-empty text of at most 200 characters)"
        )
    return by


def fork_edit(
    event: storage.Event | None,
    config: RoomConfig,
    edit: str | None,
    speaker: str | None,
    *,
    max_chars: int,
) -> dict[str, Any] | None:
    """The storage edit of the forked copy of ``event`` (a finished message): new content and/or
    speaker, the original kept in ``data["forked_from"]``; None when nothing is edited."""
    if edit is None and speaker is None:
        return None
    if event is None:
        raise ConversationValueError("there is no message at that seq to edit; pick a message")
    entry = entry_of(event)
    if not entry.is_message:
        raise ConversationValueError(
            f"seq {event.seq} is a {event.kind} event ({event.state or 'no state'}); only a "
            "person's message or a finished agent message can be edited in a fork"
        )
    change: dict[str, Any] = {}
    if edit is not None:
        check_message(edit, "edit (the message's new text)", max_chars)  # the message rule
        change["content"] = edit
    if speaker is not None:
        check_name(speaker, "speaker")
        if isinstance(entry, AgentTurn) and speaker not in config.names:
            raise ConversationValueError(
                f"speaker {speaker!r} is not on the roster {list(config.names)}; an agent's "
                "message goes to another agent of the room"
            )
        if isinstance(entry, HumanMessage) and speaker in config.names:
            raise ConversationValueError(
                f"speaker {speaker!r} is an agent; a person's message goes to another person's name"
            )
        change["speaker"] = speaker
    change["data"] = {"forked_from": {"content": event.content, "speaker": event.speaker}}
    return change


__all__ = [
    "EDITABLE",
    "build_arguments",
    "changed_config",
    "config_versions",
    "check_by",
    "fork_edit",
    "version_notice",
]
