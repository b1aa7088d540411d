"""What rooms are designed from: experiments (a design stored whole with its rooms, their
spend, their rooms by status) and the agent library.
"""

from __future__ import annotations

from storage.experiments.experiments import (
    ExperimentRoom,
    add_experiment_rooms,
    create_experiment,
    delete_experiment,
    experiment_room_ids,
    experiment_spend,
    experiment_status_counts,
    get_experiment,
    list_experiments,
    room_spend,
    set_experiment_archived,
    update_experiment,
)
from storage.experiments.profiles import (
    create_agent_profile,
    delete_agent_profile,
    get_agent_profile,
    list_agent_profiles,
    update_agent_profile,
)

__all__ = [
    # experiments
    "ExperimentRoom",
    "add_experiment_rooms",
    "create_experiment",
    "delete_experiment",
    "experiment_room_ids",
    "experiment_spend",
    "experiment_status_counts",
    "get_experiment",
    "list_experiments",
    "room_spend",
    "set_experiment_archived",
    "update_experiment",
    # the agent library
    "create_agent_profile",
    "delete_agent_profile",
    "get_agent_profile",
    "list_agent_profiles",
    "update_agent_profile",
]
