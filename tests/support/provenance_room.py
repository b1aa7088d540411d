"""A room whose log holds every kind of provenance (``studied_room``), for the export tests, the
Room page's provenance panel and its browser test."""

from __future__ import annotations

import itertools

from edsl import Agent, AgentList

from conversation import CoordinatorPolicy, OfflineModel, Room
from storage import Database
from tests.support.room_common import speaker_of


def studied_room(db: Database) -> Room:
    """A private message, a person's message, a coordinator's picks, a denial, an edit, a pass."""
    picks = itertools.count()

    def replies(user_prompt: str, system_prompt: str) -> str:
        speaker = speaker_of(system_prompt)
        if speaker == "Alice":  # the coordinator: Bob first, then Cara
            return "Bob" if next(picks) == 0 else "Cara"
        return "PASS" if speaker == "Cara" else f"a draft, attempt {next(picks)}"

    room = Room.create(
        db,
        name="provenance",
        agents=AgentList([Agent(name=n) for n in ("Alice", "Bob", "Cara")]),
        planner=CoordinatorPolicy(coordinator="Alice", max_messages=6),
        moderated=True,
        model=OfflineModel(func=replies),
        in_process_only=True,
    )
    room.post("just between us", to=["Bob"], speaker="ann")
    room.post("Ideas for the launch?", speaker="ann")
    room.step()  # Alice picks Bob
    room.step().deny("too long", by="mod")
    room.step().approve("Short and edited.", by="mod")
    room.step()  # Alice picks Cara
    passed = room.step()
    assert passed.passed
    room.stop()
    return room
