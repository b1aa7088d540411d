"""A person's message to a room: checked, then appended in one write (``Room.post``).

A message obeys the one message rule (``text.limits.check_message``: non-empty text within
``MAX_MESSAGE_CHARS``, without NUL); its speaker is a
person's name (never an agent's or a reserved one); ``to`` makes it private to agents of the
room. Nothing is written when a check fails (``ConversationValueError`` naming the fix).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import storage
from conversation.access.roles import Action, Actor, require, who
from conversation.boundary import storage_errors
from conversation.exceptions import ConversationValueError
from conversation.rooms.config import RoomConfig, check_name, reserved_speaker
from conversation.text.limits import (
    MAX_AGENTS,
    MAX_REQUEST_ID_CHARS,
    check_message,
    check_text,
)
from conversation.vocabulary import REOPENED_BY_A_MESSAGE, EventKind


def audience(to: Any, config: RoomConfig) -> list[str] | None:
    """The agents a private message goes to (``to``: a name or a list of the room's agent
    names; duplicates dropped, order kept), or None for a message to everyone."""
    if to is None:
        return None
    if isinstance(to, str):
        to = [to]
    if (
        not isinstance(to, list | tuple)
        or len(to) > MAX_AGENTS
        or not all(isinstance(n, str) and n in config.names for n in to)
        or not to
    ):
        shown = (
            repr([n[:40] if isinstance(n, str) else n for n in list(to)[:5]])
            if isinstance(to, list | tuple)
            else type(to).__name__
        )
        raise ConversationValueError(
            f"to={shown}: private messages go to a list of agent names of the room "
            f"{list(config.names)}"
        )
    return list(dict.fromkeys(to))


def _checked(
    content: str, speaker: str, request_id: str | None, to: Any, settings: RoomConfig
) -> list[str] | None:
    """The message's checks (a ``ConversationValueError`` naming what is wrong); returns its
    private audience (None: everyone)."""
    check_message(content)  # the message rule (text.limits): non-empty, bounded, no NUL
    if request_id is not None:
        check_text(request_id, "request_id", MAX_REQUEST_ID_CHARS, one_line=True)
    check_name(speaker, "speaker")
    taken = reserved_speaker(speaker, settings.names)
    if taken is not None:
        raise ConversationValueError(
            f"speaker {taken}; human messages need a person's name (e.g. 'user')"
        )
    private_to = audience(to, settings)
    if request_id is not None and (not isinstance(request_id, str) or not request_id.strip()):
        raise ConversationValueError("request_id must be non-empty text or None")
    return private_to


def post_message(
    db: storage.Database,
    room_id: int,
    content: str,
    *,
    speaker: str = "user",
    request_id: str | None = None,
    to: Sequence[str] | None = None,
    actor: Actor | None = None,
    config_change: tuple[dict[str, Any], str, list[str], str] | None = None,
    config: dict[str, Any] | None = None,
    charge: Any = None,
) -> storage.Event:
    """Post a human message to room ``room_id`` (the contract of ``Room.post``).
    ``config_change``: ``(config, by, changed fields, notice)``, a settings change written in
    the same transaction, right before the message (continuing past a turn limit).
    ``config``: the room's stored settings when the caller has just read them (a participant's
    post reads them with its seat), else they are read here. ``charge``: run in the message's
    write transaction first (``storage.PostRate``, a participant's rate count; what it raises
    writes nothing)."""
    require(actor, Action.POST)
    if config is None:
        config = storage_errors(storage.get_room, db, room_id).config
    private_to = _checked(content, speaker, request_id, to, RoomConfig.from_dict(config))
    # One write: the message and the room it re-opens. A request sent again (a double click, a
    # browser retry) is the same message and changes nothing: above all it does not re-open a
    # room that was stopped or ended since.
    message = {
        "kind": EventKind.HUMAN,
        "speaker": speaker,
        "content": content,
        "request_id": request_id,
        "visible_to": private_to,
        "data": {"by": who(actor, speaker)},
    }
    if config_change is not None:
        new_config, by, fields, notice = config_change
        _, event = storage_errors(
            storage.post_after_config_change,
            db,
            room_id,
            new_config,
            by=by,
            changes=fields,
            notice=notice,
            message=message,
            reopen=REOPENED_BY_A_MESSAGE,
        )
        return event  # type: ignore[no-any-return]
    return storage_errors(
        storage.append_message,
        db,
        room_id,
        **message,
        reopen=REOPENED_BY_A_MESSAGE,
        charge=charge,
    )


__all__ = ["audience", "check_message", "post_message"]
