"""A room config at the door: the stored document's shape (``StoredRoomConfig``), the room's
scalar settings and its retry settings, each refusal naming the field and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel
from conversation.rooms.config import RetrySettings, RoomConfig, retry_settings

AGENTS = [{"name": "Alice"}, {"name": "Bob"}]


def stored(**changes: Any) -> dict[str, Any]:
    return RoomConfig.build(agents=AGENTS, model=OfflineModel(), seed=1).to_dict() | changes


def test_a_stored_config_reads_back_the_same() -> None:
    config = stored()
    assert RoomConfig.from_dict(config).to_dict() == config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 2}, "room config has unknown version 2; this library reads version 1"),
        ({"api_key": "x"}, "room config has unknown field(s) ['api_key']; allowed: "),
        ({"roster": {"name": "Alice"}}, "room config roster must be a list, got a dict of 1"),
        ({"model": "offline"}, "room config model must be an object, got 'offline'"),
        ({"seed": "1"}, "seed must be a whole number, got '1'"),
        ({"seed": True}, "seed must be a whole number, got True"),
        ({"seed": 2**64}, "seed must be an integer of at most 63 bits"),
        ({"moderated": 1}, "moderated must be True or False, got 1"),
        ({"use_cache": "no"}, "use_cache must be True or False, got 'no'; False asks the model"),
        ({"max_denials": 21}, "max_denials must be an integer from 0 to 20, got 21"),
        ({"retry": {"max_attempts": 0}}, "retry max_attempts must be an integer from 1 to 20"),
        (
            {"retry": {"base_delay": 61}},
            "retry base_delay must be a number of seconds from 0 to 60",
        ),
        ({"retry": {"tries": 3}}, "retry has unknown key(s) ['tries']; allowed: "),
    ],
)
def test_a_bad_stored_config_names_the_field_and_the_fix(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConversationValueError) as caught:
        RoomConfig.from_dict(stored(**changes))
    assert str(caught.value).startswith(message)


def test_retry_settings_are_checked_however_they_are_made() -> None:
    assert retry_settings({"max_attempts": 2}) == RetrySettings(max_attempts=2, base_delay=1.0)
    with pytest.raises(ConversationValueError, match="retry base_delay must be a finite number"):
        RetrySettings(base_delay=float("inf"))
    with pytest.raises(ConversationValueError, match="retry must be a dict"):
        retry_settings([4])
