"""A room, its log and the turn protocol: the room's row (create, update, archive, delete, stop),
room lists, forks, imports of recorded logs, the append-only log, configuration versions, and the
fenced writes of turns (leases, claims, commits, settlements, in batches) with the partial drafts
of streaming turns. ``storage/README.md`` says what each write guarantees.
"""

from __future__ import annotations

from storage.rooms.batch import (
    RoomSettlement,
    apply_turns,
    claim_turn,
    claim_turns,
    commit_turn,
    commit_turns,
    release_leases,
    room_logs,
    settle_rooms,
)
from storage.rooms.claims import TurnClaim
from storage.rooms.config_versions import (
    change_room_config,
    post_after_config_change,
    room_config_versions,
)
from storage.rooms.drafts import (
    MAX_DRAFT_CHARS,
    DraftWrite,
    PartialDraft,
    partial_draft,
    request_stop,
    room_draft,
    start_draft,
    stop_requested,
    write_draft,
)
from storage.rooms.forks import fork_room, room_family
from storage.rooms.imports import create_room_with_log, import_event, import_events
from storage.rooms.leases import (
    acquire_lease,
    acquire_leases,
    free_leases_of,
    get_lease,
    in_flight_leases,
    lease_holders,
    lease_is_current,
    release_lease,
    renew_lease,
    renew_leases,
    require_lease,
)
from storage.rooms.listing import (
    ROOM_SORTS,
    count_rooms,
    list_rooms,
    list_runnable_rooms,
    room_ids,
)
from storage.rooms.log import append_message, events, find_event, get_event, latest_seq, open_turn
from storage.rooms.room import (
    BATCH_ROOMS,
    create_room,
    delete_room,
    get_room,
    set_room_archived,
    stop_room,
    stop_rooms,
    update_room,
)
from storage.rooms.turns import TurnCommit, record_attempt, update_turn_state

__all__ = [
    # the room's row
    "BATCH_ROOMS",
    "create_room",
    "delete_room",
    "get_room",
    "set_room_archived",
    "stop_room",
    "stop_rooms",
    "update_room",
    "change_room_config",
    "post_after_config_change",
    "room_config_versions",
    # lists and families of rooms
    "ROOM_SORTS",
    "count_rooms",
    "list_rooms",
    "list_runnable_rooms",
    "room_ids",
    "fork_room",
    "room_family",
    # the log
    "append_message",
    "create_room_with_log",
    "events",
    "find_event",
    "get_event",
    "import_event",
    "import_events",
    "latest_seq",
    "open_turn",
    # the turn protocol: leases, claims, commits, settlements
    "acquire_lease",
    "acquire_leases",
    "free_leases_of",
    "get_lease",
    "in_flight_leases",
    "lease_holders",
    "lease_is_current",
    "release_lease",
    "release_leases",
    "renew_lease",
    "renew_leases",
    "require_lease",
    "RoomSettlement",
    "TurnClaim",
    "TurnCommit",
    "apply_turns",
    "claim_turn",
    "claim_turns",
    "commit_turn",
    "commit_turns",
    "record_attempt",
    "room_logs",
    "settle_rooms",
    "update_turn_state",
    # partial drafts of streaming turns
    "MAX_DRAFT_CHARS",
    "DraftWrite",
    "PartialDraft",
    "partial_draft",
    "request_stop",
    "room_draft",
    "start_draft",
    "stop_requested",
    "write_draft",
]
