"""The shape of an experiment design at the door, declared once: the design (``DesignIn``), its
template room (``TemplateIn``: agents with names, an opening) and each condition
(``ConditionIn``: a label, trait overrides per agent, optional parts).

Sizes are measured before (``text.limits.check_json_value`` over the whole design). What the
parts mean (a planner that restores, a template that renders, a model that resolves) is checked
when the rooms are built, with the condition named; the secret guard reads the whole design
when it is stored. A refusal names the field (``template.agents``, ``conditions[1] label``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator

from conversation.text.limits import (
    MAX_AGENTS,
    MAX_CONDITION_CHARS,
    MAX_MESSAGE_CHARS,
)
from conversation.text.schema import DoorModel, Loc, Problem, text_rule

MAX_CONDITIONS = 500
MAX_REPLICATES = 50
#: Rooms of one design (conditions x replicates): created in batches, with progress (issue 23).
MAX_ROOMS = 25_000


def _traits(value: Any) -> Any:
    if value is not None and (
        not isinstance(value, Mapping)
        or not all(isinstance(a, str) and isinstance(t, Mapping) for a, t in value.items())
    ):
        raise Problem(
            "must map agent names to {trait: value} objects, e.g. {'Alice': {'mood': 'angry'}}"
        )
    return value


class ConditionIn(DoorModel):
    """One stored condition: a label, ``{agent: {trait: value}}`` overrides, optional parts."""

    label: Annotated[Any, text_rule(MAX_CONDITION_CHARS, one_line=True)]
    short: Any = None
    traits: Annotated[Any, AfterValidator(_traits)] = None
    model: dict[str, Any] | None = None
    planner: dict[str, Any] | None = None
    opening: Annotated[Any, text_rule(MAX_MESSAGE_CHARS, optional=True)] = None
    termination: dict[str, Any] | None = None
    prompt_template: str | None = None


class AgentIn(DoorModel):
    """A template agent: a name (the rest is an agent spec, checked when rooms are built)."""

    open_fields: ClassVar[bool] = True
    name: str


def _agents(value: list[AgentIn]) -> list[AgentIn]:
    if not 1 <= len(value) <= MAX_AGENTS:
        raise Problem(f"must be a list of 1 to {MAX_AGENTS} agents, each with a name")
    return value


class TemplateIn(DoorModel):
    """The room every condition varies: its agents and opening (other room options as
    ``Room.create`` takes them)."""

    open_fields: ClassVar[bool] = True
    agents: Annotated[list[AgentIn], AfterValidator(_agents)]
    opening: Annotated[Any, text_rule(MAX_MESSAGE_CHARS, empty=True, optional=True)] = None


def _conditions(value: list[ConditionIn]) -> list[ConditionIn]:
    if not value:
        raise Problem("must be a non-empty list of conditions")
    if len(value) > MAX_CONDITIONS:
        raise Problem(f"holds {len(value)} conditions; at most {MAX_CONDITIONS}")
    return value


def _seeds(value: Any) -> Any:
    if value is not None and (
        not isinstance(value, Mapping)
        or not all(isinstance(k, str) and _is_seed(v) for k, v in value.items())
    ):
        raise Problem("must map room request ids ('c1-r1') to whole-number seeds (a re-run's)")
    return value


def _is_seed(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _replicates(value: Any) -> Any:
    if not isinstance(value, int) or isinstance(value, bool):
        shown = value if isinstance(value, int) else type(value).__name__
        raise Problem(f"must be a whole number from 1 to {MAX_REPLICATES}, got {shown}")
    return value


class DesignIn(DoorModel):
    """A stored design (``design.design``); ``seeds`` and ``rerun_of``: a re-run's."""

    version: Any = None
    template: TemplateIn
    conditions: Annotated[list[ConditionIn], AfterValidator(_conditions)]
    replicates: Annotated[Any, AfterValidator(_replicates)] = 1
    budget: Any = None
    seeds: Annotated[Any, AfterValidator(_seeds)] = None
    rerun_of: int | None = None


def design_place(loc: Loc) -> str:
    """``("template", "agents")`` -> ``template.agents``; ``("conditions", 1, "label")`` ->
    ``conditions[1] label``; ``()`` -> ``experiment design``."""
    if not loc:
        return "experiment design"
    if loc[0] == "conditions" and len(loc) > 1:
        return " ".join([f"conditions[{loc[1]}]", *map(str, loc[2:])])
    return ".".join(str(part) for part in loc[:2])


def condition_place(where: str) -> Any:
    """Places inside one condition named ``where`` (``condition label``)."""
    return lambda loc: " ".join([where, *map(str, loc)])


__all__ = [
    "MAX_CONDITIONS",
    "MAX_REPLICATES",
    "MAX_ROOMS",
    "ConditionIn",
    "DesignIn",
    "TemplateIn",
    "condition_place",
    "design_place",
]
