"""Running experiments: their rooms created (idempotently), started, stopped, and marked done.

Everything is derived from the database: which rooms exist, which are missing (created again by
:func:`materialize`), how far each got. The web app's Experiments page and the worker both use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conversation.experiments.design import (
    FINISHED,
    planned_rooms,
    room_agents,
)
from storage import repository as repo


def template_from_room(db: Any, room_id: int) -> dict[str, Any]:
    """An experiment template from an existing room: its settings and its first message."""
    from conversation.rooms.room import Room

    room = Room.open(db, room_id)
    config = room.config.to_dict()
    first = next((e for e in room.events() if e.kind == "human"), None)
    return {
        "agents": config["roster"],
        "planner": config["planner"],
        "termination": config["termination"],
        "model": config["model"],
        "moderated": config["moderated"],
        "prompt_template": config["prompt_template"],
        "context": config["context"],
        "opening": first.content if first is not None else "",
    }


def create(db: Any, name: str, config: Mapping[str, Any], *, speaker: str = "user") -> int:
    """Store the experiment (status ``running``) and create and start its rooms."""
    planned_rooms(config)  # validates before anything is written
    if not (config.get("template") or {}).get("opening", "").strip():
        raise ValueError("The template needs an opening message: it starts every room.")
    experiment_id = repo.create_experiment(db, name, dict(config), status="running")
    materialize(db, experiment_id, speaker=speaker)
    return experiment_id


def materialize(db: Any, experiment_id: int, *, speaker: str = "user") -> int:
    """Create the experiment's missing rooms and post each room's opening message once.

    Idempotent: a room is known by its (condition, replicate); the opening is posted with a
    request id derived from the design, and never again once it is in the log (so a finished room
    is not re-opened). Returns how many rooms were created now.
    """
    from conversation.rooms.config import request_settings
    from conversation.rooms.room import Room

    experiment = repo.get_experiment(db, experiment_id)
    config = experiment.config
    template = config["template"]
    found = repo.list_rooms(db, experiment_id=experiment_id, limit=None)
    existing = {(r.condition, r.replicate): r.id for r in found}
    # A room leaves "idle" only when a message is posted: any other status means its opening
    # is in the log already, so only new and idle rooms need a look at the log.
    started = {r.id for r in found if r.status != "idle"}
    created = 0
    for planned in planned_rooms(config):
        c = planned.condition
        room_id = existing.get((c.label, planned.replicate))
        if room_id is None:
            room_id = Room.create(
                db,
                name=f"{experiment.name} | {c.label} | #{planned.replicate}",
                agents=room_agents(template, c),
                planner=c.planner or template["planner"],
                termination=c.termination or template.get("termination"),
                model=c.model or template.get("model"),
                moderated=bool(template.get("moderated")),
                prompt_template=c.prompt_template or template.get("prompt_template"),
                context=template.get("context"),
                experiment_id=experiment_id,
                condition=c.label,
                replicate=planned.replicate,
                **request_settings(template),
            ).id
            created += 1
        if room_id in started:
            continue
        request_id = f"experiment-{experiment_id}-{planned.request_id}-opening"
        if repo.find_event(db, room_id, request_id) is None:
            opening = c.opening or template["opening"]
            Room(db, room_id).post(opening, speaker=speaker, request_id=request_id)
    return created


def catch_up(db: Any, *, speaker: str = "user") -> int:
    """For every running experiment: create rooms still missing (a restart halfway through) and
    record ``done`` once all its rooms finished. Returns how many rooms were created."""
    created = 0
    for experiment in repo.list_experiments(db, status="running", limit=None):
        experiment_id = int(experiment.id or 0)
        created += materialize(db, experiment_id, speaker=speaker)
        mark_done_if_finished(db, experiment_id, progress(db, experiment_id))
    return created


def finish_experiments(db: Any) -> int:
    """Record ``done`` for every running experiment whose rooms have all finished; returns how
    many were marked. Safe to call from any number of workers at once (each change applies only
    to a ``running`` experiment, once); it creates no rooms (that is :func:`catch_up`)."""
    marked = 0
    for experiment in repo.list_experiments(db, status="running", limit=None):
        experiment_id = int(experiment.id or 0)
        marked += mark_done_if_finished(db, experiment_id, progress(db, experiment_id))
    return marked


def stop(db: Any, experiment_id: int) -> int:
    """Stop every unfinished room of the experiment; returns how many were stopped."""
    from conversation.exceptions import ConversationStateError
    from conversation.rooms.room import Room

    stopped = 0
    repo.update_experiment(db, experiment_id, status="stopped")
    for room in repo.list_rooms(db, experiment_id=experiment_id, limit=None):
        if room.status in FINISHED:
            continue
        try:
            Room(db, int(room.id or 0)).stop("the experiment was stopped")
            stopped += 1
        except ConversationStateError:
            pass  # it finished meanwhile
    return stopped


def mark_done_if_finished(db: Any, experiment_id: int, current: Progress) -> bool:
    """Record ``done`` once every planned room finished (only from ``running``)."""
    if current.created >= current.planned and current.finished >= current.planned:
        return (
            repo.update_experiment(db, experiment_id, status="done", expected_status="running")
            is not None
        )
    return False


@dataclass(frozen=True, slots=True)
class Progress:
    planned: int
    created: int
    finished: int
    running: int
    by_status: dict[str, int]
    messages: int
    cost: float

    @property
    def fraction(self) -> float:
        return self.finished / self.planned if self.planned else 1.0


def progress(db: Any, experiment_id: int) -> Progress:
    """How far an experiment got, from its rooms' statuses (a few indexed queries)."""
    from storage import frames

    experiment = repo.get_experiment(db, experiment_id)
    planned = len(planned_rooms(experiment.config))
    rooms = frames.rooms_summary(db, experiment_id=experiment_id, limit=None)
    counts = rooms["status"].value_counts().to_dict() if not rooms.empty else {}
    finished = sum(n for s, n in counts.items() if s in FINISHED)
    return Progress(
        planned=planned,
        created=len(rooms),
        finished=finished,
        running=int(counts.get("running", 0)),
        by_status={str(k): int(v) for k, v in counts.items()},
        messages=int(rooms["messages"].sum()) if not rooms.empty else 0,
        cost=float(rooms["cost"].sum()) if not rooms.empty else 0.0,
    )


__all__ = [
    "Progress",
    "catch_up",
    "create",
    "finish_experiments",
    "mark_done_if_finished",
    "materialize",
    "progress",
    "stop",
    "template_from_room",
]
