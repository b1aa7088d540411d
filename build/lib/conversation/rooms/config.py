"""A room's configuration: who is in it and the rules it runs by, as validated, storable data.

``RoomConfig`` is what ``Room.create`` stores in the database (``rooms.config``) and what every
worker rebuilds the room's behaviour from: the roster of agent specs, the planner, the termination
condition, the prompt template, the context policy, the model binding (a spec, never a key), the
seed, and whether drafts need a person's approval. Everything is plain JSON; a config that cannot
be stored (a custom planner class, a callable condition) is rejected when the room is created,
with the field named.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conversation.context.window import ContextPolicy, context_policy_from_dict
from conversation.exceptions import ConversationValueError
from conversation.models.bindings import is_in_process_only
from conversation.models.settings import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_TIMEOUT_SECONDS,
    CallSettings,
    context_window,
    window_is_fixed,
)
from conversation.planning.planner import RoundRobinRoomPlanner
from conversation.planning.registry import planner_from_dict
from conversation.rooms.config_schema import (
    DEFAULT_PARTIAL_WRITES,
    RetryIn,
    RoomSettingsIn,
    StoredRoomConfig,
    config_place,
    retry_place,
    settings_place,
)
from conversation.rooms.config_schema import (
    MAX_SEED as MAX_SEED,
)
from conversation.rooms.log import max_turns_of
from conversation.termination.budget import Budget
from conversation.termination.conditions import termination_from_dict
from conversation.text.limits import (
    MAX_AGENTS,
    MAX_CONDITION_CHARS,
    MAX_CONFIG_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_NAME_CHARS,
    check_json_value,
    check_text,
)
from conversation.text.limits import MAX_TRAITS_CHARS as MAX_TRAITS_CHARS
from conversation.text.safety import compiled_template
from conversation.text.schema import validated

#: Agent and human names: a letter or digit, then letters, digits, ``_ - .`` (the @-mention
#: grammar, so every agent can be addressed), at most 64 characters.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.]{0,63}")
#: Speaker names of the room's own notices (``room``) and of imported system messages
#: (``system``): no agent and no person may use them, in any case.
RESERVED_SPEAKERS = frozenset({"room", "system"})
MAX_INSTRUCTION_CHARS = 4_000
EDSL_DEFAULT_INSTRUCTION = (
    "You are answering questions as if you were a human. Do not break character."
)

#: Variables a room's prompt template may use.
ROOM_PROMPT_VARIABLES = (
    "speaker_name",
    "conversation",
    "agent_names",
    "current_turn",
    "max_turns",
    "turns_left",
    "feedback",
    "activity_opener",
    "addressee",
)


def check_name(value: Any, field_name: str) -> str:
    """A safe agent or human name (see ``NAME_PATTERN``), or ``ConversationValueError``."""
    if not isinstance(value, str) or len(value) > 64 or not NAME_PATTERN.fullmatch(value):
        shown = repr(value[:70]) if isinstance(value, str) else _clip(value)
        raise ConversationValueError(
            f"{field_name} {shown} is not a valid name: use 1-64 letters, digits, '_', '-' or "
            "'.', starting with a letter or digit (no spaces, so it can be @-mentioned)"
        )
    return value


def _check_json(value: Any, field_name: str, limit: int) -> None:
    """Plain JSON of bounded size and depth, measured before anything serialises it."""
    check_json_value(value, field_name, max_chars=limit)


def reserved_speaker(name: str, roster: Iterable[str] = ()) -> str | None:
    """What ``name`` would impersonate: a notice name or an agent of ``roster`` (compared
    without case: ``alice`` reads as ``Alice``); None when it is free for a person."""
    folded = name.casefold()
    if folded in RESERVED_SPEAKERS:
        return f"{name!r} is the name the room's own notices use"
    for agent in roster:
        if agent.casefold() == folded:
            return f"{name!r} is the name of the agent {agent!r} of this room"
    return None


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
            "traits": _plain(self.traits),
            "instruction": self.instruction,
            "model": _plain(self.model),
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


def planner_to_dict(planner: Any) -> dict[str, Any]:
    """A built-in planner (or conversation-API strategy) as storable data; others are rejected."""
    from conversation.dialogue.strategies import SpeakerStrategy

    if planner is None:
        planner = RoundRobinRoomPlanner()
    if isinstance(planner, SpeakerStrategy):
        planner = planner._policy
    to_dict = getattr(planner, "to_dict", None)
    if not callable(to_dict):
        raise ConversationValueError(
            f"planner {type(planner).__name__} cannot be stored with the room; use a built-in "
            "planner such as RoundRobinRoomPlanner() or AddressedPolicy()"
        )
    data = to_dict()
    planner_from_dict(data)  # proves it can be restored
    return data


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """How a room retries a model call: attempts in all, and the first backoff delay (seconds)."""

    max_attempts: int = 4
    base_delay: float = 1.0

    def __post_init__(self) -> None:
        validated(
            RetryIn,
            {"max_attempts": self.max_attempts, "base_delay": self.base_delay},
            place=retry_place,
        )


def retry_settings(value: Any) -> RetrySettings:
    """``RetrySettings`` from None, itself, or a dict of ``max_attempts`` / ``base_delay``."""
    if value is None:
        return RetrySettings()
    if isinstance(value, RetrySettings):
        return value
    if not isinstance(value, Mapping):
        raise ConversationValueError(
            f"retry must be a dict such as {{'max_attempts': 4, 'base_delay': 1.0}} or "
            f"RetrySettings(...), got {type(value).__name__}"
        )
    checked = validated(RetryIn, value, place=retry_place)
    return RetrySettings(max_attempts=checked.max_attempts, base_delay=checked.base_delay)


#: The key of ``RoomConfig._derived`` that marks a frozen config (read from storage).
_FROZEN = object()


@dataclass(frozen=True, slots=True)
class RoomConfig:
    """Everything a worker needs to run a room, as JSON-ready data."""

    roster: tuple[AgentSpec, ...]
    planner: Mapping[str, Any]
    model: Mapping[str, Any]
    termination: Mapping[str, Any] | None = None
    prompt_template: str | None = None
    context: Mapping[str, Any] | None = None
    seed: int = 0
    moderated: bool = False
    max_denials: int = 3
    retry: RetrySettings = RetrySettings()
    #: At most this many tokens per reply (sent as the service understands it).
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    #: Seconds one model request may take before it is abandoned (and retried with backoff).
    request_timeout: float = DEFAULT_TIMEOUT_SECONDS
    #: The model's context window in tokens; None: known for known models; for a server what it
    #: reports, else ``ROOMS_CONTEXT_WINDOW``, else 4096 (``models.settings.context_window``).
    context_window: int | None = None
    #: Answers come from the database's model cache when the same call was answered before
    #: (same model and parameters, prompts and seed), and new answers are stored there.
    use_cache: bool = True
    #: The room's spending limit (tokens and/or US dollars); None: no limit.
    budget: Budget | None = None
    #: Per-agent breakpoints: ``{"before": [names], "after": [names]}`` (see ``breakpoints_of``).
    breakpoints: Mapping[str, Any] | None = None
    #: Replies stream where the model supports it (``models.supports_streaming``): the running
    #: turn's partial draft is written as it grows and a person may stop it (docs/streaming.md).
    streaming: bool = True
    #: At most this many partial-draft writes per second per streaming turn.
    partial_writes_per_second: float = DEFAULT_PARTIAL_WRITES
    #: What a worker asks of the config on every turn (names, call settings, the context policy,
    #: the max turns), computed once: the names always (the roster is immutable), the rest only
    #: for a config read from storage, whose dicts are frozen (``_config_from_json`` marks it);
    #: a config built in code may have its dicts changed, so they are read again each time.
    _derived: dict[Any, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        if not self.roster:
            raise ConversationValueError("a room needs at least one agent")
        object.__setattr__(self, "breakpoints", checked_breakpoints(self.breakpoints, self.names))
        if self.budget is not None and not isinstance(self.budget, Budget):
            raise ConversationValueError(
                f"budget must be a Budget (or a dict with max_tokens / max_dollars), got "
                f"{type(self.budget).__name__}"
            )
        if len(self.roster) > MAX_AGENTS:
            raise ConversationValueError(
                f"a room holds at most {MAX_AGENTS} agents, got {len(self.roster)}"
            )
        self._check_sizes()
        if not isinstance(self.retry, RetrySettings):
            object.__setattr__(self, "retry", retry_settings(self.retry))
        CallSettings(  # validates the three settings together
            max_output_tokens=self.max_output_tokens,
            timeout=self.request_timeout,
            context_window=self.context_window,
        )
        self._check_behaviour()
        settings = {name: getattr(self, name) for name in RoomSettingsIn.model_fields}
        validated(RoomSettingsIn, settings, place=settings_place)

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
            template.trial(_trial_values(self.names, max_turns_of(self.termination)))
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
        cls,
        *,
        agents: Any,
        planner: Any = None,
        model: Any = None,
        termination: Any = None,
        prompt_template: str | None = None,
        context: Any = None,
        seed: int | None = None,
        moderated: bool = False,
        max_denials: int = 3,
        retry: RetrySettings | Mapping[str, Any] | None = None,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        request_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        context_window: int | None = None,
        use_cache: bool = True,
        budget: Budget | Mapping[str, Any] | None = None,
        in_process_only: bool = False,
        breakpoints: Mapping[str, Any] | None = None,
        streaming: bool = True,
        partial_writes_per_second: float = DEFAULT_PARTIAL_WRITES,
    ) -> RoomConfig:
        """From the objects a caller passes to ``Room.create``. A model object that cannot be
        rebuilt in another process is refused unless ``in_process_only`` (see ``bindings``)."""
        from conversation import models
        from conversation.models.bindings import live_model_spec

        termination, context = _storable_rules(termination, context)
        for part, value in (("model", model), ("planner", planner), ("context", context)):
            if isinstance(value, Mapping):  # measured before anything parses it
                check_json_value(value, part, max_chars=MAX_CONFIG_CHARS)
        if isinstance(budget, Mapping):
            budget = Budget.from_dict(budget)
        elif isinstance(budget, Budget) and not budget.limited:
            budget = None
        return cls(
            roster=_checked_models(roster_specs(agents, in_process_only=in_process_only)),
            planner=planner if isinstance(planner, Mapping) else planner_to_dict(planner),
            model=live_model_spec(
                model if model is not None else models.default_model(),
                in_process_only=in_process_only,
            ),
            termination=termination,
            prompt_template=prompt_template,
            context=context,
            seed=secrets.randbelow(2**31) if seed is None else seed,
            moderated=moderated,
            max_denials=max_denials,
            retry=retry_settings(retry),
            max_output_tokens=max_output_tokens,
            request_timeout=request_timeout,
            context_window=context_window,
            use_cache=use_cache,
            budget=budget,
            breakpoints=breakpoints,
            streaming=streaming,
            partial_writes_per_second=partial_writes_per_second,
        )

    def to_dict(self) -> dict[str, Any]:
        data = {
            "version": 1,
            "roster": [spec.to_dict() for spec in self.roster],
            "planner": _plain(self.planner),
            "model": _plain(self.model),
            "termination": _plain(self.termination),
            "prompt_template": self.prompt_template,
            "context": _plain(self.context),
            "seed": self.seed,
            "moderated": self.moderated,
            "max_denials": self.max_denials,
            "retry": {"max_attempts": self.retry.max_attempts, "base_delay": self.retry.base_delay},
            "max_output_tokens": self.max_output_tokens,
            "request_timeout": self.request_timeout,
            "context_window": self.context_window,
            "use_cache": self.use_cache,
            "budget": self.budget.to_dict() if self.budget is not None else None,
        }
        if self.breakpoints is not None:  # absent when unused: older configs read the same
            data["breakpoints"] = _plain(self.breakpoints)
        if not self.streaming:  # absent when default, as breakpoints
            data["streaming"] = False
        if self.partial_writes_per_second != DEFAULT_PARTIAL_WRITES:
            data["partial_writes_per_second"] = self.partial_writes_per_second
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
    def _from_dict(cls, data: Mapping[str, Any]) -> RoomConfig:
        if not isinstance(data, Mapping):
            raise ConversationValueError("a room config must be a dict")
        stored = validated(StoredRoomConfig, data, place=config_place)
        fields = {name: getattr(stored, name) for name in _PASSED_ON}
        return cls(
            roster=roster_specs([AgentSpec.from_dict(a) for a in stored.roster]),
            planner=stored.planner or RoundRobinRoomPlanner().to_dict(),
            retry=retry_settings(stored.retry or {}),
            budget=Budget.from_dict(stored.budget),
            **fields,
        )


#: The stored config's fields that ``RoomConfig`` takes as they are (it checks them itself).
_PASSED_ON = (
    "model",
    "termination",
    "prompt_template",
    "context",
    "seed",
    "moderated",
    "max_denials",
    "max_output_tokens",
    "request_timeout",
    "context_window",
    "use_cache",
    "breakpoints",
    "streaming",
    "partial_writes_per_second",
)


def _storable_rules(termination: Any, context: Any) -> tuple[Any, Any]:
    """A termination condition and a context policy as the data a room stores; a plain
    function as a condition is refused (it cannot be stored with the room)."""
    if termination is not None and not isinstance(termination, Mapping):
        to_dict = getattr(termination, "to_dict", None)
        if not callable(to_dict):
            raise ConversationValueError(
                "termination must be a condition from conversation.termination.conditions "
                "(combine them with | and &); a plain function cannot be stored with the room"
            )
        termination = to_dict()
    if isinstance(context, ContextPolicy):
        context = context.to_dict()
    return termination, context


def check_placement(
    name: Any, experiment_id: Any = None, condition: Any = None, replicate: Any = None
) -> str:
    """A room's name and its place in an experiment, checked before anything else is looked at
    (a 50 MB name is refused by its length)."""
    check_text(name, "name", MAX_NAME_CHARS, one_line=True)
    if experiment_id is not None and (
        not isinstance(experiment_id, int) or isinstance(experiment_id, bool) or experiment_id < 1
    ):
        raise ConversationValueError(
            f"experiment_id must be a positive integer (an experiment's id) or None, got "
            f"{type(experiment_id).__name__}"
        )
    if condition is not None:
        check_text(condition, "condition", MAX_CONDITION_CHARS, one_line=True)
    if replicate is not None and (
        not isinstance(replicate, int) or isinstance(replicate, bool) or not 1 <= replicate <= 10**6
    ):
        raise ConversationValueError("replicate must be a positive integer or None")
    return name


#: When a breakpoint pauses a room: before the agent speaks, or after each of its turns.
BREAKPOINT_KINDS = ("before", "after")


def checked_breakpoints(value: Any, roster: tuple[str, ...]) -> dict[str, list[str]] | None:
    """``{"before": [...], "after": [...]}`` (names of the roster, each once), or None when no
    breakpoint is set; ``ConversationValueError`` naming the problem otherwise."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConversationValueError(
            f"breakpoints must be a dict like {{'before': ['Ana'], 'after': ['Bo']}}, got {value!r}"
        )
    unknown = sorted(set(value) - set(BREAKPOINT_KINDS))
    if unknown:
        raise ConversationValueError(
            f"breakpoints has unknown key(s) {unknown}; use 'before' and/or 'after'"
        )
    checked: dict[str, list[str]] = {}
    for when in BREAKPOINT_KINDS:
        names = value.get(when) or []
        if isinstance(names, str) or not isinstance(names, list | tuple):
            raise ConversationValueError(
                f"breakpoints[{when!r}] must be a list of agent names, got {names!r}"
            )
        strangers = [n for n in names if n not in roster]
        if strangers:
            raise ConversationValueError(
                f"breakpoints[{when!r}] names {strangers}, not on the roster {list(roster)}; "
                "use agent names of this room"
            )
        checked[when] = list(dict.fromkeys(names))
    if not any(checked.values()):
        return None
    return checked


