"""Managing many rooms and experiments: search, filters, sort and paging done in SQL; archive;
delete with nothing orphaned (events, leases, analysis answers) and never under a live lease."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

import storage
from storage import Database
from storage.research import frames


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


def _rooms(db: Database) -> dict[str, int]:
    made = {}
    for name in ("Alpha deal", "beta DEAL", "gamma", "100% sure_thing"):
        made[name] = storage.create_room(db, name)
    return made


def test_search_is_case_insensitive_on_name_and_condition_and_finds_ids(db: Database) -> None:
    made = _rooms(db)
    experiment = storage.create_experiment(db, "e")
    in_exp = storage.create_room(db, "other", experiment_id=experiment, condition="temp=0.7")
    assert {r.name for r in storage.list_rooms(db, search="deal")} == {"Alpha deal", "beta DEAL"}
    assert [r.id for r in storage.list_rooms(db, search="TEMP=0.7")] == [in_exp]
    assert [r.id for r in storage.list_rooms(db, search=f"#{made['gamma']}")] == [made["gamma"]]
    # LIKE wildcards in the search are literal characters.
    assert [r.name for r in storage.list_rooms(db, search="100%")] == ["100% sure_thing"]
    assert storage.list_rooms(db, search="_t") == storage.list_rooms(db, search="e_t")
    assert storage.count_rooms(db, search="deal") == 2


def test_filters_sort_and_pages_match_the_total(db: Database) -> None:
    made = _rooms(db)
    experiment = storage.create_experiment(db, "e")
    storage.create_room(db, "exp room", experiment_id=experiment)
    storage.update_room(db, made["gamma"], status="stopped")
    assert storage.count_rooms(db, in_experiment=False) == 4
    assert storage.count_rooms(db, in_experiment=True) == 1
    assert [r.name for r in storage.list_rooms(db, sort="name", in_experiment=False)] == [
        "100% sure_thing",
        "Alpha deal",
        "beta DEAL",
        "gamma",
    ]
    assert storage.list_rooms(db, sort="oldest", limit=1)[0].id == made["Alpha deal"]
    assert [r.id for r in storage.list_rooms(db, sort="recent activity", limit=1)] == [
        made["gamma"]
    ]
    page1 = frames.rooms_summary(db, sort="oldest", limit=2, offset=0)
    page2 = frames.rooms_summary(db, sort="oldest", limit=2, offset=2)
    page3 = frames.rooms_summary(db, sort="oldest", limit=2, offset=4)
    ids = [*page1["room_id"], *page2["room_id"], *page3["room_id"]]
    assert ids == sorted(ids) and len(ids) == storage.count_rooms(db) == 5
    with pytest.raises(storage.StorageValueError, match="sort"):
        storage.list_rooms(db, sort="cheapest")


def test_date_range_is_inclusive_then_exclusive(db: Database) -> None:
    made = _rooms(db)
    created = storage.get_room(db, made["gamma"]).created_at
    assert made["gamma"] in {r.id for r in storage.list_rooms(db, created_after=created)}
    assert made["gamma"] not in {r.id for r in storage.list_rooms(db, created_before=created)}
    later = created + timedelta(days=1)
    assert storage.count_rooms(db, created_after=later) == 0
    frame = frames.rooms_summary(db, created_before=later, created_after=created)
    assert made["gamma"] in set(frame["room_id"])


def test_archived_rooms_are_hidden_when_asked_and_come_back(db: Database) -> None:
    made = _rooms(db)
    room = storage.set_room_archived(db, made["gamma"])
    assert room.archived_at is not None
    assert made["gamma"] not in {r.id for r in storage.list_rooms(db, archived=False)}
    assert [r.id for r in storage.list_rooms(db, archived=True)] == [made["gamma"]]
    frame = frames.rooms_summary(db, archived=True)
    assert list(frame["room_id"]) == [made["gamma"]] and frame["archived_at"].notna().all()
    assert storage.set_room_archived(db, made["gamma"], False).archived_at is None
    assert storage.count_rooms(db, archived=False) == 4
    with pytest.raises(storage.RoomNotFound):
        storage.set_room_archived(db, 999)


def test_last_messages_reads_only_the_page_rooms_latest_message(db: Database) -> None:
    a = storage.create_room(db, "a", status="running")
    b = storage.create_room(db, "b")
    storage.append_message(db, a, "human", "ann", "first")
    storage.append_message(db, a, "human", "bob", "second one")
    frame = frames.last_messages(db, [a, b]).set_index("room_id")
    assert (frame.loc[a, "speaker"], frame.loc[a, "content"]) == ("bob", "second one")
    assert pd.isna(frame.loc[b, "content"]) and frame.loc[a, "activity"] >= 1


def _experiment_with_rooms(db: Database) -> tuple[int, list[int], int]:
    experiment = storage.create_experiment(db, "e", status="done")
    rooms = [storage.create_room(db, f"r{i}", experiment_id=experiment) for i in range(2)]
    for room in rooms:
        storage.append_message(db, room, "human", "u", "hello")
    analysis = storage.create_analysis(db, "deal?", {"text": "?"}, experiment_id=experiment)
    for room in rooms:
        storage.record_answer(db, analysis, room, "yes")
    return experiment, rooms, analysis


def test_delete_experiment_with_rooms_leaves_nothing_behind(db: Database) -> None:
    experiment, rooms, analysis = _experiment_with_rooms(db)
    other = storage.create_room(db, "not in it")
    assert storage.delete_experiment(db, experiment, with_rooms=True)
    assert storage.count_rooms(db) == 1 and storage.get_room(db, other).name == "not in it"
    for room in rooms:
        assert storage.events(db, room) == []
        assert storage.get_lease(db, room) is None
    assert storage.answers(db, analysis) == []
    with pytest.raises(storage.AnalysisNotFound):
        storage.get_analysis(db, analysis)
    assert not storage.delete_experiment(db, experiment, with_rooms=True)


def test_delete_experiment_refused_while_running_or_leased(db: Database) -> None:
    experiment, rooms, _ = _experiment_with_rooms(db)
    token = storage.acquire_lease(db, rooms[0], "worker-1", 30)
    with pytest.raises(storage.RecordInUse, match=str(rooms[0])):
        storage.delete_experiment(db, experiment, with_rooms=True)
    storage.release_lease(db, rooms[0], "worker-1", token)
    storage.update_experiment(db, experiment, status="running")
    with pytest.raises(storage.RecordInUse, match="stop it first"):
        storage.delete_experiment(db, experiment, with_rooms=True)
    assert storage.count_rooms(db, experiment_id=experiment) == 2  # nothing was deleted


def test_archive_experiment_archives_its_rooms(db: Database) -> None:
    experiment, rooms, _ = _experiment_with_rooms(db)
    assert storage.set_experiment_archived(db, experiment).archived_at is not None
    assert storage.list_experiments(db, archived=False) == []
    assert [e.id for e in storage.list_experiments(db, archived=True)] == [experiment]
    assert storage.count_rooms(db, archived=True) == 2
    storage.set_experiment_archived(db, experiment, False)
    assert storage.count_rooms(db, archived=False) == 2


def test_data_version_changes_with_every_write_the_results_pages_show(db: Database) -> None:
    last = [frames.data_version(db)]

    def changed() -> bool:  # than the previous version (a state seen before may come back)
        now = frames.data_version(db)
        fresh = now != last[-1]
        last.append(now)
        return fresh

    room = storage.create_room(db, "r", status="running")
    assert changed()
    storage.append_message(db, room, "human", "u", "hello")
    assert changed()
    storage.set_room_archived(db, room)
    assert changed()
    storage.set_room_archived(db, room, False)
    assert changed()
    storage.update_room(db, room, name="renamed")
    assert changed()
    storage.delete_room(db, room)
    assert changed()
    assert not changed()  # nothing written: the same version
