"""Experiment designs: a template room x conditions x replicates, planned as rooms (pure data).

The design is stored with the experiment (``experiments.config``), so everything after that is
derived from the database: which rooms exist, which are missing (created again, idempotently, by
:func:`materialize`), how far each got. A server restart loses nothing: the runner goes on with the
rooms that are running, and the Experiments page calls :func:`materialize` for a running experiment
so rooms that were planned but not yet created (a crash halfway through) are created then.
The web app's Experiments page and the worker both use it.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.experiments.design_schema import MAX_REPLICATES as MAX_REPLICATES
from conversation.experiments.design_schema import MAX_ROOMS as MAX_ROOMS
from conversation.experiments.design_schema import (
    ConditionIn,
    DesignIn,
    condition_place,
    design_place,
)
from conversation.planning.registry import planner_turn_bound
from conversation.termination.budget import Budget
from conversation.termination.conditions import termination_turn_bound
from conversation.text.limits import MAX_DESIGN_CHARS, check_json_value
from conversation.text.schema import validated
from conversation.vocabulary import FINAL_ROOM_STATUSES

DESIGN_VERSION = 1
#: A room in one of these is finished (the vocabulary's final statuses, under the name the
#: experiments' readers know).
FINISHED = FINAL_ROOM_STATUSES
BASELINE = "baseline"
MAX_SHORT_NAME = 24
"""The longest short name of a condition (it labels chart axes and table rows)."""


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
    short: str | None = None
    """The researcher's short name (charts, tables); ``None``: derived (see :func:`short_names`)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "short": self.short,
            "traits": {a: dict(t) for a, t in self.traits.items()},
            "model": dict(self.model) if self.model else None,
            "planner": dict(self.planner) if self.planner else None,
            "opening": self.opening,
            "termination": dict(self.termination) if self.termination else None,
            "prompt_template": self.prompt_template,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Condition:
        check_condition(data, "condition")
        return cls(
            label=str(data["label"]),
            traits=data.get("traits") or {},
            model=data.get("model"),
            planner=data.get("planner"),
            opening=data.get("opening"),
            termination=data.get("termination"),
            prompt_template=data.get("prompt_template"),
            short=data.get("short"),
        )

    def but(self, label: str, **changes: Any) -> Condition:
        """A new condition (a new label); a short name given to this one does not carry over."""
        values = {f: getattr(self, f) for f in self.__dataclass_fields__} | changes
        return Condition(**(values | {"label": label, "short": changes.get("short")}))

    def named(self, short: str | None) -> Condition:
        """The same condition with the researcher's short name (``None`` or blank: derived)."""
        return replace(self, short=(short or "").strip() or None)


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
    from conversation.planning.registry import planner_from_dict
    from conversation.rooms.config import planner_to_dict

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


def _parts(label: str) -> dict[str, str]:
    """``"Buyer.budget=$5, Seller.style=firm | model=gpt-4o | prompt 2"`` as
    ``{"Buyer.budget": "$5", "Seller.style": "firm", "model": "gpt-4o", "prompt": "2"}``; a
    free-text part (``"tight budget"``) is kept whole under its position (``"#0"``)."""
    parts: dict[str, str] = {}
    for position, piece in enumerate(re.split(r"\s*\|\s*|,\s+", label.strip())):
        if not piece:
            continue
        key, sep, value = piece.partition("=")
        prompt = re.fullmatch(r"prompt (\d+)", piece)
        if sep:
            parts[key.strip()] = value.strip()
        elif prompt:
            parts["prompt"] = prompt.group(1)
        elif (named := re.fullmatch(r"(\w[\w ]*?) (\S*\d\S*)", piece.strip())) is not None:
            parts[named.group(1)] = named.group(2)  # "budget $18,000": a factor and its value
        else:
            parts[f"#{position}"] = piece.strip()
    return parts


def _key_abbreviation(key: str) -> str:
    """``Buyer.budget`` -> ``bb``, ``temp`` -> ``t``, ``max_turns`` -> ``mt``; the model and the
    prompt variant are shown by their value alone (``gpt4o``, ``p2``)."""
    if key == "model" or key.startswith("#"):
        return ""
    if key == "prompt":
        return "p"
    words = [w for w in re.split(r"[._\s-]+", key) if w]
    return "".join(w[0] for w in words).lower()


def _value_abbreviation(value: str) -> str:
    compact = re.sub(r"[\s\-_/:]+", "", value)
    return compact[:12]