REQUEST_SETTINGS = ("max_output_tokens", "request_timeout", "context_window", "use_cache")


def request_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    """The model request settings a template (or any dict) names, for ``Room.create``."""
    return {key: data[key] for key in REQUEST_SETTINGS if data.get(key) is not None}


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _trial_values(names: tuple[str, ...], max_turns: int | None) -> list[dict[str, Any]]:
    """Representative values of a room prompt's variables: a first turn answering a message of
    the largest size, and a later turn with feedback, an addressee and no opener."""
    longest = "x" * MAX_MESSAGE_CHARS
    last = max_turns - 1 if max_turns else 7
    return [
        {
            "speaker_name": names[0],
            "conversation": '{"speaker": "user", "text": "' + longest + '"}',
            "agent_names": list(names),
            "current_turn": 0,
            "max_turns": max_turns,
            "turns_left": max_turns,
            "feedback": None,
            "activity_opener": longest,
            "addressee": None,
        },
        {
            "speaker_name": names[-1],
            "conversation": '{"speaker": "user", "text": "Hello"}\n{"speaker": "'
            + names[0]
            + '", "text": "Hi"}',
            "agent_names": list(names),
            "current_turn": max(last, 0),
            "max_turns": max_turns,
            "turns_left": 1 if max_turns else None,
            "feedback": "Your last draft was not approved: keep it short.",
            "activity_opener": None,
            "addressee": names[0],
        },
    ]


