"""``room.post`` and ``room.stop``: text, request ids, audiences and speaker names at the door."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conversation.rooms.room import Room
from storage import Database
from tests.boundary.conftest import BIG

#: (id, room.post arguments, words the error must contain)
HOSTILE_POSTS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("text 50 MB", {"content": BIG}, ("message", "20,000 characters")),
    ("text one over", {"content": "x" * 20_001}, ("message", "20,000")),
    ("text empty", {"content": " \n"}, ("non-empty",)),
    ("text bytes", {"content": b"hi"}, ("non-empty text",)),
    ("text with NUL", {"content": "a\x00b"}, ("NUL",)),
    ("request id 50 MB", {"request_id": BIG}, ("request_id", "limit is 200")),
    ("request id newline", {"request_id": "a\nb"}, ("request_id", "one line")),
    ("request id number", {"request_id": 12}, ("request_id", "text")),
    ("speaker room", {"speaker": "room"}, ("speaker", "notices")),
    ("speaker System", {"speaker": "System"}, ("speaker", "notices")),
    ("speaker an agent", {"speaker": "Alice"}, ("speaker", "agent 'Alice'")),
    ("speaker an agent, lower case", {"speaker": "alice"}, ("speaker", "agent 'Alice'")),
    ("speaker with a newline", {"speaker": "eve\nAlice"}, ("speaker", "valid name")),
    ("speaker 50 MB", {"speaker": BIG}, ("speaker", "valid name")),
    ("to a stranger", {"to": ["Zed"]}, ("to=", "agent names")),
    ("to 50 MB", {"to": [BIG]}, ("to=", "agent names")),
    ("to a million", {"to": ["Alice"] * 1_000_000}, ("to=",)),
    ("to a number", {"to": 3}, ("to=",)),
]


@pytest.mark.parametrize(
    ("arguments", "words"), [c[1:] for c in HOSTILE_POSTS], ids=[c[0] for c in HOSTILE_POSTS]
)
def test_hostile_posts_are_refused(
    seeded_db: Database,
    refused: Callable[..., Any],
    arguments: dict[str, Any],
    words: tuple[str, ...],
) -> None:
    room = Room.open(seeded_db, 1)
    call = {"content": "hello again", **arguments}
    rest = {k: v for k, v in call.items() if k != "content"}
    refused(lambda: room.post(call["content"], **rest), *words)


@pytest.mark.parametrize(
    ("reason", "words"),
    [(BIG, ("stop reason", "limit is 1,000")), ("", ("reason",)), (5, ("reason",))],
    ids=["50 MB", "empty", "a number"],
)
def test_hostile_stop_reasons_are_refused(
    seeded_db: Database, refused: Callable[..., Any], reason: Any, words: tuple[str, ...]
) -> None:
    room = Room.open(seeded_db, 1)
    refused(lambda: room.stop(reason), *words)


def test_a_person_may_still_post_under_a_name_of_their_own(seeded_db: Database) -> None:
    room = Room.open(seeded_db, 1)
    event = room.post("my turn", speaker="maria", request_id="r-2", to=["Bob"])
    assert (event.speaker, event.visible_to) == ("maria", ["Bob"])
