"""The shapes of a room's configuration at the door, declared once.

- ``StoredRoomConfig``: the JSON document a room stores (``rooms.config``) and an export
  carries: its version, its known fields, a roster list and a model spec object. What each part
  means (a planner that restores, a template that renders, ...) is checked by ``RoomConfig``
  itself, once, for a stored config and a new room alike.
- ``RoomSettingsIn``: a room's scalar settings (seed, moderated, use_cache, max_denials,
  streaming and its partial-write rate).
- ``RetryIn``: how a room retries a model call.

A refusal is a ``ConversationValueError`` naming the field (``room config roster``, ``seed``,
``retry max_attempts``) and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, model_validator

from conversation.models.settings import (
    DEFAULT_TIMEOUT_SECONDS,
    STORED_DEFAULT_MAX_OUTPUT_TOKENS,
)
from conversation.text.schema import DoorModel, Loc, Problem

CONFIG_VERSION = 1
#: How often a streaming turn's partial draft is written at most (writes per second, per turn).
DEFAULT_PARTIAL_WRITES = 4.0
#: Seeds are stored as JSON numbers and fed to ``random.Random``: 64 bits are plenty.
MAX_SEED = 2**63


def between(low: float, high: float, what: str) -> AfterValidator:
    """A number from ``low`` to ``high`` (inclusive), else ``must be <what> from .. to ..``."""

    def check(value: Any) -> Any:
        if not low <= value <= high:
            raise Problem(f"must be {what} from {low} to {high}, got {value!r}")
        return value

    return AfterValidator(check)


def _seed(value: int) -> int:
    if not -MAX_SEED < value < MAX_SEED:
        raise Problem(f"must be an integer of at most 63 bits, got {_clip(value)}")
    return value


def flag(fix: str = "") -> AfterValidator:
    """True or False (not 1, not "yes"), else ``must be True or False, got ..`` and ``fix``."""

    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise Problem(f"must be True or False, got {_clip(value)}{fix}")
        return value

    return AfterValidator(check)


class RoomSettingsIn(DoorModel):
    """A room's scalar settings, each with its own rule."""

    seed: Annotated[int, AfterValidator(_seed)] = 0
    moderated: Annotated[Any, flag()] = False
    use_cache: Annotated[
        Any,
        flag(
            "; False asks the model every time (nothing is read from or written to the model cache)"
        ),
    ] = True
    max_denials: Annotated[int, between(0, 20, "an integer")] = 3
    streaming: Annotated[
        Any,
        flag("; False shows a reply only once it is complete (no partial drafts, no stop)"),
    ] = True
    partial_writes_per_second: Annotated[
        float, between(0.5, 10, "a number of writes per second")
    ] = DEFAULT_PARTIAL_WRITES


def settings_place(loc: Loc) -> str:
    """``("use_cache",)`` -> ``use_cache``."""
    return " ".join(map(str, loc)) or "the room's settings"


class RetryIn(DoorModel):
    """``{"max_attempts": 4, "base_delay": 1.0}``: attempts in all, the first backoff delay."""

    unknown_noun: ClassVar[str] = "key"

    max_attempts: Annotated[int, between(1, 20, "an integer")] = 4
    base_delay: Annotated[float, between(0, 60, "a number of seconds")] = 1.0


def retry_place(loc: Loc) -> str:
    return " ".join(["retry", *map(str, loc)])


class StoredRoomConfig(DoorModel):
    """A stored room config document (``RoomConfig.to_dict``); configs stored before a setting
    existed get its default."""

    version: Any = CONFIG_VERSION
    roster: list[Any]
    planner: dict[str, Any] | None = None
    model: dict[str, Any]
    termination: Any = None
    prompt_template: Any = None
    context: Any = None
    seed: Any = 0
    moderated: Any = False
    max_denials: Any = 3
    retry: Any = None
    max_output_tokens: Any = STORED_DEFAULT_MAX_OUTPUT_TOKENS  # a config from before it changed
    request_timeout: Any = DEFAULT_TIMEOUT_SECONDS
    context_window: Any = None
    use_cache: Any = True
    budget: Any = None
    breakpoints: Any = None
    streaming: Any = True
    partial_writes_per_second: Any = DEFAULT_PARTIAL_WRITES

    @model_validator(mode="before")
    @classmethod
    def _version_first(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("version", CONFIG_VERSION) != CONFIG_VERSION:
            raise Problem(
                f"has unknown version {_clip(data.get('version'))}; this library reads version "
                f"{CONFIG_VERSION}"
            )
        return data


def config_place(loc: Loc) -> str:
    """``("roster",)`` -> ``room config roster``."""
    return " ".join(["room config", *map(str, loc)])


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = [
    "CONFIG_VERSION",
    "DEFAULT_PARTIAL_WRITES",
    "MAX_SEED",
    "RetryIn",
    "RoomSettingsIn",
    "StoredRoomConfig",
    "between",
    "flag",
    "config_place",
    "retry_place",
    "settings_place",
]