def _checked_models(roster: tuple[AgentSpec, ...]) -> tuple[AgentSpec, ...]:
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


@functools.lru_cache(maxsize=1024)
def _config_from_json(key: str) -> RoomConfig:
    """The validated config of a stored JSON document, shared by every caller that reads it:
    so its dicts and lists are read-only (a caller that changed one would change it for all)."""
    config = RoomConfig._from_dict(json.loads(key))
    for name in ("planner", "model", "termination", "context", "breakpoints"):
        object.__setattr__(config, name, _frozen(getattr(config, name)))
    for spec in config.roster:
        object.__setattr__(spec, "traits", _frozen(spec.traits))
        object.__setattr__(spec, "model", _frozen(spec.model))
    config._derived[_FROZEN] = True
    return config


class _FrozenDict(dict[str, Any]):
    """A dict that refuses changes (still a dict: ``json.dumps``, ``dict(...)``, isinstance)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "this part of a room config is shared and read-only; copy it first (dict(...))"
        )

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = pop = popitem = clear = setdefault = _refuse  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        import copy

        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


class _FrozenList(list[Any]):
    """A list that refuses changes (still a list for ``json.dumps`` and isinstance checks)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "this part of a room config is shared and read-only; copy it first (list(...))"
        )

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        import copy

        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self) -> Any:
        return (list, (list(self),))


def _plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists (what ``to_dict`` hands out: the caller's own)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple) and not isinstance(value, str):
        return [_plain(v) for v in value]
    return value


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _FrozenDict({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return _FrozenList(_frozen(v) for v in value)
    return value


__all__ = [
    "NAME_PATTERN",
    "ROOM_PROMPT_VARIABLES",
    "AgentSpec",
    "RESERVED_SPEAKERS",
    "BREAKPOINT_KINDS",
    "RetrySettings",
    "RoomConfig",
    "reserved_speaker",
    "retry_settings",
    "check_name",
    "check_placement",
    "checked_breakpoints",
    "REQUEST_SETTINGS",
    "planner_to_dict",
    "request_settings",
    "roster_specs",
]
