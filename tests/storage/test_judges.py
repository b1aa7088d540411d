"""Judge storage (``storage.research.judges``) on SQLite and PostgreSQL: rubric versions stored once,
scores replaced in place per (rubric version, unit, judge, dimension), run counters, cascades."""

from __future__ import annotations

import pytest

import storage
from storage import Database


@pytest.fixture
def room(db: Database) -> int:
    room_id = storage.create_room(db, "r", {"roster": []})
    storage.append_message(db, room_id, "human", "user", "hello")
    return room_id


def _score(room_id: int, judge: str = "a", value: object = "x", **extra: object) -> dict:
    return {
        "room_id": room_id, "seq": 1, "unit": f"{room_id}:1", "judge": judge,
        "dimension": "code", "dimension_version": "d1", "rubric_version": "v1",
        "value": value, "reason": "because", "prompt": "judge this", "cost": 0.5,
        "model": {"service": "offline", "model": "offline"}, "cache_key": "k" * 32, **extra,
    }  # fmt: skip


def test_a_rubric_version_is_stored_once(db: Database) -> None:
    first = storage.save_rubric(db, "tone", "v1", "message", {"name": "tone"})
    again = storage.save_rubric(db, "tone", "v1", "message", {"name": "tone"})
    other = storage.save_rubric(db, "tone", "v2", "message", {"name": "tone", "x": 1})
    assert first.id == again.id != other.id
    assert [r.version for r in storage.list_rubrics(db, name="tone")] == ["v2", "v1"]
    with pytest.raises(storage.StorageValueError, match="unit"):
        storage.save_rubric(db, "tone", "v3", "paragraph", {"name": "tone"})


def test_scores_are_replaced_in_place_and_filtered(db: Database, room: int) -> None:
    rubric = storage.save_rubric(db, "tone", "v1", "message", {"name": "tone"})
    run = storage.create_judge_run(db, rubric.id, [{"name": "a", "model": {"service": "offline"}}])
    failed = {"type": "AnswerFailure", "message": "off the scale", "raw": "maybe"}
    storage.record_judge_scores(db, run, rubric.id, [_score(room, value=None, error=failed), _score(room, "b")])  # fmt: skip
    assert [s.judge for s in storage.judge_scores(db, rubric_id=rubric.id, failed=True)] == ["a"]
    retry = storage.create_judge_run(db, rubric.id, [{"name": "a", "model": {}}])
    storage.record_judge_scores(db, retry, rubric.id, [_score(room, value=3)])
    stored = storage.judge_scores(db, rubric_id=rubric.id)
    assert [(s.judge, s.value, s.error, s.run_id) for s in stored] == [
        ("a", 3, None, retry), ("b", "x", None, run),
    ]  # fmt: skip
    assert storage.judge_scores(db, run_id=retry)[0].cache_key == "k" * 32
    with pytest.raises(storage.StorageValueError, match="unknown fields"):
        storage.record_judge_scores(db, run, rubric.id, [{**_score(room), "colour": 1}])


def test_run_counters_add_up_and_failed_is_the_current_count(db: Database) -> None:
    rubric = storage.save_rubric(db, "tone", "v1", "room", {"name": "tone"})
    run = storage.create_judge_run(db, rubric.id, [{"name": "a", "model": {}}])
    storage.update_judge_run(db, run, add={"asked": 3, "failed": 2}, add_cost=0.25)
    storage.update_judge_run(db, run, add={"asked": 2, "failed": 1}, add_cost=None)
    done = storage.update_judge_run(db, run, status="done", add={"cached": 1})
    assert (done.asked, done.failed, done.cached, done.cost, done.status) == (5, 1, 1, 0.25, "done")


def test_deleting_a_room_deletes_its_scores(db: Database, room: int) -> None:
    rubric = storage.save_rubric(db, "tone", "v1", "message", {"name": "tone"})
    run = storage.create_judge_run(db, rubric.id, [{"name": "a", "model": {}}])
    storage.record_judge_scores(db, run, rubric.id, [_score(room)])
    storage.delete_room(db, room)
    assert storage.judge_scores(db, rubric_id=rubric.id) == []


def test_a_judge_run_and_its_rescoring_on_this_backend(db: Database, room: int) -> None:
    """The library over this backend: a run, a forced re-run from the model cache, an edit that
    re-asks its one changed dimension (JSON values, upserts and cache writes on both)."""
    from conversation.analysis import judges
    from conversation.analysis.judges.rubrics import Rubric
    from conversation.models import OfflineModel

    def rubric(points: int) -> Rubric:
        return Rubric.from_dict({"name": "r", "dimensions": [
            {"name": "code", "description": "Which?", "scale": {"kind": "nominal", "labels": ["a", "b"]}},
            {"name": "tone", "description": "How warm?", "scale": {"kind": "ordinal", "points": points}},
        ]})  # fmt: skip

    def reply(prompt: str, system: str) -> str:
        return ("2" if "Rate it" in prompt else "b") + "\nwhy not"

    first = judges.run_judges(db, rubric(3), [judges.Judge("j", OfflineModel(func=reply))], [room])
    model = OfflineModel(func=reply)
    forced = judges.run_judges(db, rubric(3), [judges.Judge("j", model)], [room], rescore=True)
    assert (first.asked, forced.cached, model.calls) == (2, 2, 0)
    edited = judges.run_judges(db, rubric(4), [judges.Judge("j", OfflineModel(func=reply))], [room])
    assert (edited.asked, edited.reused) == (1, 1)
    values = {(s.rater, s.dimension): s.value for s in judges.scores(db, edited.rubric_id)}
    assert values == {("j", "code"): "b", ("j", "tone"): 2, ("panel", "code"): "b", ("panel", "tone"): 2}  # fmt: skip
