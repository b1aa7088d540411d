"""The message rule (non-empty text, bounded, no NUL) holds at every door a message comes in
by: a posted message, a moderator's edit of a draft, an imported message or event. One rule,
``text.limits.message_problem``; each door names its own field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conversation.exceptions import ConversationValueError, ImportRejected
from conversation.models import OfflineModel
from conversation.rooms.room import Room
from storage import Database
from tests.boundary.conftest import AGENTS

BAD_TEXT = [("empty", " ", "non-empty"), ("NUL", "a\x00b", "NUL"), ("long", "x" * 20_001, "20,000")]


@pytest.mark.parametrize(("text", "words"), [c[1:] for c in BAD_TEXT], ids=[c[0] for c in BAD_TEXT])
def test_an_edited_draft_obeys_the_message_rule(db: Database, text: str, words: str) -> None:
    room = Room.create(db, name="moderated", agents=AGENTS, model=OfflineModel(), moderated=True)
    room.post("hi")
    draft = room.step()
    assert draft is not None and draft.state == "waiting"
    with pytest.raises(ConversationValueError, match=words) as caught:
        draft.approve(text)
    assert "an edited message" in str(caught.value)
    assert [t.state for t in room.turns()] == ["waiting"]


@pytest.mark.parametrize(
    ("text", "words"), [c[1:] for c in BAD_TEXT[1:]], ids=[c[0] for c in BAD_TEXT[1:]]
)
def test_a_posted_and_an_imported_message_obey_the_same_rule(
    seeded_db: Database, refused: Callable[..., Any], text: str, words: str
) -> None:
    refused(lambda: Room.open(seeded_db, 1).post(text), "a message", words)
    long_import = "x" * 100_001 if words == "20,000" else text
    refused(
        lambda: Room.import_messages(
            seeded_db, [{"name": "maria", "content": long_import}], agents=AGENTS
        ),
        "message 0 content",
        "100,000" if words == "20,000" else words,
        error=ImportRejected,
    )


@pytest.mark.parametrize(("text", "words"), [c[1:] for c in BAD_TEXT], ids=[c[0] for c in BAD_TEXT])
def test_an_edited_fork_obeys_the_message_rule(
    seeded_db: Database, refused: Callable[..., Any], text: str, words: str
) -> None:
    # seq 1 of the seeded room is a person's message ("hello")
    refused(lambda: Room.open(seeded_db, 1).fork(1, edit=text), "edit", words)
