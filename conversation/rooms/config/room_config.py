"""A room's configuration: who is in it and the rules it runs by, as validated, storable data.

``RoomConfig`` is what ``Room.create`` stores in the database (``rooms.config``) and what every
worker rebuilds the room's behaviour from: the roster of agent specs, the planner, the termination
condition, the prompt template, the context policy, the model binding (a spec, never a key), the
seed, and the settings declared once in ``RoomConfigBase`` (``settings.py``). Everything is plain
JSON; a config that cannot be stored (a custom planner class, a callable condition) is rejected
when the room is created, with the field named.

It is a frozen pydantic model: no attribute can be set once it is made. A config read from
storage is validated once and shared by every reader (``from_dict`` caches it), so the JSON it
carries is read-only too (``frozen.py``).
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import PrivateAttr, ValidationError, field_validator, model_validator
from typing_extensions import Unpack

from conversation.context.window import ContextPolicy, context_policy_from_dict
from conversation.exceptions import ConversationValueError
from conversation.models.bindings import is_in_process_only
from conversation.models.settings import CallSettings, context_window, window_is_fixed
from conversation.planning.planner import RoundRobinRoomPlanner
from conversation.planning.registry import planner_from_dict
from conversation.rooms.config.agents import AgentSpec, checked_models, roster_specs
from conversation.rooms.config.frozen import frozen, plain
from conversation.rooms.config.rules import (
    ROOM_PROMPT_VARIABLES,
    checked_breakpoints,
    planner_to_dict,
    storable_rules,
    trial_values,
)
from conversation.rooms.config.settings import (
    CONFIG_VERSION,
    FIELDS,
    OMITTED_AT_DEFAULT,
    RetrySettings,
    RoomConfigBase,
    RoomSettings,
    StoredRoomConfig,
    config_place,
    settings_place,
)
from conversation.rooms.log import max_turns_of
from conversation.termination.budget import Budget
from conversation.termination.conditions import termination_from_dict
from conversation.text.limits import MAX_AGENTS, MAX_CONFIG_CHARS, check_json_value
from conversation.text.safety import compiled_template
from conversation.text.schema import door_error, validated

#: The key of ``RoomConfig._derived`` that marks a frozen config (read from storage).
_FROZEN = object()
#: The parts of a stored config that are JSON (read-only once shared).
_JSON_PARTS = ("planner", "model", "termination", "context", "breakpoints")


class RoomConfig(RoomConfigBase):
    """Everything a worker needs to run a room, as JSON-ready data (see the module docstring)."""

    #: What a worker asks of the config on every turn (names, call settings, the context policy,
    #: the max turns), computed once: the names always (the roster is immutable), the rest only
    #: for a config read from storage, whose dicts are frozen (``_config_from_json`` marks it);
    #: a config built in code may have its dicts changed, so they are read again each time.
    _derived: dict[Any, Any] = PrivateAttr(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        """Validated as ``build`` and ``from_dict`` validate: ``ConversationValueError`` naming
        the field."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise door_error(exc, place=settings_place) from None

    def __eq__(self, other: object) -> bool:
        """Equal settings (what was computed from them is not compared)."""
        if not isinstance(other, RoomConfig):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    @field_validator("roster", mode="after")
    @classmethod
    def _roster_size(cls, roster: tuple[AgentSpec, ...]) -> tuple[AgentSpec, ...]:
        if not roster:
            raise ConversationValueError("a room needs at least one agent")
        if len(roster) > MAX_AGENTS:
            raise ConversationValueError(
                f"a room holds at most {MAX_AGENTS} agents, got {len(roster)}"
            )
        return roster

    @field_validator("breakpoints", mode="after")
    @classmethod
    def _on_the_roster(cls, value: Any, info: Any) -> Any:
        roster = info.data.get("roster")
        if roster is None:
            return value  # the roster's own error is reported
        return checked_breakpoints(value, tuple(spec.name for spec in roster))

    @model_validator(mode="after")
    def _whole(self) -> RoomConfig:
        """What no field can check alone: sizes within one budget, the request settings
        together, and the stored behaviour restoring."""
        self._check_sizes()
        CallSettings(  # validates the three settings together
            max_output_tokens=self.max_output_tokens,
            timeout=self.request_timeout,
            context_window=self.context_window,
        )
        self._check_behaviour()
        return self

    def _check_sizes(self) -> None:
        """Size and depth first, before anything parses the parts (a 50 MB stop word, a
        termination nested 5000 deep): measured in one walk each, within one budget."""
        budget = MAX_CONFIG_CHARS - sum(
            check_json_value(spec.traits, "roster", max_chars=MAX_CONFIG_CHARS)
            for spec in self.roster
        )
        if budget <= 0:
            raise ConversationValueError(
                f"the roster's traits are more than {MAX_CONFIG_CHARS:,} characters as JSON, "
                "the limit of a whole room config; make them smaller"
            )
        for part in ("planner", "model", "termination", "context"):
            value = getattr(self, part)
            if value is not None:
                budget -= check_json_value(value, part, max_chars=budget)

    def _check_behaviour(self) -> None:
        """The stored behaviour restores: the planner, the stop rule, the context policy, and
        the prompt template compiles and renders with representative values."""
        planner_from_dict(self.planner)
        if self.termination is not None:
            termination_from_dict(self.termination)
        if self.prompt_template is not None:
            template = compiled_template(
                self.prompt_template, ROOM_PROMPT_VARIABLES, "prompt_template"
            )
            template.trial(trial_values(self.names, max_turns_of(self.termination)))
        context_policy_from_dict(self.context)

    @property
    def names(self) -> tuple[str, ...]:
        names = self._derived.get("names")
        if names is None:
            names = self._derived["names"] = tuple(spec.name for spec in self.roster)
        return names

    def _once(self, key: Any, make: Callable[[], Any], *, fixed: bool = True) -> Any:
        """``make()``, kept under ``key`` when this config is frozen and ``fixed`` (the value
        depends on nothing outside the config)."""
        derived = self._derived
        if key in derived:
            return derived[key]
        value = make()
        if fixed and derived.get(_FROZEN):
            derived[key] = value
        return value

    def max_turns(self) -> int | None:
        """The smallest ``max_turns`` of the termination condition (the prompt's hint)."""
        return self._once("max_turns", lambda: max_turns_of(self.termination))

    def spec(self, name: str) -> AgentSpec:
        for spec in self.roster:
            if spec.name == name:
                return spec
        raise ConversationValueError(f"{name!r} is not on this room's roster {list(self.names)}")

    def planner_object(self) -> Any:
        return planner_from_dict(self.planner)

    def breakpoints_of(self, when: str) -> tuple[str, ...]:
        """The agents with a breakpoint ``when`` (``"before"`` they speak, ``"after"`` each of
        their turns)."""
        return tuple((self.breakpoints or {}).get(when, ()))

    def termination_object(self) -> Any:
        return termination_from_dict(self.termination) if self.termination is not None else None

    def context_policy(self) -> ContextPolicy:
        """The stored policy (no window of its own: the prompt builder still fits the model's
        window, see ``prompt_budget``)."""
        return self._once("context", lambda: context_policy_from_dict(self.context))

    def model_of(self, speaker: str) -> Mapping[str, Any]:
        """The model spec that answers for ``speaker`` (its own, else the room's)."""
        own = self.spec(speaker).model if speaker in self.names else None
        return own or self.model

    def call_settings(self, speaker: str) -> CallSettings:
        """The per-request settings of ``speaker``'s turns: the room's output limit and timeout,
        the window of the model that answers, and the name whose copied label is stripped.
        Kept once made unless the window is what a server reports or a setting says (those
        may change while the room runs)."""
        spec = self.model_of(speaker)
        return self._once(
            ("settings", speaker),
            lambda: CallSettings(
                max_output_tokens=self.max_output_tokens,
                timeout=self.request_timeout,
                context_window=context_window(spec, self.context_window),
                speakers=(speaker,) if speaker in self.names else (),
                roster=(*self.names, "user"),
            ),
            fixed=window_is_fixed(spec, self.context_window),
        )

    @property
    def cache_iteration(self) -> int:
        """The EDSL cache ``iteration`` of this room's calls: its seed, so rooms with other seeds
        (the replicates of an experiment) get their own answers, and a fork or a re-run (the same
        seed) reuses them."""
        return self.seed % 2**63

    @property
    def in_process_only(self) -> bool:
        """True when a model of this room exists only in the process that created it."""
        return is_in_process_only(self.model) or any(
            is_in_process_only(spec.model) for spec in self.roster
        )

    @classmethod
    def build(
        cls, *, agents: Any, in_process_only: bool = False, **settings: Unpack[RoomSettings]
    ) -> RoomConfig:
        """From the objects a caller passes to ``Room.create`` (``RoomSettings``). A model object
        that cannot be rebuilt in another process is refused unless ``in_process_only`` (see
        ``bindings``)."""
        from conversation import models
        from conversation.models.bindings import live_model_spec

        unknown = sorted(set(settings) - set(RoomSettings.__annotations__))
        if unknown:
            raise TypeError(
                f"unknown room setting(s) {unknown}; the settings are "
                f"{', '.join(RoomSettings.__annotations__)}"
            )
        values: dict[str, Any] = dict(settings)
        termination, context = storable_rules(settings.get("termination"), settings.get("context"))
        planner, model = settings.get("planner"), settings.get("model")
        for part, value in (("model", model), ("planner", planner), ("context", context)):
            if isinstance(value, Mapping):  # measured before anything parses it
                check_json_value(value, part, max_chars=MAX_CONFIG_CHARS)
        values["roster"] = checked_models(roster_specs(agents, in_process_only=in_process_only))
        values["planner"] = planner if isinstance(planner, Mapping) else planner_to_dict(planner)
        values["model"] = live_model_spec(
            model if model is not None else models.default_model(),
            in_process_only=in_process_only,
        )
        values["termination"], values["context"] = termination, context
        seed = settings.get("seed")
        values["seed"] = secrets.randbelow(2**31) if seed is None else seed
        return validated(cls, values, place=settings_place)

    def to_dict(self) -> dict[str, Any]:
        """The stored document: the version, then every setting in declared order (a setting
        at its default that older configs lack is left out, so they read the same)."""
        data: dict[str, Any] = {"version": CONFIG_VERSION}
        for name, info in FIELDS.items():
            value = getattr(self, name)
            if name in OMITTED_AT_DEFAULT and value == info.default:
                continue
            data[name] = _stored(value)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RoomConfig:
        """Validate and build (cached: workers read the same stored config on every turn)."""
        if not isinstance(data, Mapping):
            raise ConversationValueError("a room config must be a dict")
        check_json_value(data, "room config", max_chars=MAX_CONFIG_CHARS + 10_000)
        try:
            key = json.dumps(data, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            return cls._from_dict(data)
        return _config_from_json(key)

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any], *, shared: bool = False) -> RoomConfig:
        """A stored document as a config; ``shared``: its JSON read-only (see ``frozen``)."""
        if not isinstance(data, Mapping):
            raise ConversationValueError("a room config must be a dict")
        stored = validated(StoredRoomConfig, data, place=config_place)
        values = {name: getattr(stored, name) for name in FIELDS}
        values["planner"] = values["planner"] or RoundRobinRoomPlanner().to_dict()
        if shared:
            values.update({name: frozen(values[name]) for name in _JSON_PARTS})
            values["roster"] = [frozen(spec) for spec in values["roster"]]
        values["roster"] = roster_specs([AgentSpec.from_dict(a) for a in values["roster"]])
        return validated(cls, values, place=settings_place)


def _stored(value: Any) -> Any:
    """A setting's value as the stored document holds it (the caller's own copy)."""
    if isinstance(value, tuple) and value and isinstance(value[0], AgentSpec):
        return [spec.to_dict() for spec in value]
    if isinstance(value, RetrySettings | Budget):
        return value.to_dict()
    return plain(value)


@functools.lru_cache(maxsize=1024)
def _config_from_json(key: str) -> RoomConfig:
    """The validated config of a stored JSON document, shared by every caller that reads it:
    so its dicts and lists are read-only (a caller that changed one would change it for all)."""
    config = RoomConfig._from_dict(json.loads(key), shared=True)
    config._derived[_FROZEN] = True
    return config


__all__ = ["RoomConfig"]
