"""What the pages read, as records: one room, experiment, analysis or message list, a page of
rooms, counts for paging. The read side of the engine's services: pages ask here, never storage.

Each function is storage's read of the same name (same arguments, same guarantees, storage's
errors unchanged: a missing id is ``storage.RecordNotFound``, a ``LookupError``); none writes.
"""

from __future__ import annotations

import storage
from storage import (
    ROOM_SORTS,
    Event,
    PartialDraft,
    answers,
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

#: Filters besides ``archived`` under which :func:`count_rooms` counts the rooms that are not
#: archived as all of them less the archived ones: both counts are index probes there (the
#: smallest index, ``ix_rooms_experiment``, and the partial ``ix_rooms_archived``), where
#: ``archived_at IS NULL`` reads every row (88 ms at 100,000 rooms on SQLite, for each page
#: run of Results and the Room page's picker).
_COUNTED_BY_DIFFERENCE = frozenset({"experiment_id"})


def count_rooms(db: storage.Database, **filters: object) -> int:
    """How many rooms match the filters (storage's ``count_rooms``: the same keywords and
    answer). ``archived=False`` with no other filter than ``experiment_id`` is counted as the
    matches less the archived matches (see :data:`_COUNTED_BY_DIFFERENCE`)."""
    rest = {k: v for k, v in filters.items() if k != "archived" and v is not None}
    if filters.get("archived") is False and set(rest) <= _COUNTED_BY_DIFFERENCE:
        every = storage.count_rooms(db, **rest)  # (a filter given as None filters nothing)
        return every - storage.count_rooms(db, archived=True, **rest) if every else 0
    return storage.count_rooms(db, **filters)


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
