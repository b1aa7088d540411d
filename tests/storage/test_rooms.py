"""Rooms: CRUD, optimistic and fenced status changes, cascading delete, forks."""

from __future__ import annotations

import pytest

import storage
from storage import Database, RoomNotFound, StorageValueError

CONFIG = {
    "roster": [{"name": "Alice", "traits": {"persona": "buyer"}}, {"name": "Bob"}],
    "planner": {"type": "round_robin_room", "max_rounds": 3, "max_messages": 20},
    "termination": None,
    "prompt_template": "You are {{ name }}.",
    "context_policy": {"window": 10},
    "model": {"service": "offline", "model": "test", "api_key_env": "OPENAI_API_KEY"},
    "seed": 7,
    "moderated": True,
}


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


def test_create_and_get(db: Database) -> None:
    room_id = storage.create_room(db, "Negotiation", CONFIG, condition="A", replicate=2)
    room = storage.get_room(db, room_id)
    assert (room.name, room.status, room.config) == ("Negotiation", "idle", CONFIG)
    assert (room.condition, room.replicate, room.stop_reason) == ("A", 2, None)
    with pytest.raises(RoomNotFound):
        storage.get_room(db, 999)


def test_list_and_count_with_filters_and_paging(db: Database) -> None:
    experiment = storage.create_experiment(db, "exp")
    ids = [
        storage.create_room(
            db, f"r{i}", status="running" if i % 2 else "idle", experiment_id=experiment
        )
        for i in range(5)
    ]
    lonely = storage.create_room(db, "lonely")
    assert [r.id for r in storage.list_rooms(db)] == [lonely, *reversed(ids)]
    assert [r.id for r in storage.list_rooms(db, status="running")] == [ids[3], ids[1]]
    assert len(storage.list_rooms(db, status=["running", "idle"], experiment_id=experiment)) == 5
    assert [r.id for r in storage.list_rooms(db, limit=2, offset=1)] == [ids[4], ids[3]]
    assert storage.count_rooms(db) == 6
    assert storage.count_rooms(db, status="idle", experiment_id=experiment) == 3
    with pytest.raises(StorageValueError, match="limit"):
        storage.list_rooms(db, limit=-1)


def test_update_room_fields(db: Database) -> None:
    room_id = storage.create_room(db, "r", CONFIG)
    updated = storage.update_room(
        db, room_id, status="terminated", stop_reason="'DEAL' mentioned by Bob", name="renamed"
    )
    assert updated.status == "terminated" and updated.stop_reason == "'DEAL' mentioned by Bob"
    assert storage.get_room(db, room_id) == updated
    assert storage.update_room(db, room_id, config={"seed": 1}).config == {"seed": 1}
    with pytest.raises(StorageValueError, match="status='sleepy'"):
        storage.update_room(db, room_id, status="sleepy")
    with pytest.raises(RoomNotFound):
        storage.update_room(db, 999, status="idle")


def test_update_room_with_expected_status_applies_once(db: Database) -> None:
    room_id = storage.create_room(db, "r", status="paused")
    assert storage.update_room(db, room_id, status="running", expected_status="paused")
    assert storage.update_room(db, room_id, status="running", expected_status="paused") is None


def test_update_room_fenced_by_a_lease(db: Database) -> None:
    room_id = storage.create_room(db, "r", status="running")
    token = storage.acquire_lease(db, room_id, "w1", 30)
    storage.release_lease(db, room_id, "w1", token)
    storage.acquire_lease(db, room_id, "w2", 30)
    assert storage.update_room(db, room_id, status="settled", token=token) is None
    assert storage.get_room(db, room_id).status == "running"


def test_delete_room_cascades(db: Database) -> None:
    room_id = storage.create_room(db, "r", status="running")
    storage.append_message(db, room_id, "human", "u", "hello")
    token = storage.acquire_lease(db, room_id, "w", 30)
    analysis = storage.create_analysis(db, "q", {"text": "?"})
    storage.record_answer(db, analysis, room_id, "yes")
    with pytest.raises(storage.RecordInUse, match="stop it first"):
        storage.delete_room(db, room_id)  # a worker holds it: no orphan lease, nothing deleted
    assert len(storage.events(db, room_id)) == 1
    assert storage.release_lease(db, room_id, "w", token)
    assert storage.delete_room(db, room_id)
    assert not storage.delete_room(db, room_id)
    assert storage.events(db, room_id) == []
    assert storage.get_lease(db, room_id) is None
    assert storage.answers(db, analysis) == []


def test_fork_copies_the_log_up_to_seq(db: Database) -> None:
    source = storage.create_room(db, "source", CONFIG, status="running")
    storage.append_message(db, source, "human", "u", "start", request_id="h1")
    token = storage.acquire_lease(db, source, "w", 30)
    turn = storage.claim_turn(
        db,
        source,
        token=token,
        expected_last_seq=1,
        speaker="Alice",
        request_id="t2",
        activity=1,
        round=0,
        saw=[1],
        parent_event_id=1,
    )
    storage.commit_turn(db, turn.id, token, content="reply", input_tokens=5)
    storage.append_message(db, source, "agent", "Bob", "later", parent_event_id=turn.id)
    storage.append_message(db, source, "human", "u", "not copied")

    fork = storage.fork_room(db, source, 3)
    room = storage.get_room(db, fork)
    assert (room.parent_room_id, room.parent_seq, room.status) == (source, 3, "idle")
    assert room.config == CONFIG and room.name == "source (fork at 3)"
    copied = storage.events(db, fork)
    original = storage.events(db, source)[:3]
    fields = ("seq", "kind", "speaker", "content", "state", "request_id", "saw", "input_tokens")
    assert [[getattr(e, f) for f in fields] for e in copied] == [
        [getattr(e, f) for f in fields] for e in original
    ]
    assert all(e.room_id == fork for e in copied)
    assert {e.id for e in copied}.isdisjoint({e.id for e in original})
    # parent links point at the fork's own copies
    assert copied[1].parent_event_id == copied[0].id
    assert copied[2].parent_event_id == copied[1].id
    # the fork continues on its own; the source is unchanged
    assert storage.append_message(db, fork, "human", "u", "another way").seq == 4
    assert storage.latest_seq(db, source) == 4
    assert storage.find_event(db, fork, "t2").seq == 2


def test_fork_bounds_and_names(db: Database) -> None:
    source = storage.create_room(db, "source")
    storage.append_message(db, source, "human", "u", "one")
    empty = storage.fork_room(db, source, 0, name="blank start")
    assert storage.events(db, empty) == [] and storage.get_room(db, empty).name == "blank start"
    with pytest.raises(StorageValueError, match="beyond"):
        storage.fork_room(db, source, 2)
    with pytest.raises(StorageValueError, match="at_seq"):
        storage.fork_room(db, source, -1)
    with pytest.raises(RoomNotFound):
        storage.fork_room(db, 999, 0)


def test_fork_of_a_deleted_parent_keeps_its_events(db: Database) -> None:
    source = storage.create_room(db, "source")
    storage.append_message(db, source, "human", "u", "one")
    fork = storage.fork_room(db, source, 1)
    storage.delete_room(db, source)
    assert storage.get_room(db, fork).parent_room_id is None
    assert [e.content for e in storage.events(db, fork)] == ["one"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "non-empty"),
        (" padded ", "leading or trailing"),
        ("a\nb", "control"),
        ("x" * 201, "limit"),
    ],
)
def test_room_names_are_validated(db: Database, name: str, message: str) -> None:
    with pytest.raises(StorageValueError, match=message):
        storage.create_room(db, name)
    assert storage.count_rooms(db) == 0
