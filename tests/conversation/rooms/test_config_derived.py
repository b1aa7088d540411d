"""What a worker asks of a room's config on every turn (names, call settings, the context
policy, the max turns) is computed once for a config read from storage, and never goes stale:
a setting the window depends on is read again, and a config built in code is read afresh."""

from __future__ import annotations

import pytest

from conversation.models.settings import CONTEXT_WINDOW_ENV
from conversation.rooms.config import RoomConfig

STORED = {
    "version": 1,
    "roster": [{"name": "Ann"}, {"name": "Bo"}],
    "planner": {"kind": "round_robin"},
    "model": {"service": "test", "model": "test"},
    "termination": {"kind": "max_turns", "max_turns": 6},
}


def stored(**changes: object) -> RoomConfig:
    return RoomConfig.from_dict({**STORED, **changes})


def test_a_stored_config_gives_the_same_settings_and_policy_each_turn() -> None:
    config = stored()
    assert config.call_settings("Ann") is config.call_settings("Ann")
    assert config.call_settings("Ann") != config.call_settings("Bo")
    assert config.call_settings("Bo").speakers == ("Bo",)
    assert config.context_policy() is config.context_policy()
    assert config.max_turns() == 6
    assert config.names == ("Ann", "Bo")


def test_a_window_from_the_setting_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-hosted model's window comes from ``ROOMS_CONTEXT_WINDOW`` (no server reports
    one here): changing the setting changes the next turn's window."""
    spec = {"service": "ollama", "model": "no-such-model", "base_url": "http://127.0.0.1:9"}
    monkeypatch.setenv(CONTEXT_WINDOW_ENV, "9000")
    config = stored(model=spec)
    assert config.call_settings("Ann").context_window == 9000
    monkeypatch.setenv(CONTEXT_WINDOW_ENV, "5000")
    assert config.call_settings("Ann").context_window == 5000


def test_a_config_built_in_code_is_read_afresh() -> None:
    """Its dicts are the caller's (not frozen): a change shows at once."""
    termination = {"kind": "max_turns", "max_turns": 6}
    config = RoomConfig.build(agents=[{"name": "Ann"}], termination=termination)
    assert config.max_turns() == 6
    termination["max_turns"] = 4
    assert config.max_turns() == 4
