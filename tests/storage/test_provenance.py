"""The provenance columns of one event (``storage.research.provenance``): where each value comes from."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from storage.research.provenance import PROVENANCE_COLUMNS, provenance_row


def event(**changes: Any) -> SimpleNamespace:
    base: dict[str, Any] = dict(
        room_id=1, seq=3, id=30, kind="agent", speaker="Cara", content="hi", round=0,
        state="done", visible_to=None,
        model="offline", input_tokens=3, output_tokens=4, cost=0.5, data=None,
        created_at="2026-01-01T00:00:00+00:00", updated_at="2026-01-01T00:00:02+00:00",
    )  # fmt: skip
    return SimpleNamespace(**(base | changes))


def test_a_plain_agent_message_has_every_column_and_no_human_act() -> None:
    row = provenance_row(event())
    assert list(row) == PROVENANCE_COLUMNS
    assert row["actor"] is None and row["passed"] is False and row["decisions"] is None
    assert (row["model"], row["input_tokens"], row["output_tokens"], row["cost"]) == (
        "offline", 3, 4, 0.5,
    )  # fmt: skip


def test_rejected_candidates_chosen_because_and_cache_hit() -> None:
    row = provenance_row(
        event(
            data={
                "candidates": [
                    {"speaker": "Bob", "text": "mine", "passed": False, "chosen": False},
                    {"speaker": "Cara", "text": "hers", "passed": False, "chosen": True},
                    {"speaker": "Dan", "text": "PASS", "passed": True, "chosen": False},
                ],
                "picked": "Cara",
                "picked_by": "ann",
                "decisions": [{"verb": "pick", "by": "ann", "at": "2026-01-01T00:00:01+00:00"}],
                "chosen_because": "picked by coordinator",
                "cache_hit": True,
            }
        )
    )
    assert json.loads(row["rejected_candidates"]) == [{"speaker": "Bob", "text": "mine"}]
    assert (row["picked_by"], row["actor"]) == ("ann", "ann")
    assert row["chosen_because"] == "picked by coordinator" and row["cache_hit"] is True
    assert row["passed"] is False


def test_who_acted_on_messages_and_system_events() -> None:
    person = provenance_row(event(kind="human", speaker="Ana", state=None, data={"by": "ana@x"}))
    assert person["actor"] == "ana@x" and person["passed"] is None
    unsigned = provenance_row(event(kind="human", speaker="Ana", state=None))
    assert unsigned["actor"] == "Ana"
    paused = provenance_row(
        event(kind="system", speaker="room", state=None, data={"event": "paused", "by": "ann"})
    )
    assert paused["actor"] == "ann"


def test_a_coordinator_that_picks_no_one_and_a_skipped_turn_are_passes() -> None:
    no_one = provenance_row(event(speaker="Alice", data={"event": "pick", "pick": None}))
    assert no_one["passed"] is True and no_one["picked_by"] == "Alice"
    skipped = provenance_row(
        event(state="stopped", data={"decisions": [{"verb": "stop", "by": "mod", "at": "x"}]})
    )
    assert skipped["passed"] is True and skipped["actor"] == "mod"
