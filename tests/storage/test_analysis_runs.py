"""An analysis's background run in storage (revision 0014): planned answers, claims that two
runners cannot share, answers fenced by their claim, claims of gone runners freed, failed
answers planned again, and the status that follows the answers."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

import storage
from storage import Database

QUESTION = {"text": "Was a deal reached?", "type": "yes_no"}


def planned(db: Database, n: int) -> tuple[int, list[int]]:
    rooms = [storage.create_room(db, f"r{i}") for i in range(n)]
    analysis = storage.create_analysis(db, "deal", QUESTION, status="running", room_ids=rooms)
    return analysis, rooms


def states(db: Database, analysis: int) -> dict[int, str]:
    return {a.room_id: a.state for a in storage.answers(db, analysis)}


def test_an_analysis_is_stored_with_its_planned_rooms(db: Database) -> None:
    analysis, rooms = planned(db, 3)
    assert states(db, analysis) == dict.fromkeys(rooms, "planned")
    assert storage.answer_counts(db, [analysis]) == {analysis: {"planned": 3}}
    assert storage.open_analyses(db) == [analysis]
    with pytest.raises(storage.RoomNotFound):
        storage.create_analysis(db, "x", QUESTION, room_ids=[rooms[0], 999])
    assert len(storage.list_analyses(db)) == 1  # nothing of the refused one was stored


def test_claims_are_not_shared_and_answers_are_fenced(db: Database) -> None:
    analysis, rooms = planned(db, 5)
    first = storage.claim_answers(db, analysis, "a:h:1:x", limit=3, ttl_seconds=60)
    second = storage.claim_answers(db, analysis, "b:h:2:y", limit=3, ttl_seconds=60)
    assert first == rooms[:3] and second == rooms[3:]
    assert storage.claim_answers(db, analysis, "c:h:3:z", limit=3, ttl_seconds=60) == []
    assert storage.open_analyses(db) == []  # everything is held
    # Only the holder's answer is stored; another runner's write is refused.
    assert storage.record_answer(db, analysis, rooms[0], "No", claimed_by="b:h:2:y") is None
    assert storage.record_answer(db, analysis, rooms[0], "Yes", claimed_by="a:h:1:x")
    assert storage.record_answer(db, analysis, rooms[0], "No", claimed_by="a:h:1:x") is None
    assert storage.answers(db, analysis)[0].answer == "Yes"
    assert storage.settle_analysis(db, analysis) == "running"
    # A gone runner's claims are planned again; the rest stay held.
    assert storage.answer_claim_holders(db).keys() == {"a:h:1:x", "b:h:2:y"}
    assert storage.free_answer_claims_of(db, ["b:h:2:y"]) == 2
    assert states(db, analysis)[rooms[3]] == "planned"
    assert storage.record_answer(db, analysis, rooms[3], "Yes", claimed_by="b:h:2:y") is None


def test_an_expired_claim_is_claimable_and_renewal_keeps_it(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    analysis, rooms = planned(db, 2)
    assert storage.claim_answers(db, analysis, "a:h:1:x", limit=1, ttl_seconds=10) == rooms[:1]
    assert storage.claim_answers(db, analysis, "b:h:2:y", limit=1, ttl_seconds=10) == rooms[1:]
    assert storage.renew_answer_claims(db, analysis, "a:h:1:x", rooms, 100) == 1
    now = db.now
    monkeypatch.setattr(db, "now", lambda: now() + timedelta(seconds=50))
    # b's claim ran out, a's was renewed
    assert storage.claim_answers(db, analysis, "c:h:3:z", limit=5, ttl_seconds=10) == rooms[1:]
    assert storage.record_answer(db, analysis, rooms[1], "Yes", claimed_by="b:h:2:y") is None


def test_racing_claims_take_each_room_once(db: Database, db_url: str) -> None:
    analysis, rooms = planned(db, 40)
    taken: dict[str, list[int]] = {}

    def claim(owner: str) -> None:
        other = Database(db_url)
        try:
            mine: list[int] = []
            for _ in range(40):  # bounded: a claim taken twice fails the test, never hangs it
                got = storage.claim_answers(other, analysis, owner, limit=3, ttl_seconds=60)
                if not got:
                    break
                mine += got
            taken[owner] = mine
        finally:
            other.dispose()

    threads = [threading.Thread(target=claim, args=(f"r{i}:h:{i}:n",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [room for got in taken.values() for room in got]
    assert sorted(everything) == rooms  # each room once, none left out


def test_failed_answers_are_planned_again_and_the_status_follows(db: Database) -> None:
    analysis, rooms = planned(db, 2)
    storage.claim_answers(db, analysis, "a:h:1:x", limit=2, ttl_seconds=60)
    storage.record_answer(db, analysis, rooms[0], "Yes", claimed_by="a:h:1:x")
    error = {"type": "AnswerFailure", "message": "refused"}
    storage.record_answer(db, analysis, rooms[1], None, error=error, claimed_by="a:h:1:x")
    assert storage.settle_analysis(db, analysis) == "failed"
    assert storage.plan_answers_again(db, analysis) == [rooms[1]]
    assert storage.get_analysis(db, analysis).status == "running"
    assert states(db, analysis) == {rooms[0]: "answered", rooms[1]: "planned"}
    storage.claim_answers(db, analysis, "b:h:2:y", limit=2, ttl_seconds=60)
    storage.record_answer(db, analysis, rooms[1], "No", claimed_by="b:h:2:y")
    assert storage.settle_analysis(db, analysis) == "done"
    assert storage.answers(db, analysis)[1].error is None
