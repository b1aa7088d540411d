"""What a judge scores: the units of some rooms (each message, or each whole room) and the EDSL
scenario each unit is shown as (``rubrics.UNIT_FIELDS``).

A message unit's key is ``"<room id>:<seq>"``; a room's is ``"<room id>"``: the keys human
tags and judge scores share, so ``agreement`` can compare them. Messages are the finished human
and agent messages of the log (what a coder can tag). A message is judged with the conversation
before it (the last :data:`CONTEXT_MESSAGES` messages) as its context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import storage
from conversation.text.transcript import render_record, render_transcript, transcript_record
from conversation.vocabulary import MESSAGE_EVENT_KINDS, LogEntry, entries_of

#: Messages shown before a judged message (older ones are left out: prompts stay small).
CONTEXT_MESSAGES = 20


@dataclass(frozen=True, slots=True)
class Unit:
    """One scored unit: a message (``seq`` and ``event_id`` set) or a whole room."""

    key: str
    room_id: int
    seq: int | None = None
    event_id: int | None = None
    speaker: str | None = None
    condition: str | None = None


def unit_key(room_id: int, seq: int | None = None) -> str:
    """``"12:5"`` for message 5 of room 12, ``"12"`` for the whole room."""
    return str(int(room_id)) if seq is None else f"{int(room_id)}:{int(seq)}"


def _roster(room: Any) -> list[str]:
    from conversation.analysis.runs import roster

    return roster(room)


def _messages(db: Any, room_id: int) -> list[LogEntry]:
    """The room's messages (people's, and agents' published turns), in seq order."""
    rows = storage.events(db, room_id, kinds=MESSAGE_EVENT_KINDS)
    return [e for e in entries_of(rows) if e.is_message]


def room_units(db: Any, room_ids: Sequence[int], unit: str) -> list[tuple[Unit, dict[str, Any]]]:
    """Every unit of the rooms (in room then seq order) with the scenario it is judged on."""
    out: list[tuple[Unit, dict[str, Any]]] = []
    for room_id in dict.fromkeys(int(r) for r in room_ids):
        room = storage.get_room(db, room_id)
        names = _roster(room)
        records = []
        for event in _messages(db, room_id):
            index = names.index(event.speaker) if event.speaker in names else None
            records.append((event, transcript_record(event.seq, event.speaker, index, event.content or "")))  # fmt: skip
        if unit == "room":
            scenario = {"transcript": render_transcript([r for _, r in records])}
            out.append((Unit(unit_key(room_id), room_id, condition=room.condition), scenario))
            continue
        for position, (event, record) in enumerate(records):
            before = [r for _, r in records[max(0, position - CONTEXT_MESSAGES) : position]]
            scenario = {"transcript": render_transcript(before), "message": render_record(record)}
            found = Unit(
                unit_key(room_id, event.seq),
                room_id,
                seq=int(event.seq),
                event_id=int(event.row.id),
                speaker=event.speaker,
                condition=room.condition,
            )
            out.append((found, scenario))
    return out


__all__ = ["CONTEXT_MESSAGES", "Unit", "room_units", "unit_key"]
