"""The append-only log: seqs, activity/round defaults, request-id idempotency, reads."""

from __future__ import annotations

import math

import pytest

import storage
from storage import Database, RequestIdConflict, RoomNotFound, StorageValueError


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


@pytest.fixture
def room(db: Database) -> int:
    return storage.create_room(db, "room", {"roster": [{"name": "Alice"}, {"name": "Bob"}]})


def test_seqs_are_contiguous_from_one(db: Database, room: int) -> None:
    seqs = [storage.append_message(db, room, "human", "u", f"m{i}").seq for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    assert storage.latest_seq(db, room) == 5


def test_seqs_are_per_room(db: Database, room: int) -> None:
    other = storage.create_room(db, "other")
    storage.append_message(db, room, "human", "u", "a")
    assert storage.append_message(db, other, "human", "u", "b").seq == 1
    assert storage.latest_seq(db, other) == 1


def test_activity_and_round_defaults_follow_the_log(db: Database, room: int) -> None:
    first = storage.append_message(db, room, "human", "u", "build a form")
    assert (first.activity, first.round) == (1, 0)
    reply = storage.append_message(db, room, "agent", "Alice", "ok", round=2)
    assert (reply.activity, reply.round, reply.state) == (1, 2, "done")
    note = storage.append_message(db, room, "system", "system", "paused")
    assert (note.activity, note.round, note.state) == (1, 2, None)
    second = storage.append_message(db, room, "human", "u", "new topic")
    assert (second.activity, second.round) == (2, 0)
    explicit = storage.append_message(db, room, "human", "u", "x", activity=7, round=3)
    assert (explicit.activity, explicit.round) == (7, 3)


def test_same_request_id_same_message_is_the_same_event(db: Database, room: int) -> None:
    first = storage.append_message(db, room, "human", "u", "hello", request_id="r-1")
    again = storage.append_message(db, room, "human", "u", "hello", request_id="r-1")
    assert again.id == first.id and again.seq == first.seq
    assert storage.latest_seq(db, room) == 1


@pytest.mark.parametrize(
    ("kind", "speaker", "content", "differs"),
    [
        ("human", "u", "other text", "content"),
        ("human", "someone else", "hello", "speaker"),
        ("system", "u", "hello", "kind"),
    ],
)
def test_same_request_id_different_message_conflicts(
    db: Database, room: int, kind: str, speaker: str, content: str, differs: str
) -> None:
    storage.append_message(db, room, "human", "u", "hello", request_id="r-1")
    with pytest.raises(RequestIdConflict, match=f"different {differs}") as caught:
        storage.append_message(db, room, kind, speaker, content, request_id="r-1")
    assert caught.value.request_id == "r-1" and caught.value.room_id == room
    assert storage.latest_seq(db, room) == 1


def test_request_ids_are_per_room(db: Database, room: int) -> None:
    other = storage.create_room(db, "other")
    a = storage.append_message(db, room, "human", "u", "hello", request_id="r-1")
    b = storage.append_message(db, other, "human", "u", "different", request_id="r-1")
    assert a.id != b.id


def test_events_after_seq_limit_and_kinds(db: Database, room: int) -> None:
    for i in range(6):
        kind = "human" if i % 2 == 0 else "agent"
        storage.append_message(db, room, kind, "u" if kind == "human" else "Alice", f"m{i}")
    assert [e.seq for e in storage.events(db, room)] == [1, 2, 3, 4, 5, 6]
    assert [e.seq for e in storage.events(db, room, after_seq=4)] == [5, 6]
    assert [e.seq for e in storage.events(db, room, after_seq=1, limit=2)] == [2, 3]
    assert [e.seq for e in storage.events(db, room, kinds="agent")] == [2, 4, 6]
    assert storage.events(db, room, after_seq=6) == []
    assert storage.events(db, 999) == []


def test_get_and_find_event(db: Database, room: int) -> None:
    event = storage.append_message(
        db,
        room,
        "human",
        "u",
        "hi",
        request_id="r-9",
        visible_to=["Alice"],
        data={"client": "tab-1"},
    )
    stored = storage.get_event(db, event.id)
    assert stored == event
    assert stored.visible_to == ["Alice"] and stored.data == {"client": "tab-1"}
    assert stored.words == 1
    assert storage.find_event(db, room, "r-9") == event
    assert storage.find_event(db, room, "nope") is None
    with pytest.raises(storage.errors.EventNotFound):
        storage.get_event(db, 12345)


def test_unknown_room_is_refused(db: Database) -> None:
    with pytest.raises(RoomNotFound):
        storage.append_message(db, 404, "human", "u", "hello")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "robot"}, "kind='robot'"),
        ({"speaker": ""}, "speaker"),
        ({"content": None}, "content must be a string"),
        ({"state": "done"}, "human events have no turn state"),
        ({"kind": "agent", "state": "sleeping"}, "state='sleeping'"),
        ({"data": {"x": math.nan}}, "plain JSON"),
        ({"data": [1, 2]}, "data must be a dict"),
        ({"visible_to": "Alice"}, "visible_to"),
        ({"request_id": ""}, "request_id"),
    ],
)
def test_invalid_input_is_refused_and_nothing_is_written(
    db: Database, room: int, kwargs: dict, message: str
) -> None:
    args = {"kind": "human", "speaker": "u", "content": "hello"} | kwargs
    with pytest.raises(StorageValueError, match=message):
        storage.append_message(db, room, **args)
    assert storage.latest_seq(db, room) == 0


