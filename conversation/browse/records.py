"""What the pages read, as records: one room, experiment, analysis or message list, a page of
rooms, counts for paging. The read side of the engine's services: pages ask here, never storage.

Each function is storage's read of the same name (same arguments, same guarantees, storage's
errors unchanged: a missing id is ``storage.RecordNotFound``, a ``LookupError``); none writes.
"""

from __future__ import annotations

from storage import (
    ROOM_SORTS,
    Event,
    PartialDraft,
    answers,
    count_rooms,
    events,
    get_analysis,
    get_experiment,
    get_room,
    latest_seq,
    list_agent_profiles,
    list_analyses,
    list_experiments,
    list_rooms,
    message_tags,
    partial_draft,
    room_draft,
    room_family,
    room_ids,
    room_spend,
    waiting_for_server,
)
from vocabulary import EventKind


def sample_log(opening: str, speaker: str = "user") -> list[Event]:
    """A one-message log (never stored) for previewing the prompt of a room not created yet."""
    return [
        Event(room_id=0, seq=1, kind=EventKind.HUMAN, speaker=speaker, content=opening or "Hello.")
    ]


__all__ = [
    "ROOM_SORTS",
    "PartialDraft",
    "partial_draft",
    "room_draft",
    "waiting_for_server",
    "answers",
    "count_rooms",
    "events",
    "get_analysis",
    "get_experiment",
    "get_room",
    "latest_seq",
    "list_agent_profiles",
    "list_analyses",
    "list_experiments",
    "list_rooms",
    "message_tags",
    "room_family",
    "room_ids",
    "room_spend",
    "sample_log",
]
