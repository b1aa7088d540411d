"""Qualitative-coding tags in the transcripts: a tagged message shows its labels in a
line under it, as plain text, on the Room page and in the Results transcript (``render_transcript``
with ``db``), and the tags of all shown messages are read in one query."""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from conversation import browse
from conversation.analysis import coding
from storage import Database
from tests.app.page_support import app, mug_room, open_coding, shown

HOSTILE = "**hostile** <b>x</b>"  # markup in a label is shown as typed


def tagged_room(db: Database) -> tuple[Any, Any, Any]:
    room = mug_room(db)
    room.run(max_turns=2)
    second = next(e for e in room.events() if e.kind == "human")  # the opening, left untagged
    first = next(e for e in room.events() if e.kind == "agent" and e.state == "done")
    for label in ("deal", HOSTILE):
        coding.add_label(db, label, room_id=room.id)
    coding.tag_message(db, first.id, "deal", by="ann")
    coding.tag_message(db, first.id, HOSTILE, by="ann")
    coding.tag_message(db, first.id, "deal", by="bob")  # a second coder: the label once
    return room, first, second


def captions_of(at: AppTest, seq: int) -> list[str]:
    [bubble] = [m for m in at.chat_message if any(f"#{seq}" in c.value for c in m.caption)]
    return [shown(c.value) for c in bubble.caption]


@pytest.fixture
def tag_reads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every batch read of tags by event ids (what the transcripts use, through the pages' read
    service ``conversation.browse``)."""
    calls: list[dict[str, Any]] = []
    real = browse.message_tags

    def spy(db: Any, **kwargs: Any) -> Any:
        if kwargs.get("event_ids") is not None:
            calls.append(kwargs)
        return real(db, **kwargs)

    monkeypatch.setattr(browse, "message_tags", spy)
    return calls


def test_the_room_page_shows_a_messages_tags_under_it(db: Database, tag_reads: list) -> None:
    room, first, second = tagged_room(db)
    at = app("pages/room.py", room=str(room.id))
    assert f"tags: deal, {HOSTILE}" in captions_of(at, first.seq)
    assert not [c for c in captions_of(at, second.seq) if c.startswith("tags:")]
    assert not [m for m in at.markdown if HOSTILE in m.value]  # never as markdown
    # One read for all the shown messages per page run, not one per message.
    before = len(tag_reads)
    at.run()
    assert len(tag_reads) - before == 1
    assert {first.id, second.id} <= set(tag_reads[-1]["event_ids"])


def test_tagging_on_the_room_page_shows_the_tag_in_the_transcript(db: Database) -> None:
    room, first, second = tagged_room(db)
    at = open_coding(app("pages/room.py", room=str(room.id)), room.id)
    at.text_input(key=f"code-new-{room.id}").set_value("concession")
    at.button(key=f"FormSubmitter:code-add-{room.id}-Add label").click().run()
    at.selectbox(key=f"code-msg-{room.id}").set_value(second.id).run()
    at.selectbox(key=f"code-label-{room.id}").set_value("concession").run()
    at.button(key=f"code-tag-{room.id}").click().run()
    assert not at.exception, at.exception
    assert "tags: concession" in captions_of(at, second.seq)


def test_the_results_transcript_shows_tags(db: Database, tag_reads: list) -> None:
    room, first, _ = tagged_room(db)
    at = app("pages/results.py")  # the only room: its transcript is the one shown
    assert not at.exception, at.exception
    assert f"tags: deal, {HOSTILE}" in captions_of(at, first.seq)
    assert tag_reads and first.id in tag_reads[-1]["event_ids"]
