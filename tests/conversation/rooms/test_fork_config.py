"""A fork takes the settings in force at the message it forks at: settings changed
later in the parent are not carried into a fork made before the change."""

from __future__ import annotations

from conversation.models import OfflineModel
from conversation.planning.policies import RoundRobinPolicy
from conversation.rooms.room import Room
from storage import Database
from tests.support.room_common import drive_with

AGENTS = [{"name": "Alice"}, {"name": "Bob"}]


def test_a_fork_uses_the_config_version_in_force_at_its_seq(db: Database) -> None:
    room = Room.create(
        db, name="versions", agents=AGENTS, planner=RoundRobinPolicy(), max_output_tokens=300
    )
    drive_with(room, OfflineModel(seed=1, mention_probability=0))
    room.post("Hello both.", speaker="ann")
    room.run(max_turns=2)
    before = room.events()[-1].seq
    assert room.update_config({"moderated": True, "max_output_tokens": 120}, by="ann") == 2
    changed_at = room.events()[-1].seq  # the config_changed notice
    assert changed_at > before

    old = room.fork(before, name="before the change")
    assert old.config.moderated is False and old.config.max_output_tokens == 300
    new = room.fork(changed_at, name="after the change")
    assert new.config.moderated is True and new.config.max_output_tokens == 120
    # An edited fork before the change keeps the old settings too.
    edited = room.fork(2, edit="A different first reply.")
    assert edited.config.moderated is False
    assert room.config.moderated is True  # the parent is unchanged


def test_a_room_never_edited_forks_with_its_config(db: Database) -> None:
    room = Room.create(db, name="plain", agents=AGENTS, planner=RoundRobinPolicy(), moderated=True)
    room.post("Hi.", speaker="ann")
    fork = room.fork(1)
    assert fork.config.moderated is True
    assert fork.config.to_dict() == room.config.to_dict()
