"""How often the Room page's live fragment polls (``ui.room.live.poll_seconds``): a few times a second
only while a reply streams or has just been claimed, so a room whose model does not stream (or
whose streaming is off) is not read for a draft that never comes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from ui.room.live import (
    DRAFT_SECONDS,
    FAST_SECONDS,
    SLOW_SECONDS,
    LiveCache,
    poll_seconds,
    streaming_turn,
)


def turn(age_s: float, state: str = "running") -> SimpleNamespace:
    claimed = datetime.now(UTC) - timedelta(seconds=age_s)
    return SimpleNamespace(
        seq=2,
        state=state,
        kind="agent",
        data=None,
        speaker="Alice",
        content="",
        round=0,
        visible_to=None,
        updated_at=claimed,
    )


def room(status: str = "running", **config: object) -> SimpleNamespace:
    return SimpleNamespace(status=status, config=dict(config))


def test_a_just_claimed_turn_is_polled_for_its_draft() -> None:
    assert poll_seconds(room(), turn(0.5), None) == DRAFT_SECONDS


def test_a_streaming_draft_is_polled_however_old_the_turn() -> None:
    assert poll_seconds(room(), turn(60), SimpleNamespace(text="Hel")) == DRAFT_SECONDS


def test_a_turn_with_no_draft_after_the_grace_is_polled_at_the_usual_rate() -> None:
    assert DRAFT_SECONDS < FAST_SECONDS
    assert poll_seconds(room(), turn(10), None) == FAST_SECONDS
    assert poll_seconds(room("paused"), None, None) == SLOW_SECONDS


def test_a_room_with_streaming_off_has_no_streaming_turn() -> None:
    cache = LiveCache(events={2: turn(0.1)})
    assert streaming_turn(room(), cache) is not None
    assert streaming_turn(room(streaming=False), cache) is None
