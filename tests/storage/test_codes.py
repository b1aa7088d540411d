"""Qualitative coding storage (``storage.research.codes``) and its library API
(``conversation.analysis.coding``): codebooks, tags with who and when, bounds, cascades."""

from __future__ import annotations

import pytest

import storage
from conversation.analysis import coding
from conversation.exceptions import ConversationValueError
from storage import Database, StorageValueError
from storage.errors import DuplicateName


def _room_with_message(db: Database, **room: object) -> tuple[int, int]:
    room_id = storage.create_room(db, "coded", {}, **room)  # type: ignore[arg-type]
    event = storage.append_message(db, room_id, "human", "ann", "I offer $5")
    assert event.id is not None
    return room_id, event.id


def test_a_tag_records_label_rating_note_who_and_when(db: Database) -> None:
    room_id, event_id = _room_with_message(db)
    assert coding.add_label(db, "offer", room_id=room_id) == ["offer"]
    tag = coding.tag_message(db, event_id, "offer", by="coder1", rating=3, note="opening")
    assert (tag.event_id, tag.room_id, tag.label, tag.rating, tag.note, tag.by) == (
        event_id, room_id, "offer", 3, "opening", "coder1",
    )  # fmt: skip
    assert tag.created_at.tzinfo is not None
    again = coding.tag_message(db, event_id, "offer", by="coder1", rating=5)
    assert again.id == tag.id and again.rating == 5 and again.note is None
    other = coding.tag_message(db, event_id, "offer", by="coder2")
    assert [t.by for t in coding.tags(db, room_ids=room_id)] == ["coder1", "coder2"]
    assert coding.untag(db, other.id) and not coding.untag(db, other.id)
    assert [t.id for t in coding.tags(db, event_id=event_id)] == [tag.id]


def test_a_label_outside_the_codebook_is_refused_naming_the_fix(db: Database) -> None:
    room_id, event_id = _room_with_message(db)
    with pytest.raises(ConversationValueError, match="add it first with add_label"):
        coding.tag_message(db, event_id, "offer", by="ann")
    coding.add_label(db, "offer", room_id=room_id)
    with pytest.raises(ConversationValueError, match="already has the label"):
        coding.add_label(db, "offer", room_id=room_id)
    assert coding.remove_label(db, "offer", room_id=room_id) == []
    with pytest.raises(ConversationValueError, match="no label 'offer'"):
        coding.remove_label(db, "offer", room_id=room_id)


@pytest.mark.parametrize(
    ("label", "kwargs", "message"),
    [
        ("", {}, "non-empty"),
        ("x" * 81, {}, "limit is 80"),
        ("a\nb", {}, "control character"),
        ("ok", {"rating": 101}, "from -100 to 100"),
        ("ok", {"rating": True}, "whole number"),
        ("ok", {"note": "n" * 2001}, "limit is 2000"),
        ("ok", {"by": ""}, "by="),
    ],
)
def test_bad_tags_are_refused_by_storage(
    db: Database, label: str, kwargs: dict, message: str
) -> None:
    _, event_id = _room_with_message(db)
    with pytest.raises(StorageValueError, match=message):
        storage.tag_event(db, event_id, label, **{"by": "ann", **kwargs})
    assert storage.message_tags(db) == []


def test_a_codebook_belongs_to_one_experiment_or_one_room(db: Database) -> None:
    with pytest.raises(StorageValueError, match="exactly one experiment or one room"):
        storage.add_code_label(db, "x")
    room_id, _ = _room_with_message(db)
    with pytest.raises(DuplicateName):
        storage.add_code_label(db, "x", room_id=room_id)
        storage.add_code_label(db, "x", room_id=room_id)
    for n in range(storage.research.codes.MAX_LABELS - 1):
        storage.add_code_label(db, f"l{n}", room_id=room_id)
    with pytest.raises(StorageValueError, match="at most 100 labels"):
        storage.add_code_label(db, "one too many", room_id=room_id)


def test_rooms_of_an_experiment_share_its_codebook(db: Database) -> None:
    experiment_id = storage.create_experiment(db, "study")
    first, event_a = _room_with_message(db, experiment_id=experiment_id)
    second, event_b = _room_with_message(db, experiment_id=experiment_id)
    coding.add_label(db, "threat", experiment_id=experiment_id)
    assert coding.codebook(db, room_id=first) == coding.codebook(db, room_id=second) == ["threat"]
    coding.tag_message(db, event_a, "threat", by="ann")
    coding.tag_message(db, event_b, "threat", by="ann")
    storage.delete_experiment(db, experiment_id)
    assert storage.code_labels(db, room_id=first) == []
    assert coding.codebook(db, room_id=first) == []  # the room is outside any experiment now
    assert len(coding.tags(db)) == 2  # tags stay with their messages


def test_deleting_a_room_deletes_its_codebook_and_tags(db: Database) -> None:
    room_id, event_id = _room_with_message(db)
    kept, kept_event = _room_with_message(db)
    for rid, eid in ((room_id, event_id), (kept, kept_event)):
        coding.add_label(db, "offer", room_id=rid)
        coding.tag_message(db, eid, "offer", by="ann")
    assert storage.delete_room(db, room_id)
    assert [t.room_id for t in coding.tags(db)] == [kept]
    assert storage.code_labels(db, room_id=room_id) == []
    assert len(storage.code_labels(db, room_id=kept)) == 1
