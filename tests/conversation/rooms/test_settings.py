"""A room's settings are declared once (``RoomConfigBase``): ``Room.create``'s keywords, the
editable list, the defaults (of a new room, of an older stored config, of the forms) and the
stored document all follow that one declaration."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import ValidationError

from conversation.exceptions import ConversationValueError
from conversation.models.settings import STORED_DEFAULT_MAX_OUTPUT_TOKENS
from conversation.rooms.config import (
    EDITABLE,
    REQUEST_SETTINGS,
    RoomConfig,
    RoomSettings,
    setting_default,
)
from conversation.rooms.config.frozen import FrozenDict
from conversation.rooms.config.settings import FIELDS, setting_of
from conversation.rooms.editing import build_arguments
from conversation.rooms.room import Room
from conversation.termination.budget import Budget
from storage import Database

AGENTS = [{"name": "Ann"}, {"name": "Bo"}]
SETTINGS = [name for name in FIELDS if name != "roster"]

#: A value other than the default for each setting (a new setting must be given one here).
CHANGED: dict[str, Any] = {
    "planner": {"kind": "round_robin_room", "max_rounds": 2, "max_messages": 9},
    "model": {"service": "test", "model": "test", "parameters": {}},
    "termination": {"kind": "max_turns", "max_turns": 5},
    "prompt_template": "{{ speaker_name }}: say something",
    "context": {"max_messages": 4},
    "seed": 7,
    "moderated": True,
    "max_denials": 5,
    "retry": {"max_attempts": 2, "base_delay": 0.5},
    "max_output_tokens": 300,
    "request_timeout": 30.0,
    "context_window": 8000,
    "use_cache": False,
    "budget": {"max_tokens": 1000, "max_dollars": None},
    "breakpoints": {"before": ["Bo"], "after": []},
    "streaming": False,
    "partial_writes_per_second": 2.0,
}


def stored(config: RoomConfig) -> dict[str, Any]:
    return config.to_dict()


def test_the_keywords_are_the_declared_settings() -> None:
    """``Room.create(**settings: Unpack[RoomSettings])``: RoomSettings names every setting of
    the declaration but the roster (given as ``agents``), in the declared order."""
    assert list(RoomSettings.__annotations__) == SETTINGS
    hints = typing.get_type_hints(RoomConfig.build, include_extras=True)
    assert "settings" in hints and "RoomSettings" in repr(hints["settings"])
    assert set(CHANGED) == set(SETTINGS), "give each new setting a changed value in CHANGED"


def test_every_setting_has_a_doc_and_a_marker() -> None:
    for name, info in FIELDS.items():
        assert info.description, f"{name} has no one-line doc"
        assert setting_of(info) is not None


def test_room_create_takes_every_setting_and_stores_it(db: Database) -> None:
    room = Room.create(db, name="all set", agents=AGENTS, **CHANGED)
    data = stored(room.config)
    for name, value in CHANGED.items():
        assert data[name] == value, name


def test_an_unknown_keyword_is_refused_by_name(db: Database) -> None:
    with pytest.raises(TypeError, match="max_denail"):
        Room.create(db, name="typo", agents=AGENTS, max_denail=3)  # type: ignore[call-arg]


def test_a_new_room_gets_each_declared_default() -> None:
    config = RoomConfig.build(agents=AGENTS, seed=1)
    for name in SETTINGS:
        if name in ("planner", "model", "seed"):  # made for the room (a default planner, model)
            continue
        value = getattr(config, name)
        assert value == setting_default(name), name


def test_an_older_stored_config_gets_the_stored_defaults() -> None:
    """A config stored before a setting existed reads it as the declaration says: the output
    limit of a config from before it changed is the stored default, not a new room's."""
    data = stored(RoomConfig.build(agents=AGENTS, seed=1))
    for name in ("max_output_tokens", "max_denials", "use_cache", "streaming", "retry"):
        data.pop(name, None)
    config = RoomConfig.from_dict(data)
    assert config.max_output_tokens == STORED_DEFAULT_MAX_OUTPUT_TOKENS
    assert setting_default("max_output_tokens") != STORED_DEFAULT_MAX_OUTPUT_TOKENS
    assert config.max_denials == setting_default("max_denials")
    assert config.use_cache is True and config.streaming is True


def test_settings_at_their_default_that_older_configs_lack_are_left_out() -> None:
    data = stored(RoomConfig.build(agents=AGENTS, seed=1))
    omitted = {n for n, info in FIELDS.items() if setting_of(info).omit_default}
    assert omitted == {"breakpoints", "streaming", "partial_writes_per_second"}
    assert not omitted & set(data)
    assert RoomConfig.from_dict(data).to_dict() == data


def test_the_editable_list_is_every_setting_by_its_keyword(db: Database) -> None:
    assert ("agents", *SETTINGS) == EDITABLE
    room = Room.create(db, name="edit me", agents=AGENTS, seed=1)
    room.update_config({k: v for k, v in CHANGED.items() if k != "model"})
    data = stored(room.config)
    assert all(data[k] == v for k, v in CHANGED.items() if k != "model")
    with pytest.raises(ConversationValueError, match=r"cannot change \['colour'\]"):
        room.update_config({"colour": "blue"})


def test_a_settings_change_keeps_the_budget(db: Database) -> None:
    """``build_arguments`` rebuilds every setting: a change of another one keeps the budget."""
    room = Room.create(db, name="budgeted", agents=AGENTS, budget={"max_tokens": 500})
    room.update_config({"moderated": True})
    assert room.config.budget == Budget(max_tokens=500)
    assert set(build_arguments(room.config)) == {*EDITABLE, "in_process_only"}


def test_the_request_settings_are_the_marked_ones() -> None:
    assert REQUEST_SETTINGS == (
        "max_output_tokens",
        "request_timeout",
        "context_window",
        "use_cache",
    )
    with pytest.raises(ConversationValueError, match="not a room setting"):
        setting_default("colour")


def test_a_config_is_frozen_and_a_shared_one_read_only() -> None:
    config = RoomConfig.from_dict(stored(RoomConfig.build(agents=AGENTS, seed=1)))
    with pytest.raises(ValidationError, match="frozen"):
        config.max_denials = 9  # type: ignore[misc]
    assert isinstance(config.model, FrozenDict)
    with pytest.raises(TypeError, match="read-only"):
        config.model["service"] = "other"  # type: ignore[index]
    assert config.to_dict()["model"] is not config.model  # a caller gets its own copy


def test_direct_construction_is_checked_like_build() -> None:
    config = RoomConfig.build(agents=AGENTS, seed=1)
    values = {name: getattr(config, name) for name in FIELDS}
    with pytest.raises(ConversationValueError, match="max_denials must be an integer from 0"):
        RoomConfig(**{**values, "max_denials": 99})
    assert RoomConfig(**values) == config
