"""A room's settings, declared once.

``RoomConfigBase`` declares every setting of a room as one field: its type, its default for a new
room, its one-line doc (``description``), its rule (a validator in the annotation) and what else
it is (a :class:`Setting` marker: the keyword ``Room.create`` takes it by, its default in a config
stored before it existed, whether a stored config leaves it out at its default, whether it is a
model request setting). Everything else is derived from these fields:

- ``RoomConfig`` (``room_config.py``) is ``RoomConfigBase`` with the room's behaviour;
- ``RoomSettings``: the keywords of ``Room.create``, ``RoomConfig.build`` and
  ``Room.update_config`` (a ``TypedDict`` for ``Unpack``; Python cannot derive a static type, so
  it is checked against the fields when this module is imported);
- ``EDITABLE`` (what ``update_config`` may change), ``REQUEST_SETTINGS``, ``setting_default``
  (the forms' defaults), ``STORED_DEFAULTS`` and ``StoredRoomConfig`` (the stored document's shape).

A refusal is a ``ConversationValueError`` naming the field (``seed``, ``retry max_attempts``,
``room config roster``) and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypedDict

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    SkipValidation,
    create_model,
    model_validator,
)
from pydantic.fields import FieldInfo

from conversation.exceptions import ConversationValueError
from conversation.models.settings import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_TIMEOUT_SECONDS,
    STORED_DEFAULT_MAX_OUTPUT_TOKENS,
)
from conversation.rooms.config.agents import AgentSpec
from conversation.termination.budget import Budget
from conversation.text.schema import DoorModel, Loc, Problem, validated

CONFIG_VERSION = 1
#: Seeds are stored as JSON numbers and fed to ``random.Random``: 64 bits are plenty.
MAX_SEED = 2**63
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Setting:
    """What a field of ``RoomConfigBase`` is besides its type, default and doc."""

    #: The keyword ``Room.create`` and ``update_config`` take it by (default: the field's name).
    keyword: str | None = None
    #: Its value in a config stored before the setting existed (default: the new-room default).
    stored_default: Any = _UNSET
    #: A stored config leaves it out at its default (so older configs read the same).
    omit_default: bool = False
    #: A model request setting (an experiment's or a study's template may name it).
    request: bool = False


def between(low: float, high: float, what: str) -> AfterValidator:
    """A number from ``low`` to ``high`` (inclusive), else ``must be <what> from .. to ..``."""

    def check(value: Any) -> Any:
        if not low <= value <= high:
            raise Problem(f"must be {what} from {low} to {high}, got {value!r}")
        return value

    return AfterValidator(check)


def flag(fix: str = "") -> BeforeValidator:
    """True or False (not 1, not "yes"), else ``must be True or False, got ..`` and ``fix``."""

    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise Problem(f"must be True or False, got {_clip(value)}{fix}")
        return value

    return BeforeValidator(check)


def _seed(value: int) -> int:
    if not -MAX_SEED < value < MAX_SEED:
        raise Problem(f"must be an integer of at most 63 bits, got {_clip(value)}")
    return value


class RetryIn(DoorModel):
    """``{"max_attempts": 4, "base_delay": 1.0}``: attempts in all, the first backoff delay."""

    unknown_noun: ClassVar[str] = "key"

    max_attempts: Annotated[int, between(1, 20, "an integer")] = 4
    base_delay: Annotated[float, between(0, 60, "a number of seconds")] = 1.0


def retry_place(loc: Loc) -> str:
    return " ".join(["retry", *map(str, loc)])


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

    def to_dict(self) -> dict[str, Any]:
        return {"max_attempts": self.max_attempts, "base_delay": self.base_delay}


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


def budget_of(value: Any) -> Budget | None:
    """A room's ``Budget`` from None, a ``Budget`` or ``{"max_tokens", "max_dollars"}``; a budget
    without a limit is no budget."""
    if value is None or isinstance(value, Mapping):
        return Budget.from_dict(value)
    if not isinstance(value, Budget):
        raise ConversationValueError(
            f"budget must be a Budget (or a dict with max_tokens / max_dollars), got "
            f"{type(value).__name__}"
        )
    return value if value.limited else None


#: JSON a room stores as it is; what it means is checked by ``RoomConfig`` as a whole.
JSONPart = Annotated[Mapping[str, Any], SkipValidation]


class RoomConfigBase(BaseModel):
    """Every setting of a room, once (see the module docstring). Fields are in stored order."""

    model_config = ConfigDict(
        frozen=True, strict=True, arbitrary_types_allowed=True, allow_inf_nan=False
    )

    roster: Annotated[tuple[AgentSpec, ...], SkipValidation, Setting(keyword="agents")] = Field(
        description="the agents (EDSL Agents, AgentSpecs or dicts with a name), names unique"
    )
    planner: Annotated[JSONPart, Setting()] = Field(
        description="who speaks next: a built-in planner or its dict (round robin by default)"
    )
    model: Annotated[JSONPart, Setting()] = Field(
        description="the model spec that answers (an agent's own model wins); never a key"
    )
    termination: Annotated[JSONPart | None, Setting()] = Field(
        None, description="the stop rule: conditions of termination.conditions, | and &"
    )
    prompt_template: Annotated[str | None, SkipValidation, Setting()] = Field(
        None, description="a Jinja template of each turn's prompt (ROOM_PROMPT_VARIABLES)"
    )
    context: Annotated[JSONPart | None, Setting()] = Field(
        None, description="what each agent is shown: a ContextPolicy or its dict"
    )
    seed: Annotated[int, AfterValidator(_seed), Setting(stored_default=0)] = Field(
        0, description="the seed of the room's random choices and of its model cache entries"
    )
    moderated: Annotated[bool, flag(), Setting()] = Field(
        False, description="each reply is a draft a person approves, edits or denies"
    )
    max_denials: Annotated[int, between(0, 20, "an integer"), Setting()] = Field(
        3, description="denials of one turn's drafts before the turn is given up (a pass)"
    )
    retry: Annotated[RetrySettings, PlainValidator(retry_settings), Setting()] = Field(
        RetrySettings(), description="how a model call is retried: max_attempts, base_delay"
    )
    max_output_tokens: Annotated[
        int, SkipValidation, Setting(stored_default=STORED_DEFAULT_MAX_OUTPUT_TOKENS, request=True)
    ] = Field(DEFAULT_MAX_OUTPUT_TOKENS, description="at most this many tokens per reply")
    request_timeout: Annotated[float, SkipValidation, Setting(request=True)] = Field(
        DEFAULT_TIMEOUT_SECONDS,
        description="seconds one model request may take before it is abandoned and retried",
    )
    context_window: Annotated[int | None, SkipValidation, Setting(request=True)] = Field(
        None,
        description="the model's window in tokens; None: known for known models, else what a "
        "server reports, else ROOMS_CONTEXT_WINDOW, else 4096",
    )
    use_cache: Annotated[
        bool,
        flag(
            "; False asks the model every time (nothing is read from or written to the model cache)"
        ),
        Setting(request=True),
    ] = Field(True, description="answers come from (and go to) the database's model cache")
    budget: Annotated[Budget | None, PlainValidator(budget_of), Setting()] = Field(
        None, description="the spending limit: a Budget or {max_tokens, max_dollars}; None: none"
    )
    breakpoints: Annotated[JSONPart | None, Setting(omit_default=True)] = Field(
        None, description="per-agent pauses: {'before': [names], 'after': [names]}"
    )
    streaming: Annotated[
        bool,
        flag("; False shows a reply only once it is complete (no partial drafts, no stop)"),
        Setting(omit_default=True),
    ] = Field(True, description="replies stream where the model supports it; a person may stop")
    partial_writes_per_second: Annotated[
        float, between(0.5, 10, "a number of writes per second"), Setting(omit_default=True)
    ] = Field(4.0, description="at most this many partial-draft writes per second per turn")


class RoomSettings(TypedDict, total=False):
    """The keywords a room's settings are given by (``Room.create(**settings)``): the fields of
    ``RoomConfigBase`` but the roster (``agents``), as a caller may pass them."""

    planner: Any
    model: Any
    termination: Any
    prompt_template: str | None
    context: Any
    seed: int | None
    moderated: bool
    max_denials: int
    retry: RetrySettings | Mapping[str, Any] | None
    max_output_tokens: int
    request_timeout: float
    context_window: int | None
    use_cache: bool
    budget: Budget | Mapping[str, Any] | None
    breakpoints: Mapping[str, Any] | None
    streaming: bool
    partial_writes_per_second: float


def setting_of(info: FieldInfo) -> Setting:
    """The :class:`Setting` marker of a field of ``RoomConfigBase``."""
    return next(m for m in info.metadata if isinstance(m, Setting))


FIELDS: dict[str, FieldInfo] = dict(RoomConfigBase.model_fields)
#: Field name -> the keyword it is given by (``roster`` -> ``agents``).
KEYWORDS = {name: setting_of(info).keyword or name for name, info in FIELDS.items()}
#: What ``Room.update_config`` may change: every setting, by its keyword.
EDITABLE = tuple(KEYWORDS.values())
#: The model request settings a template (or any dict) may name.
REQUEST_SETTINGS = tuple(name for name, info in FIELDS.items() if setting_of(info).request)
#: The fields a stored config leaves out at their default.
OMITTED_AT_DEFAULT = frozenset(n for n, i in FIELDS.items() if setting_of(i).omit_default)
#: A stored config's missing field -> its value (configs stored before the setting existed).
STORED_DEFAULTS = {
    name: info.default
    if setting_of(info).stored_default is _UNSET
    else setting_of(info).stored_default
    for name, info in FIELDS.items()
    if not info.is_required()
}


def setting_default(name: str) -> Any:
    """The default of the setting ``name`` (a field or its keyword) for a new room."""
    field = next((f for f, k in KEYWORDS.items() if name in (f, k)), None)
    if field is None or FIELDS[field].is_required():
        raise ConversationValueError(f"{name!r} is not a room setting with a default")
    return FIELDS[field].get_default(call_default_factory=True)


def request_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    """The model request settings a template (or any dict) names, for ``Room.create``."""
    return {key: data[key] for key in REQUEST_SETTINGS if data.get(key) is not None}


class _StoredShape(DoorModel):
    """The stored document's version, checked first."""

    @model_validator(mode="before")
    @classmethod
    def _version_first(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("version", CONFIG_VERSION) != CONFIG_VERSION:
            raise Problem(
                f"has unknown version {_clip(data.get('version'))}; this library reads version "
                f"{CONFIG_VERSION}"
            )
        return data


#: A stored room config document (``RoomConfig.to_dict``): its version, the known fields, a
#: roster list and a model spec object; every other part is checked by ``RoomConfig``.
_STORED_FIELDS: dict[str, Any] = {
    "version": (Any, CONFIG_VERSION),
    "roster": (list[Any], ...),
    "planner": (dict[str, Any] | None, None),
    "model": (dict[str, Any], ...),
}
_STORED_FIELDS.update(
    {
        name: (Any, STORED_DEFAULTS[name])
        for name in FIELDS
        if name in STORED_DEFAULTS and name not in _STORED_FIELDS
    }
)
StoredRoomConfig = create_model("StoredRoomConfig", __base__=_StoredShape, **_STORED_FIELDS)


def config_place(loc: Loc) -> str:
    """``("roster",)`` -> ``room config roster``."""
    return " ".join(["room config", *map(str, loc)])


def settings_place(loc: Loc) -> str:
    """``("use_cache",)`` -> ``use_cache``; ``("retry", "max_attempts")`` -> ``retry
    max_attempts``; a check of the whole config names its fields itself."""
    return " ".join(map(str, loc))


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _same_names() -> None:
    """``RoomSettings`` names exactly the settings (a developer's mistake, found at import)."""
    declared, derived = set(RoomSettings.__annotations__), set(EDITABLE) - {"agents"}
    if declared != derived:
        raise TypeError(
            f"RoomSettings and RoomConfigBase name other settings: {sorted(declared ^ derived)}; "
            "declare a setting in RoomConfigBase and give RoomSettings its keyword"
        )


_same_names()

__all__ = [
    "CONFIG_VERSION",
    "EDITABLE",
    "MAX_SEED",
    "REQUEST_SETTINGS",
    "RetryIn",
    "RetrySettings",
    "RoomConfigBase",
    "RoomSettings",
    "Setting",
    "StoredRoomConfig",
    "between",
    "budget_of",
    "config_place",
    "flag",
    "request_settings",
    "retry_settings",
    "setting_default",
]
