"""Every export carries the same provenance columns with the same values: the room CSV and the
Results events CSV (``frames.events_frame``), the JSON export and the EDSL Results export."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from edsl import Agent, AgentList

from conversation import Room
from storage import PROVENANCE_COLUMNS, Database, provenance_row
from storage.research import frames
from tests.support.provenance_room import studied_room
from ui.results import tables

TIMES = ("created_at", "updated_at")


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


def _csv_rows(text: str) -> list[dict[str, Any]]:
    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    return frame.to_dict("records")


def _norm(column: str, value: Any) -> Any:
    """A value as a CSV cell reads back: text; times as instants."""
    if value is None or value == "":
        return ""
    if column in TIMES:
        return pd.Timestamp(value)
    return str(value)


def _normed(row: dict[str, Any]) -> dict[str, Any]:
    return {c: _norm(c, row[c]) for c in PROVENANCE_COLUMNS}


def test_all_four_exports_carry_the_same_provenance_columns_and_values(db: Database) -> None:
    room = studied_room(db)
    expected = [provenance_row(e) for e in room.events()]

    room_csv = _csv_rows(frames.events_frame(db, room.id).to_csv(index=False))
    results_csv = _csv_rows(frames.events_frame(db, [room.id]).to_csv(index=False))
    exported = json.loads(tables.export_json(db, [room.id]))["rooms"][0]
    json_rows = [e["provenance"] for e in exported["events"]]
    edsl = json.loads(tables.export_edsl_results(db, [room.id]))
    edsl_rows = [r["scenario"] for r in edsl["data"]]

    for rows in (room_csv, results_csv, json_rows, edsl_rows):
        assert rows and all(set(PROVENANCE_COLUMNS) <= set(row) for row in rows)
    assert list(json_rows[0]) == PROVENANCE_COLUMNS  # exactly the shared columns, in order
    want = [_normed(r) for r in expected]
    assert [_normed(r) for r in room_csv] == want
    assert [_normed(r) for r in results_csv] == want
    assert [_normed(r) for r in json_rows] == want
    by_seq = {r["seq"]: r for r in want}
    assert edsl_rows and all(_normed(r) == by_seq[str(r["seq"])] for r in edsl_rows)

    # And the values say what happened.
    private, person = expected[0], expected[1]
    assert json.loads(private["private_to"]) == ["Bob"] and private["actor"] == "ann"
    assert person["kind"] == "human" and person["private_to"] is None
    pick = expected[2]
    assert pick["speaker"] == "Alice" and pick["picked_by"] == "Alice"
    bob = next(r for r in expected if r["speaker"] == "Bob")
    assert bob["edited_from"] == "a draft, attempt 2" and bob["edited_by"] == "mod"
    assert json.loads(bob["denied_drafts"]) == ["a draft, attempt 1"]
    assert json.loads(bob["denial_reasons"]) == ["too long"]
    assert bob["actor"] == "mod"
    assert [d["verb"] for d in json.loads(bob["decisions"])] == ["deny", "edit"]
    cara = next(r for r in expected if r["speaker"] == "Cara")
    assert cara["kind"] == "pass" and cara["passed"] is True
    assert bob["model"] and bob["created_at"] <= bob["updated_at"]


def test_the_events_csv_lists_each_messages_tags(db: Database) -> None:
    from conversation.analysis import coding

    room = Room.create(db, name="tagged", agents=AgentList([Agent(name="Bob")]))
    room.post("hello", speaker="ann")
    coding.add_label(db, "greeting", room_id=room.id)
    coding.add_label(db, "polite", room_id=room.id)
    [event] = room.events()
    coding.tag_message(db, event.id, "greeting", by="coder1")
    coding.tag_message(db, event.id, "polite", by="coder2")
    coding.tag_message(db, event.id, "greeting", by="coder2")
    frame = frames.events_frame(db, room.id)
    assert json.loads(frame.iloc[0]["tags"]) == ["greeting", "polite"]


def test_charts_may_skip_the_provenance_but_keep_the_columns(db: Database) -> None:
    room = studied_room(db)
    full = frames.events_frame(db, room.id)
    lean = frames.events_frame(db, room.id, provenance=False)
    assert list(lean.columns) == list(full.columns) == frames.EVENT_COLUMNS
    assert lean[["seq", "kind", "speaker", "content", "cost"]].equals(
        full[["seq", "kind", "speaker", "content", "cost"]]
    )
    assert full["decisions"].notna().any() and lean["decisions"].isna().all()