def short_names(conditions: Sequence[Condition]) -> list[str]:
    """Each condition's short name, in design order: the researcher's when given, otherwise what
    differs between the conditions, abbreviated (``temp=0.7, model=gpt-4o`` with other
    temperatures and models -> ``t0.7·gpt4o``). Unique; at most :data:`MAX_SHORT_NAME`
    characters (a clash falls back to ``c1``, ``c2``, ... by position)."""
    parsed = [_parts(c.label) for c in conditions]
    keys: list[str] = []
    for parts in parsed:
        keys.extend(k for k in parts if k not in keys)
    differing = [k for k in keys if len({p.get(k) for p in parsed}) > 1]
    readable = {k: _readable_values(k, [p[k] for p in parsed if k in p]) for k in differing}
    abbreviations = {k: _key_abbreviation(k) for k in differing}
    clashing = {a for a in abbreviations.values() if list(abbreviations.values()).count(a) > 1}
    names: list[str] = []
    for index, (condition, parts) in enumerate(zip(conditions, parsed, strict=True)):
        if condition.short:
            names.append(condition.short)
            continue
        bits = []
        for key in differing:
            if key not in parts:
                continue
            prefix = (
                key if abbreviations[key] in clashing and abbreviations[key] else abbreviations[key]
            )
            value = parts[key]
            if value in readable[key]:
                bits.append(readable[key][value])
            else:
                bits.append(value if key.startswith("#") else prefix + _value_abbreviation(value))
        name = "·".join(bits) or condition.label
        names.append(name[:MAX_SHORT_NAME] or f"c{index + 1}")
    given = {c.short for c in conditions if c.short}
    clashes = [
        not conditions[i].short and (names.count(name) > 1 or name in given)
        for i, name in enumerate(names)
    ]
    return [
        f"c{i + 1}" if clash else name
        for i, (name, clash) in enumerate(zip(names, clashes, strict=True))
    ]


def _readable_values(key: str, values: Sequence[str]) -> dict[str, str]:
    """``{value: name}`` for the values of ``key`` that are sentences (a space, or longer than
    an abbreviation keeps): the key's last word and the words that differ between the values,
    as a person reads them (``Buyer.private_value`` = "The mug is worth $10 to you" or "... $6
    ..." -> ``value $10``, ``value $6``). Short values are abbreviated as before."""
    long = [v for v in dict.fromkeys(values) if " " in v.strip() or len(v) > 12]
    if len(long) < 2 or key.startswith("#"):
        return {}
    words = [v.split() for v in long]
    start = 0
    while all(len(w) > start for w in words) and len({w[start] for w in words}) == 1:
        start += 1
    end = 0
    while all(len(w) - end > start for w in words) and len({w[-1 - end] for w in words}) == 1:
        end += 1
    pieces = [key_piece for key_piece in re.split(r"[._\s-]+", key) if key_piece]
    label = pieces[-1].lower() if pieces else key
    names = {}
    for value, w in zip(long, words, strict=True):
        differing = " ".join(w[start : len(w) - end]).rstrip(".,;:")
        names[value] = f"{label} {differing}"[:MAX_SHORT_NAME].strip()
    return names


def check_short_names(conditions: Sequence[Condition]) -> None:
    """Refuse short names that are too long, contain a line break, or repeat (given or derived):
    a ``ConversationValueError`` naming the condition and the fix."""
    for condition in conditions:
        short = condition.short
        if short is None:
            continue
        if not short.strip() or len(short) > MAX_SHORT_NAME or "\n" in short:
            raise ConversationValueError(
                f"conditions[{condition.label!r}].short: {short!r} must be 1 to "
                f"{MAX_SHORT_NAME} characters on one line; shorten it or leave it empty "
                "(a name is then derived from what differs)"
            )
    names = short_names(conditions)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConversationValueError(
            f"conditions.short: short names must be unique; {', '.join(map(repr, repeated))} "
            "is used twice: rename one of them"
        )


def condition_names(config: Mapping[str, Any]) -> dict[str, str]:
    """A stored design's conditions as ``{label: short name}``, in design order (the order of
    every Results table and chart axis)."""
    conditions = [Condition.from_dict(c) for c in config.get("conditions", [])]
    return dict(zip([c.label for c in conditions], short_names(conditions), strict=True))


#: The fields of a stored condition and of a stored design (declared by ``design_schema``);
#: ``seeds`` and ``rerun_of``: a re-run from the model cache (``runs.rerun_experiment``).
CONDITION_FIELDS = frozenset(ConditionIn.model_fields)
DESIGN_FIELDS = frozenset(DesignIn.model_fields)


def check_condition(data: Any, where: str) -> None:
    """One stored condition's shape (``design_schema.ConditionIn``): a label, trait overrides
    ``{agent: {trait: text}}``, and optional dicts and texts (their contents are checked when
    its rooms are built)."""
    if not isinstance(data, Mapping):
        raise ConversationValueError(f"{where} must be an object, got {type(data).__name__}")
    validated(ConditionIn, data, place=condition_place(where))


