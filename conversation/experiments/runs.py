"""Running experiments: their rooms created (idempotently), started, stopped, and marked done.

Everything is derived from the database: which rooms exist, which are missing (created again by
:func:`materialize`), how far each got. The web app's Experiments page and the worker both use it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

import storage
from conversation.access.roles import Action, Actor, require, who
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError
from conversation.experiments.design import (
    FINISHED,
    check_design,
    experiment_budget,
    planned_rooms,
    room_agents,
)
from conversation.experiments.tally import mark_done_if_finished, progress
from conversation.rooms.config import RoomConfig, check_placement, request_settings
from conversation.vocabulary import ExperimentStatus, HumanMessage, RoomStatus, entries_of


def template_from_room(db: Any, room_id: int) -> dict[str, Any]:
    """An experiment template from an existing room: its settings and its first message."""
    from conversation.rooms.room import Room

    room = Room.open(db, room_id)
    config = room.config.to_dict()
    first = next((e for e in entries_of(room.events()) if isinstance(e, HumanMessage)), None)
    return {
        "agents": config["roster"],
        "planner": config["planner"],
        "termination": config["termination"],
        "model": config["model"],
        "moderated": config["moderated"],
        "prompt_template": config["prompt_template"],
        "context": config["context"],
        "opening": first.content if first is not None else "",
        **request_settings(config),  # the output limit, timeout, window and model cache
        "budget": config["budget"],
    }


def create(
    db: Any,
    name: str,
    config: Mapping[str, Any],
    *,
    speaker: str = "user",
    actor: Actor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Store the experiment (status ``running``) with all its rooms, started.

    The design is validated whole first (every condition's room config is built, as
    ``Room.create`` would): a refused design raises ``ConversationValueError`` naming the
    condition and the field, and leaves no experiment row and no room behind. The rooms are
    then written in batches (``storage.create_experiment``); ``progress(created, total)`` after
    each (a page's progress bar). ``actor`` needs the researcher role (``PermissionDenied``)."""
    require(actor, Action.CREATE_EXPERIMENT)
    check_placement(name)
    check_design(config)
    opening = config["template"].get("opening")
    if not isinstance(opening, str) or not opening.strip():
        raise ConversationValueError(
            "template.opening: the template needs an opening message; it starts every room"
        )
    experiment_budget(config)  # a malformed budget is refused before anything is written
    rooms = planned_experiment_rooms(name, config, speaker=speaker)
    with translated():
        return storage.create_experiment(
            db, name, dict(config), status=ExperimentStatus.RUNNING, rooms=rooms, progress=progress
        )


def materialize(db: Any, experiment_id: int, *, speaker: str = "user") -> int:
    """Create the experiment's missing rooms, each with its opening message posted once.

    Idempotent and safe from several processes at once (the app and any number of workers): a
    room is known by its (condition, replicate), created in one transaction with its opening, and
    never twice. Returns how many rooms were created now."""
    with translated():
        experiment = storage.get_experiment(db, experiment_id)
        planned = len(planned_rooms(experiment.config))
        if storage.count_rooms(db, experiment_id=experiment_id) >= planned and not (
            storage.count_rooms(db, experiment_id=experiment_id, status=RoomStatus.IDLE)
        ):
            return 0  # the usual case, on every look: one count, no room config built
        rooms = planned_experiment_rooms(experiment.name, experiment.config, speaker=speaker)
        return storage.add_experiment_rooms(db, experiment_id, rooms)


def planned_experiment_rooms(
    name: str, config: Mapping[str, Any], *, speaker: str
) -> list[storage.ExperimentRoom]:
    """Every planned room of a design with its validated room config (nothing is written).

    A condition's room config is built (and validated) once; its replicates differ only by
    their seed (a re-run's stored seed, else a fresh random one, as ``RoomConfig.build`` draws),
    so a design of 10,000 rooms costs one build per condition, not per room."""
    template = config["template"]
    seeds = config.get("seeds") or {}  # a re-run's: the seed each room of the original had
    built: dict[int, dict[str, Any]] = {}
    rooms = []
    for planned in planned_rooms(config):
        c = planned.condition
        base = built.get(planned.condition_index)
        if base is None:
            base = built[planned.condition_index] = _condition_config(template, c)
        seed = seeds.get(planned.request_id)
        rooms.append(
            storage.ExperimentRoom(
                name=f"{name} | {c.label} | #{planned.replicate}",
                config={**base, "seed": secrets.randbelow(2**31) if seed is None else seed},
                condition=c.label,
                replicate=planned.replicate,
                opening=c.opening or template["opening"],
                speaker=speaker,
                # Derived from the design: the same opening whichever process posts it.
                request_id=f"experiment-{planned.request_id}-opening",
            )
        )
    return rooms