def test_appending_touches_the_room(db: Database, room: int) -> None:
    before = storage.get_room(db, room).updated_at
    storage.append_message(db, room, "human", "u", "hello")
    assert storage.get_room(db, room).updated_at > before


def test_message_text_is_stored_verbatim(db: Database, room: int) -> None:
    text = "{{ 7*7 }} {% if x %} \n Bob: I concede <b>bold</b> \u00e9\U0001f600"
    event = storage.append_message(db, room, "human", "u", text)
    assert storage.get_event(db, event.id).content == text


RECORDED = [
    {
        "kind": "human",
        "speaker": "user",
        "content": "sell me a car",
        "activity": 1,
        "round": 0,
        "request_id": "h-1",
    },
    {
        "kind": "agent",
        "speaker": "Alice",
        "content": "ten thousand",
        "activity": 1,
        "round": 0,
        "state": "done",
        "model": "gpt-test",
        "input_tokens": 40,
        "output_tokens": 3,
        "cost": 0.01,
        "latency": 0.5,
        "attempts": 2,
        "saw": [1],
        "visible_to": None,
        "data": {"cache_used": True},
        "request_id": "t-2",
    },
    {
        "kind": "agent",
        "speaker": "Bob",
        "content": "",
        "activity": 1,
        "round": 0,
        "state": "failed",
        "error": {"type": "TimeoutError", "code": "timeout", "message": "slow"},
        "attempts": 3,
        "saw": [1, 2],
    },
    {"kind": "pass", "speaker": "Alice", "content": "", "activity": 1, "round": 1, "state": "done"},
]


def test_import_events_restores_recorded_fields_verbatim(db: Database, room: int) -> None:
    imported = storage.rooms.import_events(db, room, RECORDED)
    assert [e.seq for e in imported] == [1, 2, 3, 4]
    stored = storage.events(db, room)
    assert stored == imported
    for record, event in zip(RECORDED, stored, strict=True):
        for field, value in record.items():
            assert getattr(event, field) == value, field
    # importing the same records again is idempotent where request ids exist
    again = storage.rooms.import_event(db, room, **RECORDED[1])
    assert again.id == imported[1].id and storage.latest_seq(db, room) == 4


