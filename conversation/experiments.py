"""Experiments: a template room x conditions x replicates, turned into rooms the runner drives.

The design is stored with the experiment (``experiments.config``), so everything after that is
derived from the database: which rooms exist, which are missing (created again, idempotently, by
:func:`materialize`), how far each got. A server restart loses nothing: the runner goes on with the
rooms that are running, and the Experiments page calls :func:`materialize` for a running experiment
so rooms that were planned but not yet created (a crash halfway through) are created then.
The web app's Experiments page and the worker both use it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storage import repository as repo

DESIGN_VERSION = 1
MAX_ROOMS = 500
MAX_REPLICATES = 50
FINISHED = frozenset({"settled", "terminated", "stopped", "failed"})
BASELINE = "baseline"


@dataclass(frozen=True, slots=True)
class Condition:
    """One cell of the design: trait overrides per agent, and optionally another model, planner
    settings or opening message."""

    label: str
    traits: Mapping[str, Mapping[str, str]]
    model: Mapping[str, Any] | None = None
    planner: Mapping[str, Any] | None = None
    opening: str | None = None
    termination: Mapping[str, Any] | None = None
    prompt_template: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "traits": {a: dict(t) for a, t in self.traits.items()},
            "model": dict(self.model) if self.model else None,
            "planner": dict(self.planner) if self.planner else None,
            "opening": self.opening,
            "termination": dict(self.termination) if self.termination else None,
            "prompt_template": self.prompt_template,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Condition:
        return cls(
            label=str(data["label"]),
            traits=data.get("traits") or {},
            model=data.get("model"),
            planner=data.get("planner"),
            opening=data.get("opening"),
            termination=data.get("termination"),
            prompt_template=data.get("prompt_template"),
        )

    def but(self, label: str, **changes: Any) -> Condition:
        values = {f: getattr(self, f) for f in self.__dataclass_fields__} | changes
        return Condition(**(values | {"label": label}))


@dataclass(frozen=True, slots=True)
class PlannedRoom:
    condition_index: int
    condition: Condition
    replicate: int

    @property
    def request_id(self) -> str:
        return f"c{self.condition_index}-r{self.replicate}"


def crossed_conditions(
    factors: Sequence[tuple[str, str, Sequence[str]]],
) -> list[Condition]:
    """Every combination of trait factors: ``[(agent, trait, [values...]), ...]`` crossed.

    One factor with three values gives three conditions; two factors of 2 and 3 values give six.
    """
    usable = [(a, t, [v for v in values if str(v).strip()]) for a, t, values in factors]
    usable = [f for f in usable if f[2]]
    if not usable:
        return [Condition(BASELINE, {})]
    conditions = []
    for combo in itertools.product(*[values for _, _, values in usable]):
        traits: dict[str, dict[str, str]] = {}
        parts = []
        for (agent, trait, _), value in zip(usable, combo, strict=True):
            traits.setdefault(agent, {})[trait] = str(value)
            parts.append(f"{agent}.{trait}={value}")
        conditions.append(Condition(", ".join(parts), traits))
    return conditions


def _joined(first: str, second: str) -> str:
    return second if first == BASELINE else f"{first} | {second}"


def with_models(
    conditions: Sequence[Condition], models: Sequence[tuple[str, Mapping[str, Any]]]
) -> list[Condition]:
    """Cross the conditions with several ``(label, model spec)`` (none given: unchanged)."""
    if not models:
        return list(conditions)
    return [
        c.but(_joined(c.label, f"model={label}"), model=m)
        for c in conditions
        for label, m in models
    ]


def with_turn_limits(
    conditions: Sequence[Condition], template: Mapping[str, Any], limits: Sequence[int]
) -> list[Condition]:
    """Cross the conditions with several "stop after N agent turns" limits (replacing any turn
    limit of the template's termination, keeping its other parts)."""
    if not limits:
        return list(conditions)
    return [
        c.but(
            _joined(c.label, f"max_turns={n}"),
            termination=_with_max_turns(template.get("termination"), int(n)),
        )
        for c in conditions
        for n in limits
    ]


def _with_max_turns(stop: Mapping[str, Any] | None, n: int) -> dict[str, Any]:
    limit = {"kind": "max_turns", "max_turns": n}
    if not stop:
        return limit
    parts = list(stop["parts"]) if stop.get("kind") == "any" else [dict(stop)]
    kept = [p for p in parts if p.get("kind") != "max_turns"]
    return {"kind": "any", "parts": [*kept, limit]} if kept else limit


def with_planner_setting(
    conditions: Sequence[Condition],
    template: Mapping[str, Any],
    setting: str,
    values: Sequence[int],
) -> list[Condition]:
    """Cross the conditions with several values of one planner setting (e.g. ``max_rounds``)."""
    if not values:
        return list(conditions)
    from conversation.policies import planner_from_dict
    from conversation.room_config import planner_to_dict

    out = []
    for c in conditions:
        base = dict(c.planner or template["planner"])
        for value in values:
            planner = planner_to_dict(planner_from_dict(base | {setting: int(value)}))
            out.append(c.but(_joined(c.label, f"{setting}={value}"), planner=planner))
    return out


def with_prompts(conditions: Sequence[Condition], prompts: Sequence[str]) -> list[Condition]:
    """Cross the conditions with several prompt templates (labelled prompt 1, 2, ...)."""
    if not prompts:
        return list(conditions)
    return [
        c.but(_joined(c.label, f"prompt {i}"), prompt_template=p)
        for c in conditions
        for i, p in enumerate(prompts, start=1)
    ]


def plan(conditions: Sequence[Condition], replicates: int) -> list[PlannedRoom]:
    """The rooms of a design, condition-major; validates the size."""
    if not conditions:
        raise ValueError("An experiment needs at least one condition.")
    if not 1 <= replicates <= MAX_REPLICATES:
        raise ValueError(f"Replicates must be between 1 and {MAX_REPLICATES}, not {replicates}.")
    labels = [c.label for c in conditions]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ValueError(f"Condition labels must be unique; repeated: {repeated}.")
    rooms = [
        PlannedRoom(i, c, r) for i, c in enumerate(conditions) for r in range(1, replicates + 1)
    ]
    if len(rooms) > MAX_ROOMS:
        raise ValueError(
            f"This design has {len(rooms)} rooms; the limit is {MAX_ROOMS}. Use fewer conditions "
            "or replicates."
        )
    return rooms


def turns_per_room(
    template: Mapping[str, Any],
    planner: Mapping[str, Any] | None = None,
    termination: Mapping[str, Any] | None = None,
) -> int | None:
    """An upper bound on agent turns per room (one model call each), or None when unbounded."""
    bounds: list[int] = []
    stop = termination or template.get("termination")
    if stop:
        bound = _termination_bound(stop)
        if bound is not None:
            bounds.append(bound)
    chosen = planner or template.get("planner") or {}
    roster_size = len(template.get("agents") or [])
    kind = chosen.get("kind")
    if kind == "round_robin_room":
        bounds.append(
            min(chosen.get("max_messages", 20) - 1, chosen.get("max_rounds", 3) * roster_size)
        )
    elif kind in {"addressed", "free", "coordinator"} and chosen.get("max_messages"):
        bounds.append(int(chosen["max_messages"]) - 1)
    return min(bounds) if bounds else None


def _termination_bound(stop: Mapping[str, Any]) -> int | None:
    kind = stop.get("kind")
    if kind == "max_turns":
        return int(stop["max_turns"])
    if kind == "max_messages":
        return int(stop["max_messages"]) - 1
    if kind == "any":
        found = [b for b in (_termination_bound(p) for p in stop.get("parts", [])) if b is not None]
        return min(found) if found else None
    if kind == "all":
        bounds = [_termination_bound(p) for p in stop.get("parts", [])]
        known = [b for b in bounds if b is not None]
        return max(known) if known and len(known) == len(bounds) else None
    return None


def estimate_calls(template: Mapping[str, Any], rooms: Sequence[PlannedRoom]) -> int | None:
    """Model calls for the whole design (upper bound), or None if a room is unbounded."""
    total = 0
    for room in rooms:
        turns = turns_per_room(template, room.condition.planner, room.condition.termination)
        if turns is None:
            return None
        total += turns
    return total


def design(
    template: Mapping[str, Any], conditions: Sequence[Condition], replicates: int
) -> dict[str, Any]:
    """The JSON stored with the experiment (validated by :func:`plan`)."""
    plan(conditions, replicates)
    return {
        "version": DESIGN_VERSION,
        "template": dict(template),
        "conditions": [c.to_dict() for c in conditions],
        "replicates": replicates,
    }


def planned_rooms(config: Mapping[str, Any]) -> list[PlannedRoom]:
    conditions = [Condition.from_dict(c) for c in config.get("conditions", [])]
    return plan(conditions, int(config.get("replicates", 1)))


def room_agents(template: Mapping[str, Any], condition: Condition) -> list[dict[str, Any]]:
    """The template's agents with the condition's trait overrides applied."""
    agents = []
    for agent in template.get("agents", []):
        traits = dict(agent.get("traits") or {})
        traits.update(condition.traits.get(agent["name"], {}))
        agents.append({**agent, "traits": traits})
    return agents


def template_from_room(db: Any, room_id: int) -> dict[str, Any]:
    """An experiment template from an existing room: its settings and its first message."""
    from .room import Room

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
    from .room import Room

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
    from .exceptions import ConversationStateError
    from .room import Room

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
    "BASELINE",
    "DESIGN_VERSION",
    "FINISHED",
    "MAX_REPLICATES",
    "MAX_ROOMS",
    "Condition",
    "catch_up",
    "finish_experiments",
    "create",
    "mark_done_if_finished",
    "materialize",
    "stop",
    "template_from_room",
    "with_planner_setting",
    "with_prompts",
    "with_turn_limits",
    "PlannedRoom",
    "Progress",
    "crossed_conditions",
    "design",
    "estimate_calls",
    "plan",
    "planned_rooms",
    "progress",
    "room_agents",
    "turns_per_room",
    "with_models",
]