def _condition_config(template: Mapping[str, Any], c: Any) -> dict[str, Any]:
    """The validated room config of condition ``c`` (its seed is replaced per room)."""
    try:
        room_config = RoomConfig.build(
            agents=room_agents(template, c),
            planner=c.planner or template.get("planner"),
            termination=c.termination or template.get("termination"),
            model=c.model or template.get("model"),
            moderated=bool(template.get("moderated")),
            prompt_template=c.prompt_template or template.get("prompt_template"),
            context=template.get("context"),
            seed=0,
            budget=template.get("budget"),
            **request_settings(template),
        )
    except ConversationValueError as exc:
        raise ConversationValueError(f"condition {c.label!r}: {exc}") from None
    return room_config.to_dict()


def rerun_experiment(
    db: Any,
    experiment_id: int,
    *,
    name: str | None = None,
    speaker: str | None = None,
    actor: Any = None,
) -> int:
    """Run an experiment again from the model cache: a new experiment (returned, ``running``)
    with the same design, each room with the seed of the original room of its condition and
    replicate, and the cache on. Every model call the original made is answered from the
    database's model cache, so each transcript comes out as it was, at no cost; a call the
    original did not make (a room it never finished, a cache it had turned off) asks the model.
    The openings are posted by the original's poster unless ``speaker`` is given (the name is
    part of every prompt)."""
    require(actor, Action.CREATE_EXPERIMENT)
    with translated():
        original = storage.get_experiment(db, experiment_id)
        rooms = storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    config = dict(original.config)
    template = dict(config.get("template") or {})
    template["use_cache"] = True
    config["template"] = template
    index = {p.condition.label: p.condition_index for p in planned_rooms(config)}
    seeds = dict(config.get("seeds") or {})
    for room in rooms:
        seed = (room.config or {}).get("seed")
        if room.condition in index and room.replicate is not None and isinstance(seed, int):
            seeds[f"c{index[room.condition]}-r{room.replicate}"] = seed
    config["seeds"] = seeds
    config["rerun_of"] = experiment_id
    if speaker is None:
        speaker = _opening_speaker(db, rooms) or "user"
    return create(db, name or f"{original.name} (re-run)", config, speaker=speaker)


def _opening_speaker(db: Any, rooms: Any) -> str | None:
    for room in rooms[:1]:
        rows = storage.events(db, int(room.id or 0), limit=5)
        first = next((e for e in entries_of(rows) if isinstance(e, HumanMessage)), None)
        if first is not None:
            return str(first.speaker)
    return None


def catch_up(db: Any, *, speaker: str = "user") -> int:
    """For every running experiment: create rooms still missing (a restart halfway through) and
    record ``done`` once all its rooms finished. Returns how many rooms were created."""
    created = 0
    for experiment in storage.list_experiments(db, status=ExperimentStatus.RUNNING, limit=None):
        experiment_id = int(experiment.id or 0)
        created += materialize(db, experiment_id, speaker=speaker)
        mark_done_if_finished(db, experiment_id, progress(db, experiment_id, spend=False))
    return created


def finish_experiments(db: Any) -> int:
    """Record ``done`` for every running experiment whose rooms have all finished; returns how
    many were marked. Safe to call from any number of workers at once (each change applies only
    to a ``running`` experiment, once); it creates no rooms (that is :func:`catch_up`)."""
    marked = 0
    for experiment in storage.list_experiments(db, status=ExperimentStatus.RUNNING, limit=None):
        experiment_id = int(experiment.id or 0)
        marked += mark_done_if_finished(db, experiment_id, progress(db, experiment_id, spend=False))
    return marked


def stop(
    db: Any,
    experiment_id: int,
    *,
    actor: Actor | None = None,
    by: str = "user",
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Stop every unfinished room of the experiment; returns how many were stopped. ``actor``
    needs the moderator role; each room's stop notice records who stopped it.

    Batched (``storage.stop_rooms``): a few statements per 500 rooms, whatever the experiment's
    size; ``progress(done, total)`` after each batch. A room that finished meanwhile is left as
    it is."""
    require(actor, Action.CONTROL)
    by = who(actor, by)
    from conversation.vocabulary import OPEN_ROOM_STATUSES, NoticeKind

    reason = "the experiment was stopped"
    storage.update_experiment(db, experiment_id, status=ExperimentStatus.STOPPED)
    allowed = sorted(str(status) for status in OPEN_ROOM_STATUSES if status not in FINISHED)
    with translated():
        ids = storage.experiment_room_ids(db, experiment_id, statuses=allowed)
        stopped = storage.stop_rooms(
            db,
            ids,
            reason=reason,
            allowed=allowed,
            notice=f"Stopped: {reason}",
            notice_data={"event": NoticeKind.STOPPED, "reason": reason, "by": by},
            progress=progress,
        )
    return len(stopped)


__all__ = [
    "catch_up",
    "create",
    "finish_experiments",
    "materialize",
    "planned_experiment_rooms",
    "rerun_experiment",
    "stop",
    "template_from_room",
]