def check_design(config: Any) -> None:
    """A stored design's shape and size (``design_schema.DesignIn``), before any room is built
    from it: ``template`` (with its agents and opening), ``conditions`` and ``replicates``;
    ``ConversationValueError`` names the field. The size is measured first."""
    if not isinstance(config, Mapping):
        raise ConversationValueError(
            f"an experiment design must be an object with template, conditions and replicates, "
            f"got {type(config).__name__}"
        )
    check_json_value(config, "experiment design", max_chars=MAX_DESIGN_CHARS)
    validated(DesignIn, config, place=design_place)


def plan(conditions: Sequence[Condition], replicates: int) -> list[PlannedRoom]:
    """The rooms of a design, condition-major; validates the size."""
    if not conditions:
        raise ConversationValueError("An experiment needs at least one condition.")
    if not isinstance(replicates, int) or not 1 <= replicates <= MAX_REPLICATES:
        raise ConversationValueError(
            f"Replicates must be between 1 and {MAX_REPLICATES}, not {replicates if isinstance(replicates, int) else type(replicates).__name__}."
        )
    counts = Counter(c.label for c in conditions)
    repeated = sorted(label for label, count in counts.items() if count > 1)
    if repeated:
        raise ConversationValueError(f"Condition labels must be unique; repeated: {repeated}.")
    check_short_names(conditions)
    rooms = [
        PlannedRoom(i, c, r) for i, c in enumerate(conditions) for r in range(1, replicates + 1)
    ]
    if len(rooms) > MAX_ROOMS:
        raise ConversationValueError(
            f"This design has {len(rooms)} rooms; the limit is {MAX_ROOMS}. Use fewer conditions "
            "or replicates."
        )
    return rooms


def turns_per_room(
    template: Mapping[str, Any],
    planner: Mapping[str, Any] | None = None,
    termination: Mapping[str, Any] | None = None,
) -> int | None:
    """An upper bound on agent turns per room (one model call each), or None when unbounded:
    what the planner and the stop rules say about themselves."""
    bounds: list[int] = []
    stop = termination or template.get("termination")
    if stop:
        bound = termination_turn_bound(stop)
        if bound is not None:
            bounds.append(bound)
    chosen = planner or template.get("planner")
    if chosen:
        bound = planner_turn_bound(chosen, len(template.get("agents") or []))
        if bound is not None:
            bounds.append(bound)
    return min(bounds) if bounds else None


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
    template: Mapping[str, Any],
    conditions: Sequence[Condition],
    replicates: int,
    *,
    budget: Budget | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON stored with the experiment (validated by :func:`plan`). ``budget``: the whole
    experiment's spending limit, across its rooms (``template["budget"]`` is each room's own)."""
    plan(conditions, replicates)
    if isinstance(budget, Mapping):
        budget = Budget.from_dict(budget)
    return {
        "version": DESIGN_VERSION,
        "template": dict(template),
        "conditions": [c.to_dict() for c in conditions],
        "replicates": replicates,
        "budget": budget.to_dict() if budget is not None and budget.limited else None,
    }


def experiment_budget(config: Mapping[str, Any]) -> Budget | None:
    """The experiment's own budget (across its rooms), or None; ``ConversationValueError``
    naming ``budget`` when the stored one is malformed."""
    return Budget.from_dict(config.get("budget"), field="budget")


def planned_rooms(config: Mapping[str, Any]) -> list[PlannedRoom]:
    check_design(config)
    conditions = [Condition.from_dict(c) for c in config.get("conditions", [])]
    return plan(conditions, config.get("replicates", 1))


def room_agents(template: Mapping[str, Any], condition: Condition) -> list[dict[str, Any]]:
    """The template's agents with the condition's trait overrides applied."""
    agents = []
    for agent in template.get("agents", []):
        traits = dict(agent.get("traits") or {})
        traits.update(condition.traits.get(agent["name"], {}))
        agents.append({**agent, "traits": traits})
    return agents


__all__ = [
    "BASELINE",
    "Condition",
    "check_condition",
    "check_design",
    "DESIGN_VERSION",
    "FINISHED",
    "MAX_REPLICATES",
    "MAX_ROOMS",
    "MAX_SHORT_NAME",
    "PlannedRoom",
    "check_short_names",
    "condition_names",
    "crossed_conditions",
    "design",
    "estimate_calls",
    "experiment_budget",
    "plan",
    "planned_rooms",
    "room_agents",
    "short_names",
    "turns_per_room",
    "with_models",
    "with_planner_setting",
    "with_prompts",
    "with_turn_limits",
]
