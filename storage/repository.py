"""The repository API in one namespace: ``from storage import repository as repo``.

Every function takes the :class:`~storage.database.Database` first and documents its guarantees;
they live in small modules by concept:

- :mod:`storage.rooms`: rooms, forks, the runnable-room scan;
- :mod:`storage.events`: the append-only log (append, read, poll);
- :mod:`storage.turns`: claim, fenced commit, group commit, moderation, retries;
- :mod:`storage.leases`: per-room leases with fencing tokens;
- :mod:`storage.experiments`: experiment designs and their rooms;
- :mod:`storage.profiles`: the agent library;
- :mod:`storage.analysis`: analyses and their answers;
- :mod:`storage.codes`: codebooks and message tags (qualitative coding).
- :mod:`storage.cache`: the persistent model cache (answers by EDSL's cache key).
"""

from __future__ import annotations

from storage.analysis import (
    answers,
    count_answers,
    create_analysis,
    delete_analysis,
    get_analysis,
    list_analyses,
    record_answer,
    update_analysis,
)
from storage.batch import (
    RoomSettlement,
    TurnClaim,
    apply_turns,
    claim_turns,
    release_leases,
    room_logs,
    settle_rooms,
)
from storage.cache import (
    cache_size,
    cached_responses,
    clear_model_cache,
    store_cached_responses,
)
from storage.codes import (
    add_code_label,
    code_labels,
    delete_tag,
    get_tag,
    message_tags,
    remove_code_label,
    tag_event,
)
from storage.config_versions import (
    change_room_config,
    room_config_versions,
)
from storage.events import (
    append_message,
    events,
    find_event,
    get_event,
    import_event,
    import_events,
    latest_seq,
    open_turn,
)
from storage.experiments import (
    ExperimentRoom,
    add_experiment_rooms,
    create_experiment,
    delete_experiment,
    experiment_spend,
    get_experiment,
    list_experiments,
    room_spend,
    set_experiment_archived,
    update_experiment,
)
from storage.leases import (
    acquire_lease,
    acquire_leases,
    free_leases_of,
    get_lease,
    lease_holders,
    lease_is_current,
    release_lease,
    renew_lease,
    renew_leases,
    require_lease,
)
from storage.profiles import (
    create_agent_profile,
    delete_agent_profile,
    get_agent_profile,
    list_agent_profiles,
    update_agent_profile,
)
from storage.rooms import (
    count_rooms,
    create_room,
    create_room_with_log,
    delete_room,
    fork_room,
    get_room,
    list_rooms,
    list_runnable_rooms,
    room_family,
    set_room_archived,
    stop_room,
    update_room,
)
from storage.turns import (
    TurnCommit,
    claim_turn,
    commit_turn,
    commit_turns,
    record_attempt,
    update_turn_state,
)

__all__ = [
    "ExperimentRoom",
    "cache_size",
    "cached_responses",
    "clear_model_cache",
    "store_cached_responses",
    "change_room_config",
    "room_config_versions",
    "room_family",
    "add_experiment_rooms",
    "apply_turns",
    "create_room_with_log",
    "stop_room",
    "RoomSettlement",
    "release_leases",
    "settle_rooms",
    "TurnClaim",
    "claim_turns",
    "room_logs",
    "TurnCommit",
    "acquire_lease",
    "acquire_leases",
    "renew_leases",
    "free_leases_of",
    "lease_holders",
    "add_code_label",
    "answers",
    "append_message",
    "claim_turn",
    "code_labels",
    "commit_turn",
    "commit_turns",
    "count_answers",
    "count_rooms",
    "create_agent_profile",
    "create_analysis",
    "create_experiment",
    "create_room",
    "delete_agent_profile",
    "delete_analysis",
    "delete_experiment",
    "delete_room",
    "delete_tag",
    "events",
    "find_event",
    "fork_room",
    "get_agent_profile",
    "get_analysis",
    "get_event",
    "get_experiment",
    "get_lease",
    "get_room",
    "get_tag",
    "import_event",
    "import_events",
    "latest_seq",
    "lease_is_current",
    "list_agent_profiles",
    "list_analyses",
    "list_experiments",
    "experiment_spend",
    "room_spend",
    "list_rooms",
    "list_runnable_rooms",
    "message_tags",
    "open_turn",
    "record_answer",
    "record_attempt",
    "release_lease",
    "remove_code_label",
    "renew_lease",
    "require_lease",
    "tag_event",
    "set_experiment_archived",
    "set_room_archived",
    "update_agent_profile",
    "update_analysis",
    "update_experiment",
    "update_room",
    "update_turn_state",
]
