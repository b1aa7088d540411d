"""``Room``: a conversation room that lives in the database (docs/design.md, "Rooms, activities and mentions" to "Resuming a group chat").

A room is its configuration (``RoomConfig``) plus an append-only log of events. Everything a
``Room`` object knows it reads from the database, so any number of objects, browser tabs, threads
and worker processes can share one room: human messages are appended with a request id (the same
id again is the same message), and agent turns are taken under a lease with a fenced commit
(``room_driver``). ``step()``/``run()`` drive the room from this process; a worker
(``python -m conversation.worker``) drives every runnable room of a database the same way.

Status: ``idle`` (no human message yet) -> ``running`` (a human message opened an activity) ->
``settled`` (the planner has no next speaker) / ``terminated`` (a condition fired; its reason is
``stop_reason`` and a system event) / ``waiting`` (a draft waits for a person) / ``paused`` /
``stopped`` / ``failed`` (a turn failed; resume or abandon it). A new human message re-opens a
settled, terminated or stopped room.

People: every verb a person uses takes ``actor=`` (``conversation.access``): ``None`` is the local
user with every right; an actor whose role lacks the act gets ``PermissionDenied`` and nothing
is written. Who acted is recorded: ``data.by`` on a message, a system event
``{"event": "paused" | "resumed" | "stopped" | "forked", "by": ...}`` for the room's moves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from typing import Any

from typing_extensions import Unpack

import storage
from conversation.access.roles import Action, Actor, require, who
from conversation.boundary import storage_errors, translating
from conversation.exceptions import (
    ConversationStateError,
    ConversationValueError,
)
from conversation.rooms.config import RoomConfig, RoomSettings, check_placement
from conversation.rooms.continuing import (
    check_continue_turns,
    continued_termination,
    no_answer_reason,
    turns_taken,
)
from conversation.rooms.driving import drive
from conversation.rooms.editing import changed_config, config_versions, fork_edit, version_notice
from conversation.rooms.engine import Engine, owner_id
from conversation.rooms.manage import store_room
from conversation.rooms.posting import post_message
from conversation.rooms.turn import Turn
from conversation.sync import run_sync
from conversation.text.limits import MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS
from conversation.text.limits import (
    MAX_STOP_REASON_CHARS,
    check_text,
)
from conversation.vocabulary import (
    FINAL_ROOM_STATUSES,
    OPEN_ROOM_STATUSES,
    RESUMABLE_ROOM_STATUSES,
    NoticeKind,
    RoomStatus,
    TurnEntry,
    TurnState,
    entries_of,
)


@translating
class Room:
    """A durable conversation room (see the module docstring)."""

    def __init__(self, db: storage.Database, room_id: int) -> None:
        self.db = db
        self.id = room_id
        self._owner = owner_id("room")
        self._engine: Engine | None = None

    # -- creating and opening -----------------------------------------------------------------

    @classmethod
    def create(
        cls,
        db: storage.Database,
        *,
        name: str,
        agents: Any,
        experiment_id: int | None = None,
        condition: str | None = None,
        replicate: int | None = None,
        in_process_only: bool = False,
        actor: Actor | None = None,
        **settings: Unpack[RoomSettings],
    ) -> Room:
        """Store a new room (status ``idle``) and return it. ``settings`` are the room's settings
        (``RoomSettings``: planner, model, termination, moderated, prompt_template, context,
        seed, retry, the request settings, budget, breakpoints, streaming, ...; each declared
        once, with its default and doc, in ``rooms.config.settings``). Bad
        configuration raises ``ConversationValueError`` naming the field, and nothing is stored.
        A model object that cannot be rebuilt in another process is refused unless
        ``in_process_only`` (the room then runs in this process only). ``budget``: a ``Budget``
        or ``{"max_tokens": ..., "max_dollars": ...}``; once the room's recorded spend reaches it
        no new turn starts (``termination.budget``). ``actor`` needs the researcher role
        (``PermissionDenied``)."""
        require(actor, Action.CREATE_ROOM)
        check_placement(name, experiment_id, condition, replicate)
        config = RoomConfig.build(agents=agents, in_process_only=in_process_only, **settings)
        return cls(db, store_room(db, name, config, experiment_id, condition, replicate))

    @classmethod
    def open(cls, db: storage.Database, room_id: int) -> Room:
        """The stored room ``room_id``; ``ConversationValueError`` if there is none."""
        room = cls(db, room_id)
        room.record  # noqa: B018 - raises for an unknown id
        return room

    # -- what it is now -----------------------------------------------------------------------

    @property
    def record(self) -> storage.Room:
        """The room's stored row (a snapshot)."""
        return storage_errors(storage.get_room, self.db, self.id)

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def stop_reason(self) -> str | None:
        return self.record.stop_reason

    @property
    def config(self) -> RoomConfig:
        return RoomConfig.from_dict(self.record.config)

    def events(self, after_seq: int | None = None, limit: int | None = None) -> list[storage.Event]:
        """The stored events after ``after_seq``, in seq order."""
        return storage.events(self.db, self.id, after_seq=after_seq, limit=limit)

    def turns(self) -> list[Turn]:
        """Every agent turn (messages and passes, in every state), in seq order."""
        return [Turn(self.db, e) for e in entries_of(self.events()) if isinstance(e, TurnEntry)]

    def turn(self, event_id: int) -> Turn:
        event = storage_errors(storage.get_event, self.db, event_id)
        if event.room_id != self.id:
            raise ConversationValueError(f"event {event_id} does not belong to room {self.id}")
        return Turn(self.db, event)

    def pending(self) -> Turn | None:
        """The open turn (running, waiting for a person, or interrupted), if any."""
        event = storage.open_turn(self.db, self.id)
        return Turn(self.db, event) if event is not None else None

    def transcript(self) -> list[dict[str, Any]]:
        """The finished messages, for reading: ``{seq, speaker, kind, text}`` (people's
        messages, notices and finished turns)."""
        return [
            {"seq": e.seq, "speaker": e.speaker, "kind": e.kind, "text": e.content}
            for e in entries_of(self.events())
            if not e.is_turn or e.is_done
        ]

    def __repr__(self) -> str:
        return f"Room(id={self.id})"

    # -- people ---------------------------------------------------------------------------------

    def post(
        self,
        content: str,
        *,
        speaker: str = "user",
        request_id: str | None = None,
        to: Sequence[str] | None = None,
        actor: Actor | None = None,
        continue_turns: int | None = None,
    ) -> storage.Event:
        """Post a human message: it opens a new activity. Accepted while agents run.

        ``request_id`` makes it idempotent (the same id and text again: the same event, no new
        row; the same id with other text: ``RequestConflictError``). ``to`` makes it private to
        those agents. ``data.by`` records who posted: the actor's identity (``actor`` needs the
        moderator role), else the speaker.

        A room that reached its turn limit or its budget stays ended for the agents: the
        message is recorded, but no agent answers it (``no_answer_reason()`` says why, before
        posting). ``continue_turns=N`` first raises the turn limit to N more agent turns, as a
        settings change (``extend_limit``), so the agents answer.
        """
        change = None
        repeated = request_id is not None and self._posted(request_id)
        if continue_turns is not None and not repeated:  # a repeat is the same message, no more
            # The raised limit and the message are one write (a settings change, then the
            # message): no one sees one without the other.
            require(actor, Action.CREATE_ROOM)
            by = who(actor, speaker)
            new, fields = changed_config(self.config, {"termination": self._raised(continue_turns)})
            change = (new.to_dict(), by, fields, version_notice(by, fields))
        return post_message(
            self.db,
            self.id,
            content,
            speaker=speaker,
            request_id=request_id,
            to=to,
            actor=actor,
            config_change=change,
        )

    def no_answer_reason(self) -> str | None:
        """Why no agent would answer a message posted now (the room's turn limit is reached, its
        budget spent: the reason it would end with at once), or None when the agents answer."""
        return no_answer_reason(self.config, self.events())

    def extend_limit(self, turns: int, *, actor: Actor | None = None, by: str = "user") -> int:
        """Allow ``turns`` more agent turns: every turn limit already reached is raised to the
        turns taken so far plus ``turns``, stored as a settings change (``update_config``: a new
        version and its notice). Returns the version now in force. ``ConversationStateError``
        when no turn limit is reached (a budget is raised with ``update_config``)."""
        return self.update_config({"termination": self._raised(turns)}, actor=actor, by=by)

    def _posted(self, request_id: Any) -> bool:
        """Whether a message with ``request_id`` is already in the log (a request sent again)."""
        if not isinstance(request_id, str):
            return False  # refused by post_message with its own error
        return storage_errors(storage.find_event, self.db, self.id, request_id) is not None

    def _raised(self, turns: int) -> Any:
        """The room's stop rules with every reached turn limit raised by ``turns`` more."""
        turns = check_continue_turns(turns)
        config = self.config
        raised = continued_termination(
            config.termination, turns_taken(config, self.events()), turns
        )
        if raised is None:
            raise ConversationStateError(
                f"room {self.id} has not reached a turn limit: there is nothing to continue"
            )
        return raised

    def pause(self, *, actor: Actor | None = None, by: str = "user") -> None:
        """Take no new turn until ``resume()`` (a turn in flight still lands). A notice
        ``Paused by <who>`` goes in the log with the status change (one write)."""
        require(actor, Action.CONTROL)
        self._move(
            "pause",
            RoomStatus.PAUSED,
            OPEN_ROOM_STATUSES - {RoomStatus.PAUSED}
            | {RoomStatus.SETTLED, RoomStatus.FAILED, RoomStatus.TERMINATED},
            by=who(actor, by),
        )

    def resume(self, *, actor: Actor | None = None, by: str = "user") -> None:
        """Go on after ``pause()``; in a failed room, retry the interrupted turn (who did it is
        in the turn's decisions)."""
        require(actor, Action.CONTROL)
        status = self.status
        if status == RoomStatus.FAILED:
            pending = self.pending()
            if pending is not None and pending.state == TurnState.INTERRUPTED:
                pending.resume(actor=actor, by=by)
                return
        self._move(
            "resume",
            RoomStatus.RUNNING,
            RESUMABLE_ROOM_STATUSES,
            by=who(actor, by),
        )

    def stop(
        self, reason: str = "stopped by a person", *, actor: Actor | None = None, by: str = "user"
    ) -> None:
        """Stop the room and its open turn (one write, with a notice in the log whose data says
        who stopped it); a new human message re-opens it."""
        require(actor, Action.CONTROL)
        stopped_by = who(actor, by)
        if not isinstance(reason, str) or not reason.strip():
            raise ConversationValueError("stop needs a reason (or leave the default)")
        check_text(reason, "stop reason", MAX_STOP_REASON_CHARS)
        allowed = OPEN_ROOM_STATUSES | FINAL_ROOM_STATUSES - {RoomStatus.STOPPED}
        if not storage_errors(
            storage.stop_room,
            self.db,
            self.id,
            reason=reason,
            allowed=allowed,
            notice=f"Stopped: {reason}",
            notice_data={"event": NoticeKind.STOPPED, "reason": reason, "by": stopped_by},
        ):
            raise ConversationStateError(
                f"cannot stop room {self.id}: it is {self.status} (stop works on a room that is "
                f"{', '.join(sorted(allowed))})"
            )

    def _move(self, verb: str, status: str, allowed: Collection[str], *, by: str) -> None:
        past = _PAST[verb]
        updated = storage_errors(
            storage.update_room,
            self.db,
            self.id,
            status=status,
            expected_status=tuple(allowed),
            notice=f"{past.capitalize()} by {by}.",
            notice_data={"event": past, "by": by},
        )
        if updated is None:
            raise ConversationStateError(
                f"cannot {verb} room {self.id}: it is {self.status} "
                f"({verb} works on a room that is {', '.join(sorted(allowed))})"
            )

    # -- agents -----------------------------------------------------------------------------------

    def _turn_engine(self) -> Engine:
        if self._engine is None:
            self._engine = Engine(self.db, self._owner)
        return self._engine

    async def step_async(self) -> Turn | None:
        """``step()`` on the caller's event loop."""
        turns = await self._drive(1)
        return turns[0] if turns else None

    def step(self) -> Turn | None:
        """Take one agent turn; the Turn, or None when settled, paused, waiting, stopped, failed,
        terminated, or driven by another worker at this moment."""
        return run_sync(self.step_async())

    async def run_async(self, max_turns: int = 1_000) -> list[Turn]:
        """``run()`` on the caller's event loop."""
        return await self._drive(max_turns)

    async def _drive(self, max_turns: int) -> list[Turn]:
        """Up to ``max_turns`` turns under one lease (``driving.drive``)."""
        events = await drive(self.db, self.id, self._owner, self._turn_engine(), max_turns)
        return [Turn(self.db, event) for event in events]

    def run(self, max_turns: int = 1_000) -> list[Turn]:
        """Take turns until the room settles, stops, pauses, waits for approval, fails or is
        terminated (at most ``max_turns`` in this call); returns the turns taken."""
        return run_sync(self.run_async(max_turns=max_turns))

    # -- copies -----------------------------------------------------------------------------------

    def fork(
        self,
        at_seq: int,
        name: str | None = None,
        *,
        edit: str | None = None,
        speaker: str | None = None,
        actor: Actor | None = None,
        by: str = "user",
    ) -> Room:
        """A new room with this room's log up to ``at_seq`` (parent recorded) and the config version
        in force at ``at_seq`` (``config_at``: settings changed later are not carried over), to
        try another continuation. It starts ``idle``; post a message or ``resume`` it to go on.
        Its log ends with a notice of who forked it, ``{"event": "forked", "by", "from_room",
        "at_seq", "edited"}`` (agents are not shown it); ``actor`` needs the researcher role.

        Edit-and-replay: with ``edit`` (new text) and/or ``speaker`` (another agent of the roster
        for an agent's message, another person's name for a person's), the copy of message
        ``at_seq`` is changed (the original kept in its ``data["forked_from"]``) and the fork
        starts ``paused``: ``resume()`` continues from the changed message."""
        require(actor, Action.CREATE_ROOM)
        forked_by = who(actor, by)
        found = None
        if edit is not None or speaker is not None:
            found = next(iter(self.events(after_seq=at_seq - 1, limit=1)), None)
            found = found if found is not None and found.seq == at_seq else None
        config = self.config_at(at_seq)  # the settings in force at the fork point
        changes = fork_edit(
            found, RoomConfig.from_dict(config), edit, speaker, max_chars=MAX_MESSAGE_CHARS
        )
        edited = " (edited)" if changes is not None else ""
        fork_id = storage_errors(
            storage.fork_room,
            self.db,
            self.id,
            at_seq,
            name,
            config=config,
            edit=changes,
            status=RoomStatus.PAUSED if changes is not None else RoomStatus.IDLE,
            notice=f"Forked from room #{self.id} at #{at_seq} by {forked_by}{edited}.",
            notice_data={
                "event": NoticeKind.FORKED,
                "by": forked_by,
                "from_room": self.id,
                "at_seq": at_seq,
                "edited": changes is not None,
            },
        )
        return Room(self.db, fork_id)

    # -- settings ---------------------------------------------------------------------------------

    def update_config(self, changes: Any, *, actor: Actor | None = None, by: str = "user") -> int:
        """Change the room's settings (roster, planner and caps, stop rules, prompt, context
        policy, model, moderation, breakpoints, ...): a dict of ``Room.create`` arguments, or a
        whole ``RoomConfig``. Validated exactly like ``Room.create`` (``ConversationValueError``
        names the field, nothing is stored); stored as a new version applied from the next turn (a
        turn already claimed keeps its version), with a system event ``{"event":
        "config_changed", "version", "by", "changes"}``. Returns the version now in force (the
        same one when nothing changes). ``actor`` needs the researcher role (as creating a room
        does); ``by`` names who changed it when there is no actor."""
        require(actor, Action.CREATE_ROOM)
        by = who(actor, by)
        new, fields = changed_config(self.config, changes)
        if not fields:
            return len(self.config_versions())
        version, _ = storage_errors(
            storage.change_room_config,
            self.db,
            self.id,
            new.to_dict(),
            by=by,
            changes=fields,
            notice=version_notice(by, fields),
        )
        return int(version)

    def config_at(self, seq: int) -> dict[str, Any]:
        """The stored config in force at ``seq``: the newest version whose ``from_seq`` (the seq
        of its ``config_changed`` notice) is at or before ``seq``."""
        versions = self.config_versions()
        in_force = [v for v in versions if int(v["from_seq"] or 0) <= seq] or versions[:1]
        return dict(in_force[-1]["config"])

    def config_versions(self) -> list[dict[str, Any]]:
        """Every configuration version, oldest first: ``{version, config, by, changes, from_seq,
        created_at}`` (version 1 is the one the room was created with)."""
        return config_versions(self.db, self.id)

    def export(self) -> dict[str, Any]:
        """The room as versioned JSON data (config and log; no secrets: keys are never stored)."""
        from conversation.rooms.transfer.exporting import export_room

        return export_room(self)

    @classmethod
    def import_messages(
        cls,
        db: storage.Database,
        messages: Any,
        *,
        agents: Any = None,
        remove_termination_string: Any = None,
        name: str = "imported room",
        strict: bool = False,
        actor: Actor | None = None,
        **room_options: Any,
    ) -> Room:
        """Resume a group chat from saved messages (docs/design.md, "Resuming a group chat"), or restore an ``export()``.

        Messages are ``{"speaker" or "name", "content"}`` (plus optional ``role``, ``to``,
        ``passed``, ``round``). A first message without a name (a system or manager message, as
        AutoGen saves them) is imported as a system message. A speaker who is not on the roster
        is imported as a person by default; with ``strict=True`` it is refused (unless the
        message has ``role: "user"``). The room and its whole log are written in one transaction.
        ``actor`` needs the researcher role.
        """
        from conversation.rooms.transfer.importing import import_room

        require(actor, Action.CREATE_ROOM)
        return import_room(
            cls,
            db,
            messages,
            agents=agents,
            remove_termination_string=remove_termination_string,
            name=name,
            strict=strict,
            **room_options,
        )


_PAST = {"pause": NoticeKind.PAUSED, "resume": NoticeKind.RESUMED}


def run_rooms(rooms: Sequence[Room]) -> None:
    """Run several rooms to their end concurrently, from synchronous code."""

    async def all_rooms() -> None:
        await asyncio.gather(*(room.run_async() for room in rooms))

    run_sync(all_rooms())


__all__ = ["MAX_MESSAGE_CHARS", "Room", "run_rooms"]
