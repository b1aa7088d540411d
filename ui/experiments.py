"""Experiments: a template room x conditions x replicates, turned into rooms the runner drives.

The design is stored with the experiment (``experiments.config``), so everything after that is
derived from the database: which rooms exist, which are missing (created again, idempotently, by
:func:`materialize`), how far each got. A server restart loses nothing: the runner goes on with the
rooms that are running, and the Experiments page calls :func:`materialize` for a running experiment
so rooms that were planned but not yet created (a crash halfway through) are created then.
No Streamlit here.
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


@dataclass(frozen=True, slots=True)
class Condition:
    """One cell of the design: trait overrides per agent, and optionally another model, planner
    settings or opening message."""

    label: str
    traits: Mapping[str, Mapping[str, str]]
    model: Mapping[str, Any] | None = None
    planner: Mapping[str, Any] | None = None
    opening: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "traits": {a: dict(t) for a, t in self.traits.items()},
            "model": dict(self.model) if self.model else None,
            "planner": dict(self.planner) if self.planner else None,
            "opening": self.opening,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Condition:
        return cls(
            label=str(data["label"]),
            traits=data.get("traits") or {},
            model=data.get("model"),
            planner=data.get("planner"),
            opening=data.get("opening"),
        )


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
        return [Condition("baseline", {})]
    conditions = []
    for combo in itertools.product(*[values for _, _, values in usable]):
        traits: dict[str, dict[str, str]] = {}
        parts = []
        for (agent, trait, _), value in zip(usable, combo, strict=True):
            traits.setdefault(agent, {})[trait] = str(value)
            parts.append(f"{agent}.{trait}={value}")
        conditions.append(Condition(", ".join(parts), traits))
    return conditions


def with_models(
    conditions: Sequence[Condition], models: Sequence[Mapping[str, Any]]
) -> list[Condition]:
    """Cross the conditions with several models (none given: unchanged)."""
    if not models:
        return list(conditions)
    from ui.widgets import spec_label  # the label a person sees for a spec

    return [
        Condition(f"{c.label} | {spec_label(m)}", c.traits, m, c.planner, c.opening)
        for c in conditions
        for m in models
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
    template: Mapping[str, Any], planner: Mapping[str, Any] | None = None
) -> int | None:
    """An upper bound on agent turns per room (one model call each), or None when unbounded."""
    bounds: list[int] = []
    stop = template.get("termination")
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
        found = [_termination_bound(p) for p in stop.get("parts", [])]
        return max(found) if found and all(b is not None for b in found) else None  # type: ignore[type-var]
    return None


def estimate_calls(template: Mapping[str, Any], rooms: Sequence[PlannedRoom]) -> int | None:
    """Model calls for the whole design (upper bound), or None if a room is unbounded."""
    total = 0
    for room in rooms:
        turns = turns_per_room(template, room.condition.planner)
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
    "Condition",
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
