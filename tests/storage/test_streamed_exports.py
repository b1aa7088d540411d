"""Streamed exports of many rooms (``browse.stream_events``, ``analysis.stream_edsl_results``):
the same text as the whole-table exports, produced in bounded pieces (never the whole table in
one frame or one ``Results``), on both backends."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pandas as pd
import pytest

import storage
from conversation import analysis, browse
from conversation.browse import streamed
from storage import Database
from storage.research import frames
from tests.support.room_logs import room_config, room_log


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    yield database
    database.dispose()


@pytest.fixture
def rooms(db: Database) -> list[int]:
    """Four rooms of 1, 7, 2 and 5 events (a pass and a failed turn left out)."""
    config = room_config()
    return [
        storage.create_room_with_log(db, f"room {n}", config, room_log(n), status="terminated")[0]
        for n in (1, 7, 2, 5)
    ]


def test_room_ids_lists_ids_only_with_the_room_filters(db: Database, rooms: list[int]) -> None:
    assert storage.room_ids(db) == sorted(rooms)
    assert browse.room_ids(db, sort="newest") == sorted(rooms, reverse=True)
    storage.set_room_archived(db, rooms[1])
    assert browse.room_ids(db, archived=False) == sorted(rooms[:1] + rooms[2:])


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_events_stream_in_pieces_equal_to_the_whole_table(
    db: Database, rooms: list[int], fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streamed, "ROOMS_PER_PIECE", 3)
    monkeypatch.setattr(streamed, "EVENTS_PER_PIECE", 4)
    done: list[tuple[int, int]] = []
    pieces = browse.stream_events(db, rooms, fmt, progress=lambda d, t: done.append((d, t)))
    assert iter(pieces) is pieces  # a generator: nothing is read before it is asked for
    assert done == []
    text = list(pieces)
    whole = frames.events_frame(db, rooms)
    assert len(whole) == 15
    # 10 events in the first 3 rooms (windows of 4, 4, 2), then 5 (4, 1): never more than 4
    header = text[0].splitlines()[0] + "\n" if fmt == "csv" else ""
    sizes = [
        len(pd.read_csv(io.StringIO(piece if i == 0 else header + piece)))
        if fmt == "csv"
        else len(piece.splitlines())
        for i, piece in enumerate(text)
    ]
    assert sizes == [4, 4, 2, 4, 1]
    assert done == [(3, 4), (4, 4)]
    if fmt == "csv":
        assert "".join(text) == whole.to_csv(index=False)
        assert pd.read_csv(io.StringIO("".join(text)))["seq"].tolist() == whole["seq"].tolist()
    else:
        lines = [json.loads(line) for line in "".join(text).splitlines()]
        expected = whole.to_json(orient="records", lines=True, force_ascii=False, date_format="iso")
        assert lines == [json.loads(line) for line in expected.splitlines()]


def test_write_events_writes_every_piece(db: Database, rooms: list[int]) -> None:
    out = io.StringIO()
    written = browse.write_events(db, rooms, out, "csv")
    assert written == len(out.getvalue())
    assert out.getvalue() == frames.events_frame(db, rooms).to_csv(index=False)


def test_edsl_results_stream_room_by_room_as_the_whole_results(
    db: Database, rooms: list[int]
) -> None:
    from edsl import Results

    done: list[tuple[int, int]] = []
    pieces = analysis.stream_edsl_results(db, rooms, progress=lambda d, t: done.append((d, t)))
    assert iter(pieces) is pieces
    text = list(pieces)
    whole = analysis.rooms_to_results(db, rooms).to_dict()
    assert json.loads("".join(text)) == json.loads(json.dumps(whole, default=str))
    assert len(whole["data"]) == 0 + 6 + 1 + 4  # the agent messages
    assert len(text) == 2 + 11  # the opening, one piece per result, the tail
    assert done == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert len(Results.from_dict(json.loads("".join(text)))) == 11
    assert analysis.export_edsl_results(db, rooms) == "".join(text)
