"""A room's roster: one ``AgentSpec`` per agent (name, traits, instruction, its own model spec),
read from EDSL agents, specs or dicts, names unique, each agent's model resolved once.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.rooms.config.frozen import plain
from conversation.rooms.config.names import RESERVED_SPEAKERS, check_name
from conversation.text.limits import MAX_AGENTS, MAX_CONFIG_CHARS, check_json_value
from conversation.text.limits import MAX_TRAITS_CHARS as MAX_TRAITS_CHARS

MAX_INSTRUCTION_CHARS = 4_000
EDSL_DEFAULT_INSTRUCTION = (
    "You are answering questions as if you were a human. Do not break character."
)


def _check_json(value: Any, field_name: str, limit: int) -> None:
    """Plain JSON of bounded size and depth, measured before anything serialises it."""
    check_json_value(value, field_name, max_chars=limit)


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One roster member: name, traits, an optional instruction and an optional model spec."""

    name: str
    traits: Mapping[str, Any] = field(default_factory=dict)
    instruction: str | None = None
    model: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        check_name(self.name, "agent name")
        if self.name.casefold() in RESERVED_SPEAKERS:
            raise ConversationValueError(
                f"agent name {self.name!r} is reserved for the room's notices; choose another name"
            )
        if not isinstance(self.traits, Mapping):
            raise ConversationValueError(
                f"traits of {self.name!r} must be a dict of trait name to value, "
                f"got {type(self.traits).__name__}"
            )
        for key in self.traits:
            if not isinstance(key, str) or not key.strip():
                raise ConversationValueError(
                    f"trait names of {self.name!r} must be non-empty text, got {key!r}"
                )
        _check_json(dict(self.traits), f"traits of {self.name!r}", MAX_TRAITS_CHARS)
        if self.instruction is not None and (
            not isinstance(self.instruction, str) or len(self.instruction) > MAX_INSTRUCTION_CHARS
        ):
            raise ConversationValueError(
                f"instruction of {self.name!r} must be text of at most {MAX_INSTRUCTION_CHARS} "
                "characters"
            )
        if self.model is not None and not isinstance(self.model, Mapping):
            raise ConversationValueError(
                f"model of {self.name!r} must be a model spec (a dict) or None"
            )
        if self.model is not None:
            _check_json(self.model, f"model of {self.name!r}", MAX_CONFIG_CHARS)

    @classmethod
    def from_agent(cls, agent: Any, *, in_process_only: bool = False) -> AgentSpec:
        """From an EDSL ``Agent`` (its own ``model``, if set, becomes the agent's model spec;
        one that cannot be rebuilt elsewhere needs ``in_process_only``, see ``bindings``)."""
        if isinstance(agent, AgentSpec):
            return agent
        if isinstance(agent, Mapping):
            return cls.from_dict(agent)

        name = getattr(agent, "name", None)
        instruction = getattr(agent, "instruction", None)
        if instruction == EDSL_DEFAULT_INSTRUCTION:
            instruction = None
        own = getattr(agent, "model", None)
        from conversation.models.bindings import live_model_spec

        return cls(
            name=name,  # type: ignore[arg-type]
            traits=_plain_traits(getattr(agent, "traits", {}) or {}),
            instruction=instruction,
            model=(
                live_model_spec(own, in_process_only=in_process_only, field=f"model of {name!r}")
                if own is not None
                else None
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "traits": plain(self.traits),
            "instruction": self.instruction,
            "model": plain(self.model),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentSpec:
        if not isinstance(data, Mapping):
            raise ConversationValueError(f"an agent spec must be a dict, got {type(data).__name__}")
        unknown = set(data) - {"name", "traits", "instruction", "model"}
        if unknown:
            raise ConversationValueError(
                f"agent spec has unknown field(s) {sorted(unknown)}; "
                "allowed: name, traits, instruction, model"
            )
        return cls(
            name=data.get("name"),  # type: ignore[arg-type]
            traits=data.get("traits") or {},
            instruction=data.get("instruction"),
            model=data.get("model"),
        )


def _plain_traits(traits: Mapping[str, Any]) -> dict[str, Any]:
    """EDSL escapes braces in traits as HTML entities; store the original text."""

    def plain(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("&#123;", "{").replace("&#125;", "}")
        if isinstance(value, Mapping):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    return {str(k): plain(v) for k, v in dict(traits).items()}


def roster_specs(agents: Any, *, in_process_only: bool = False) -> tuple[AgentSpec, ...]:
    """Agent specs from an EDSL ``AgentList``, a list of Agents, specs or dicts; names unique."""
    if agents is None or isinstance(agents, str | bytes | Mapping):
        raise ConversationValueError(
            "agents must be a list of agents (an EDSL AgentList, Agents, or dicts with a name)"
        )
    size = len(agents) if hasattr(agents, "__len__") else None
    if size is not None and size > MAX_AGENTS:
        raise ConversationValueError(
            f"agents: a room holds at most {MAX_AGENTS} agents, got {size}"
        )
    try:
        items: list[Any] = list(itertools.islice(iter(agents), MAX_AGENTS + 1))
    except TypeError:
        raise ConversationValueError(
            f"agents must be a list of agents, got {type(agents).__name__}"
        ) from None
    if len(items) > MAX_AGENTS:
        raise ConversationValueError(f"agents: a room holds at most {MAX_AGENTS} agents")
    specs = tuple(AgentSpec.from_agent(a, in_process_only=in_process_only) for a in items)
    if not specs:
        raise ConversationValueError("a room needs at least one agent; pass agents=[...]")
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ConversationValueError(f"agent names must be unique; {spec.name!r} appears twice")
        seen.add(spec.name)
    return specs


def checked_models(roster: tuple[AgentSpec, ...]) -> tuple[AgentSpec, ...]:
    """Resolve each agent's own model spec once, when the room is created: an unknown service,
    a missing SDK or a bad parameter is a configuration error naming the agent, not a failure of
    every later turn. The spec is stored as given."""
    from conversation import models

    for spec in roster:
        if spec.model is not None:
            try:
                models.resolve_model(dict(spec.model))
            except ConversationValueError as exc:
                raise ConversationValueError(f"model of {spec.name!r}: {exc}") from None
    return roster


__all__ = [
    "EDSL_DEFAULT_INSTRUCTION",
    "MAX_INSTRUCTION_CHARS",
    "AgentSpec",
    "checked_models",
    "roster_specs",
]
