"""Rooms run again, offline, in a scratch database, from a room's export (``Room.export``).

- :func:`rerun_room` (an agent-only room): the room's opening imported alone, then the engine
  runs it as it ran the first time (planning, prompts, termination), every call answered by the
  given cache; its turns and final status are the result.
- :func:`replay_turn` (a room with people, one turn at a time): the room's events before a
  turn imported verbatim, the turn imported as ``running``, and the engine resumes it (the
  crash-resume path: its prompt rebuilt from the events before it only); the reply committed
  is the result. People's messages stay where they were posted, so the replies can be checked
  whatever the timing of the original.

The engine is the one every room uses (``rooms.engine``); only the cache is the caller's.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import storage
from conversation.rooms.driving import drive
from conversation.rooms.engine import Engine
from conversation.rooms.room import Room
from conversation.sync import run_sync
from conversation.vocabulary import TURN_KINDS, EventKind, RoomStatus, TurnState

#: The fields of a turn compared between two runs (what was said, by whom, how it ended).
COMPARED = ("seq", "kind", "speaker", "content", "state", "visible_to")
#: Statuses a room reaches by its own rules (a re-run must reach the same).
SELF_ENDED = frozenset({RoomStatus.SETTLED, RoomStatus.TERMINATED, RoomStatus.IDLE})
_names = itertools.count(1)


def is_turn(event: Mapping[str, Any]) -> bool:
    return event.get("kind") in TURN_KINDS


def done_turns(export: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The turns of an export that finished (what a replay can ask again)."""
    return [e for e in export["events"] if is_turn(e) and e.get("state") == TurnState.DONE]


def agent_only(export: Mapping[str, Any]) -> bool:
    """Whether a room can be re-run whole: no person spoke after its first turn, and its
    configuration never changed."""
    if export.get("config_versions"):
        return False
    seen_turn = False
    for event in export["events"]:
        if is_turn(event):
            seen_turn = True
        elif seen_turn and event.get("kind") == EventKind.HUMAN:
            return False
    return seen_turn


def compared(event: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(event.get(field) for field in COMPARED)


def config_at(export: Mapping[str, Any], seq: int) -> dict[str, Any]:
    """The room configuration in force at ``seq`` (its versions', else the export's)."""
    versions = sorted(export.get("config_versions") or [], key=lambda v: v["version"])
    chosen = export["config"]
    for version in versions:
        if int(version.get("from_seq") or 0) <= seq:
            chosen = version["config"]
    return dict(chosen)


def _import(db: storage.Database, config: Mapping[str, Any], events: Sequence[Any]) -> Room:
    document = {
        "format": "rooms-export",
        "version": 1,
        "name": f"replay {next(_names)}",
        "status": RoomStatus.RUNNING,
        "stop_reason": None,
        "config": dict(config),
        "events": [_record(e, i + 1) for i, e in enumerate(events)],
    }
    from conversation.rooms.transfer.schema import EXPORT_FORMAT, EXPORT_VERSION

    document["format"], document["version"] = EXPORT_FORMAT, EXPORT_VERSION
    return Room.import_messages(db, document)


def _record(event: Mapping[str, Any], seq: int) -> dict[str, Any]:
    record = {k: v for k, v in event.items() if k != "provenance"}
    record["seq"] = seq
    return record


def _run(db: storage.Database, room: Room, cache: Any, max_turns: int) -> None:
    owner = f"replication:{room.id}"
    run_sync(drive(db, room.id, owner, Engine(db, owner, cache=cache), max_turns))


def rerun_room(
    db: storage.Database, export: Mapping[str, Any], cache: Any
) -> tuple[list[dict[str, Any]], str]:
    """Re-run an agent-only room from its opening (its events before the first turn) with
    ``cache``; its events and final status. At most as many turns as it took."""
    events = list(export["events"])
    first = next(i for i, e in enumerate(events) if is_turn(e))
    room = _import(db, config_at(export, 0), events[:first])
    turns = sum(1 for e in events if is_turn(e))
    _run(db, room, cache, max_turns=max(turns, 1))
    replica = room.export()
    return list(replica["events"]), str(replica["status"])


def replay_turn(
    db: storage.Database,
    export: Mapping[str, Any],
    before: Sequence[Mapping[str, Any]],
    turn: Mapping[str, Any],
    cache: Any,
) -> dict[str, Any] | None:
    """Ask ``turn`` again after ``before`` (the events before it, as they are to be read) with
    ``cache``; the event committed, or None when the turn did not finish."""
    running = {
        "kind": turn["kind"],
        "speaker": turn["speaker"],
        "content": "",
        "round": turn.get("round"),
        "activity": turn.get("activity"),
        "state": TurnState.RUNNING,
        "request_id": turn.get("request_id"),
        "visible_to": turn.get("visible_to"),
        "data": _turn_kind(turn.get("data")),
    }
    room = _import(db, config_at(export, int(turn["seq"])), [*before, running])
    _run(db, room, cache, max_turns=1)
    replica = room.export()["events"]
    answered = replica[len(before)] if len(replica) > len(before) else None
    if answered is None or answered.get("state") != TurnState.DONE:
        return None
    return dict(answered)


def _turn_kind(data: Any) -> dict[str, Any] | None:
    """What a resumed turn keeps of its data: its kind (``event``), which picks its handler."""
    if isinstance(data, Mapping) and "event" in data:
        return {"event": data["event"]}
    return None


__all__ = [
    "COMPARED",
    "SELF_ENDED",
    "agent_only",
    "compared",
    "config_at",
    "done_turns",
    "is_turn",
    "replay_turn",
    "rerun_room",
]