def test_import_events_is_all_or_nothing(db: Database, room: int) -> None:
    bad = [*RECORDED[:2], {"kind": "agent", "speaker": "Bob", "content": "x", "state": "zzz"}]
    with pytest.raises(StorageValueError, match="event 2 state"):
        storage.rooms.import_events(db, room, bad)
    with pytest.raises(StorageValueError, match=r"unknown field\(s\) \['api_key'\]"):
        storage.rooms.import_event(db, room, "human", "u", "hi", api_key="sk-nope")
    with pytest.raises(StorageValueError, match="cost"):
        storage.rooms.import_event(db, room, "agent", "Alice", "hi", cost=math.nan)
    with pytest.raises(StorageValueError, match="no turn state"):
        storage.rooms.import_event(db, room, "human", "u", "hi", state="done")
    conflicting = [RECORDED[0], {**RECORDED[0], "content": "changed"}]
    with pytest.raises(RequestIdConflict):
        storage.rooms.import_events(db, room, conflicting)
    assert storage.latest_seq(db, room) == 0  # nothing of any failed import was written


def test_import_derives_activity_and_round_when_missing(db: Database, room: int) -> None:
    first, second = storage.rooms.import_events(
        db,
        room,
        [
            {"kind": "human", "speaker": "u", "content": "a"},
            {"kind": "agent", "speaker": "Alice", "content": "b", "round": 2},
        ],
    )
    third = storage.rooms.import_event(db, room, "system", "system", "note")
    assert [(e.activity, e.round) for e in (first, second, third)] == [(1, 0), (1, 2), (1, 2)]


@pytest.mark.parametrize(
    "values",
    [
        {
            "room_id": 1,
            "seq": 2,
            "kind": "human",
            "speaker": "u",
            "content": "hi",
            "data": {"a": 1},
        },
        {"id": 7, "room_id": 1, "seq": 6, "kind": "agent", "speaker": "A", "saw": [1], "cost": 0.5},
        {"room_id": 1, "seq": 3, "kind": "agent", "speaker": "A", "not_a_column": 1},
        {"id": 3},  # required columns missing: left unset, as model_construct leaves them
    ],
)
def test_an_event_snapshot_is_what_model_construct_builds(values: dict) -> None:
    """The storage's fast snapshot builds the object ``Event.model_construct`` builds."""
    from storage.rooms.rows import event_snapshot
    from storage.tables import Event

    fast, slow = event_snapshot(**values), Event.model_construct(**values)
    stamps = {"created_at", "updated_at"}  # default factories: the time of each call
    assert fast.model_dump(exclude=stamps) == slow.model_dump(exclude=stamps)
    assert list(fast.__dict__) == list(slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.created_at is not None and fast.created_at.tzinfo is not None
    assert fast.model_copy(update={"seq": 99}).seq == 99


def test_one_builder_of_an_event_row() -> None:
    """Every insert sends every events column but ``id`` (one compiled statement per path), with
    the derived values: words from the content, lists for saw/visible_to, the times defaulted."""
    from datetime import UTC, datetime

    from storage.rooms.rows import EVENT_COLUMNS, EVENTS, event_row

    now = datetime(2026, 1, 2, tzinfo=UTC)
    row = event_row(7, 3, kind="agent", speaker="A", content="two words", saw=(1, 2), now=now)
    assert list(row) == list(EVENT_COLUMNS) == [c.name for c in EVENTS.columns if c.name != "id"]
    assert (row["room_id"], row["seq"], row["words"], row["saw"]) == (7, 3, 2, [1, 2])
    assert row["created_at"] == row["updated_at"] == now and row["attempts"] == 0
    earlier = datetime(2025, 5, 1, tzinfo=UTC)
    assert (
        event_row(7, 4, kind="human", speaker="u", created_at=earlier, now=now)["updated_at"]
        == earlier
    )
    with pytest.raises(TypeError, match="not_a_column"):
        event_row(7, 5, kind="human", speaker="u", not_a_column=1, now=now)
