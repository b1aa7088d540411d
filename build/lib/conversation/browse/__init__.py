"""What the pages show, read through the engine: stored records (``records``: a room, a page of
rooms, a log, an analysis, a streaming turn's partial draft: ``partial_draft(db, event_id)`` /
``room_draft(db, room_id)``, docs/streaming.md) and pandas tables (``frames``: pandas is loaded
on the first call). Writes go through the concept that owns them (rooms, experiments, analysis, library); no page
reads or writes storage itself."""

from conversation.browse.frames import (
    analysis_frame,
    data_version,
    events_frame,
    last_messages,
    rooms_summary,
    tags_frame,
)
from conversation.browse.records import (
    ROOM_SORTS,
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
    sample_log,
    waiting_for_server,
)
from conversation.browse.streamed import stream_events, write_events

__all__ = [
    "stream_events",
    "write_events",
    "ROOM_SORTS",
    "PartialDraft",
    "partial_draft",
    "room_draft",
    "analysis_frame",
    "answers",
    "count_rooms",
    "data_version",
    "events",
    "events_frame",
    "get_analysis",
    "get_experiment",
    "get_room",
    "last_messages",
    "latest_seq",
    "list_agent_profiles",
    "list_analyses",
    "list_experiments",
    "list_rooms",
    "message_tags",
    "room_family",
    "room_ids",
    "room_spend",
    "rooms_summary",
    "sample_log",
    "tags_frame",
    "waiting_for_server",
]
