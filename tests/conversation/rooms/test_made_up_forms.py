"""Made-up turns and copied prompt words in the forms ``benchmarks/echo_rate.py`` found SmolLM2
writing through the app (issue 35): another member's turn opened as ``[Ben]:``, ``<Ben>:`` or told
as a story ("The ben says: ...", 'Ben replied, "..."') is cut like ``Ben: ...``; a reply that is
only the chat shape's "(your turn)", copied as "Your turn.", is no message: asked again. Through a
room on a scripted OpenAI-compatible server (the chat path a real small model takes)."""

from __future__ import annotations

import pytest

import storage
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from conversation.text.scaffolding import reply_problems
from storage import Database
from tests.support.openai_server import OpenAICompatibleServer, Reply
from vocabulary.log import entries_of


def run_room(db: Database, *sent: str, turns: int = 1) -> list:
    with OpenAICompatibleServer(default_text="Seven dollars, my last offer.") as server:
        server.script(*(Reply(text=text) for text in sent))
        room = Room.create(
            db,
            name="forms",
            agents=[{"name": "Ann", "traits": {}}, {"name": "Ben", "traits": {}}],
            planner=RoundRobinPolicy(),
            termination=MaxTurns(turns),
            model={"service": "openai_compatible", "model": "tiny", "base_url": server.base_url},
            retry={"max_attempts": 2, "base_delay": 0.01},
        )
        room.post("What does the mug cost?")
        room.run()
    return [e for e in entries_of(storage.events(db, room.id)) if e.is_turn]


@pytest.mark.parametrize(
    "made_up",
    [
        "[Ben]: No way, $5.",
        "<Ben>: No way, $5.",
        "**[Ben]**: No way, $5.",
        "The ben says: No way, $5.",
        'Ben\'s response: "No way, $5."',
        "Ben\u2019s reply: No way, $5.",
        'Ben replied, "No way, $5."',
        "The Ben said \u201cNo way, $5.\u201d",
    ],
)
def test_another_members_made_up_turn_in_any_of_its_forms_is_cut(db: Database, made_up) -> None:
    (turn,) = run_room(db, f"I'd take $8 for it.\n{made_up}\nAnn: Fine.")
    assert turn.is_message and turn.content == "I'd take $8 for it."
    assert "made_up_turn" in reply_problems(made_up, ["Ann"], ["Ann", "Ben", "user"])


def test_a_line_that_only_names_a_member_is_kept() -> None:
    """What is not a turn stays: a member named in a sentence, the speaker's own voice."""
    roster = ["Ann", "Ben", "user"]
    for line in ("Ben says he wants $5, I want $8.", "The ben asks $8.", "Ann says: fine"):
        assert reply_problems(line, ["Ann"], roster) == set(), line


def test_the_speakers_own_possessive_label_is_stripped(db: Database) -> None:
    """SmolLM2 opened its own replies with 'Seller's response: "..."' in a mug room."""
    (turn,) = run_room(db, "Ann's response: \"I'd take $8 for it.\"")
    assert turn.is_message and turn.content == "I'd take $8 for it."


def test_a_reply_that_only_says_your_turn_is_asked_again(db: Database) -> None:
    (turn,) = run_room(db, "Your turn.")
    assert turn.is_message and turn.content == "Seven dollars, my last offer."
    assert turn.row.attempts == 2
