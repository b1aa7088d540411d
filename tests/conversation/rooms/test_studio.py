"""Editing and interrupting a room ("as LangGraph Studio users expect"): settings changed
after creation as stored versions, edit-and-replay forks, per-agent breakpoints (in ``Room.run``
and in a ``python -m conversation.worker`` process), why each speaker was chosen, and an agent a
person @-mentions answering next under every planner."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conversation.exceptions import ConversationValueError
from conversation.models import OfflineModel
from conversation.planning.coordinator import CoordinatorPolicy
from conversation.planning.policies import (
    AddressedPolicy,
    FocalSpeakerPolicy,
    FreePolicy,
    RandomInclusivePolicy,
    RandomPolicy,
    RoundRobinPolicy,
)
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.room import Room
from conversation.termination.conditions import MaxTurns
from storage import Database
from tests.support.room_common import ROOT, child_env, drive_with

AGENTS = [{"name": "Alice"}, {"name": "Bob"}, {"name": "Cara"}]


def make_room(db: Database, model: Any = None, **options: Any) -> Room:
    options.setdefault("agents", AGENTS)
    options.setdefault("planner", RoundRobinPolicy())
    room = Room.create(db, name="studio room", **options)
    drive_with(room, model if model is not None else OfflineModel(seed=1, mention_probability=0))
    return room


def notices(room: Room) -> list[dict[str, Any]]:
    return [e.data or {} for e in room.events() if e.kind == "system"]


def agent_rows(room: Room) -> list[Any]:
    return [e for e in room.events() if e.kind == "agent" and e.state == "done"]


# -- settings editable after creation -----------------------------------------------------------


def test_update_config_stores_a_version_and_logs_who_changed_what(db: Database) -> None:
    room = make_room(db)
    assert [v["version"] for v in room.config_versions()] == [1]
    version = room.update_config(
        {"planner": RoundRobinRoomPlanner(max_rounds=2), "moderated": True, "seed": 9}, by="ann"
    )
    assert version == 2
    assert room.config.moderated is True and room.config.seed == 9
    assert room.config.planner["kind"] == "round_robin_room"
    [event] = notices(room)
    assert event == {
        "event": "config_changed",
        "version": 2,
        "by": "ann",
        "changes": ["planner", "seed", "moderated"],
    }
    versions = room.config_versions()
    assert [v["version"] for v in versions] == [1, 2]
    assert versions[0]["config"]["moderated"] is False and versions[0]["by"] is None
    assert versions[1]["config"]["moderated"] is True and versions[1]["by"] == "ann"
    assert versions[1]["from_seq"] == 1  # the seq of its config_changed event
    # The same settings again change nothing and write nothing.
    assert room.update_config({"moderated": True}, by="ann") == 2
    assert len(room.events()) == 1


def test_update_config_validates_like_create_and_stores_nothing_on_error(db: Database) -> None:
    room = make_room(db)
    with pytest.raises(ConversationValueError, match="not on the roster"):
        room.update_config({"breakpoints": {"before": ["Zed"]}})
    with pytest.raises(ConversationValueError, match="agent names must be unique"):
        room.update_config({"roster": [{"name": "Ann"}, {"name": "Ann"}]})
    with pytest.raises(ConversationValueError, match="cannot change"):
        room.update_config({"colour": "red"})
    with pytest.raises(ConversationValueError, match="max_output_tokens"):
        room.update_config({"max_output_tokens": 0})
    assert room.events() == [] and len(room.config_versions()) == 1


def test_a_new_version_applies_from_the_next_turn_in_run(db: Database) -> None:
    room = make_room(db, termination=MaxTurns(6))
    room.post("hello")
    assert [t.speaker for t in room.run(max_turns=2)] == ["Alice", "Bob"]
    room.update_config({"roster": [*AGENTS, {"name": "Dan"}]}, by="ann")
    model = OfflineModel(seed=1, mention_probability=0)
    drive_with(room, model)
    taken = room.run(max_turns=2)
    assert not any("Settings changed" in user for _, user in model.prompts)
    assert [t.speaker for t in taken] == ["Cara", "Dan"]
    room.update_config({"moderated": True})
    [draft] = room.run()
    assert draft.state == "waiting" and room.status == "waiting"


def test_a_whole_room_config_can_be_given(db: Database) -> None:
    room = make_room(db)
    other = Room.create(db, name="other", agents=[{"name": "Zoe"}], planner=RoundRobinPolicy())
    assert room.update_config(other.config, by="ann") == 2
    assert room.config.names == ("Zoe",)
    assert {"roster", "seed"} <= set(notices(room)[-1]["changes"])


# -- edit-and-replay ------------------------------------------------------------------------------


def test_fork_with_an_edited_message_replays_from_it(db: Database) -> None:
    room = make_room(db, termination=MaxTurns(3))
    room.post("hello")
    room.run()
    original = room.events()[1]
    assert original.speaker == "Alice"
    fork = room.fork(2, edit="Let us talk about @Cara's plan instead.", by="ann")
    assert fork.status == "paused" and fork.record.parent_room_id == room.id
    edited = fork.events()[1]
    assert edited.content == "Let us talk about @Cara's plan instead." and edited.speaker == "Alice"
    assert edited.data["forked_from"] == {"content": original.content, "speaker": "Alice"}
    assert notices(fork)[-1] == {
        "event": "forked",
        "from_room": room.id,
        "at_seq": 2,
        "by": "ann",
        "edited": True,
    }
    model = OfflineModel(seed=2, mention_probability=0)
    drive_with(fork, model)
    fork.resume()
    taken = fork.run()
    assert [t.speaker for t in taken] == ["Bob", "Cara"]
    system, user = model.prompts[0]
    assert "@Cara's plan instead" in user
    assert original.content not in user
    assert "Forked from" not in user  # how people ran the room is never shown to agents
    # The original room is untouched.
    assert room.events()[1].content == original.content


def test_fork_gives_a_message_to_another_speaker(db: Database) -> None:
    room = make_room(db, termination=MaxTurns(2))
    room.post("hello")
    room.run()
    fork = room.fork(2, speaker="Cara")
    assert fork.events()[1].speaker == "Cara" and fork.status == "paused"
    drive_with(fork, OfflineModel(seed=3, mention_probability=0))
    fork.resume()
    [next_turn] = fork.run(max_turns=1)
    assert next_turn.speaker == "Alice"  # round robin continues after Cara
    with pytest.raises(ConversationValueError, match="not on the roster"):
        room.fork(2, speaker="Zed")
    with pytest.raises(ConversationValueError, match="agent"):
        room.fork(1, speaker="Bob")  # a person's message stays a person's
    with pytest.raises(ConversationValueError, match="non-empty"):
        room.fork(2, edit="  ")


def test_a_plain_fork_still_starts_idle_and_says_so(db: Database) -> None:
    room = make_room(db, termination=MaxTurns(1))
    room.post("hello")
    room.run()
    fork = room.fork(2)
    assert fork.status == "idle"
    assert [e.content for e in fork.events()][:2] == [e.content for e in room.events()][:2]
    assert notices(fork)[-1]["edited"] is False and notices(fork)[-1]["event"] == "forked"


# -- breakpoints -----------------------------------------------------------------------------------


def test_breakpoint_before_pauses_before_the_model_is_called(db: Database) -> None:
    model = OfflineModel(seed=1, mention_probability=0)
    room = make_room(db, model, termination=MaxTurns(5), breakpoints={"before": ["Bob"]})
    room.post("hello")
    assert [t.speaker for t in room.run()] == ["Alice"]
    assert room.status == "paused" and model.calls == 1
    assert room.events()[-1].content == "paused before Bob speaks (breakpoint)"
    assert notices(room)[-1] == {
        "event": "paused",
        "by": "breakpoint",
        "breakpoint": "before",
        "agent": "Bob",
    }
    room.resume()
    assert [t.speaker for t in room.run()] == ["Bob", "Cara", "Alice"]  # released for one turn
    assert room.status == "paused"  # before Bob's next turn
    bob = [e for e in agent_rows(room) if e.speaker == "Bob"][0]
    assert bob.data["chosen_because"].startswith("round robin")
    assert "breakpoint released by" in bob.data["chosen_because"]
    room.resume()
    assert [t.speaker for t in room.run()] == ["Bob"]
    assert room.status == "terminated"


def test_breakpoint_after_pauses_once_the_message_is_committed(db: Database) -> None:
    room = make_room(db, termination=MaxTurns(4), breakpoints={"after": ["Alice"]})
    room.post("hello")
    assert [t.speaker for t in room.run()] == ["Alice"]
    assert room.status == "paused"
    assert agent_rows(room)[-1].speaker == "Alice"
    assert room.events()[-1].content == "paused after Alice spoke (breakpoint)"
    room.resume()
    assert [t.speaker for t in room.run()] == ["Bob", "Cara", "Alice"]
    assert room.status == "terminated"  # the end wins over the breakpoint


def test_breakpoints_can_be_set_and_cleared_live(db: Database) -> None:
    room = make_room(db, termination=MaxTurns(6))
    room.post("hello")
    room.run(max_turns=1)
    room.update_config({"breakpoints": {"before": ["Cara"]}}, by="ann")
    assert [t.speaker for t in room.run()] == ["Bob"]
    assert room.status == "paused"
    room.update_config({"breakpoints": None}, by="ann")
    room.resume()
    assert [t.speaker for t in room.run()] == ["Cara", "Alice", "Bob", "Cara"]


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_worker_process_applies_a_breakpoint_set_while_it_runs(
    tmp_path: Path, db_url: str
) -> None:
    db = Database(db_url)
    spec = {"service": "offline", "model": "offline", "parameters": {"seed": 3, "latency": 0.3}}
    room = Room.create(
        db,
        name="worker",
        agents=[{"name": "Buyer"}, {"name": "Seller"}],
        planner=RoundRobinPolicy(),
        termination=MaxTurns(12),
        model=spec,
    )
    room.post("Negotiate the price of a mug.")
    worker = subprocess.Popen(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--poll", "0.05"],
        cwd=ROOT,
        env=child_env(tmp_path / "home", db_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait(lambda: len(agent_rows(room)) >= 1, 60, "the worker's first turn")
        room.update_config({"breakpoints": {"before": ["Seller"]}}, by="ann")
        changed = room.events()[-1].seq
        _wait(lambda: room.status == "paused", 30, "the breakpoint")
        after = [e for e in agent_rows(room) if e.seq > changed]
        # Within one turn: at most the turn already claimed when the settings changed.
        assert len(after) <= 1 and all(e.speaker == "Buyer" for e in after)
        assert room.events()[-1].content == "paused before Seller speaks (breakpoint)"
        paused_at = room.events()[-1].seq
        room.resume()
        _wait(
            lambda: any(e.seq > paused_at and e.speaker == "Seller" for e in agent_rows(room)),
            30,
            "Seller's released turn",
        )
        seller = next(e for e in agent_rows(room) if e.seq > paused_at)
        assert seller.speaker == "Seller"
        assert "breakpoint released" in seller.data["chosen_because"]
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
        db.dispose()


# -- turn-taking legible -------------------------------------------------------------------------


def pick_bob(user_prompt: str, system_prompt: str) -> str:
    return "Bob"


@pytest.mark.parametrize(
    ("planner", "expected"),
    [
        (RoundRobinRoomPlanner(), "round robin (round 0: everyone speaks once)"),
        (RoundRobinPolicy(), "round robin"),
        (FocalSpeakerPolicy(focal_speaker="Alice"), "focal agent"),
        (RandomPolicy(seed=1), "random draw (seeded)"),
        (RandomInclusivePolicy(seed=1), "random draw (seeded) among those yet to speak this cycle"),
        (FreePolicy(), "open floor: answering user"),
        (CoordinatorPolicy("Alice"), "picked by coordinator"),
    ],
    ids=lambda v: getattr(v, "kind", None) or "",
)
def test_each_agent_turn_says_why_it_was_chosen(db: Database, planner: Any, expected: str) -> None:
    room = make_room(db, OfflineModel(func=pick_bob), planner=planner, termination=MaxTurns(1))
    room.post("hello")
    room.run()
    [turn] = agent_rows(room)[-1:]
    assert turn.data["chosen_because"] == expected


def test_seed_001_reasons_name_who_mentioned_whom(db: Database) -> None:
    replies = ["over to @Cara", "ok", "fine", "me again"]
    room = make_room(db, OfflineModel(replies=replies), planner=RoundRobinRoomPlanner())
    room.post("hello")
    room.run()
    reasons = [(e.speaker, e.data["chosen_because"]) for e in agent_rows(room)]
    assert reasons[-1] == ("Cara", "mentioned by Alice")


@pytest.mark.parametrize(
    "planner",
    [
        RoundRobinRoomPlanner(),
        RoundRobinPolicy(),
        FocalSpeakerPolicy(focal_speaker="Alice"),
        RandomPolicy(seed=4),
        RandomInclusivePolicy(seed=4),
        AddressedPolicy(),
        FreePolicy(),
        CoordinatorPolicy("Alice"),
        CoordinatorPolicy("Alice", after=True),
    ],
    ids=lambda p: p.kind + ("_after" if getattr(p, "after", False) else ""),
)
def test_an_agent_a_person_mentions_answers_next(db: Database, planner: Any) -> None:
    model = OfflineModel(seed=5, mention_probability=0)
    room = make_room(db, model, planner=planner)
    room.post("@Cara, what do you think?", speaker="ann")
    [first] = room.run(max_turns=1)
    assert first.speaker == "Cara"
    assert agent_rows(room)[0].data["chosen_because"] == "mentioned by ann"
    assert model.calls == 1  # no coordinator pick, no drafts: Cara answers


def test_export_carries_the_versions_and_import_restores_them(db: Database) -> None:
    room = make_room(db, termination=MaxTurns(2))
    room.post("hello")
    room.run()
    room.update_config({"moderated": True}, by="ann")
    exported = room.export()
    assert [v["version"] for v in exported["config_versions"]] == [1, 2]
    again = Room.import_messages(db, exported)
    assert [v["version"] for v in again.config_versions()] == [1, 2]
    assert again.config_versions()[1]["by"] == "ann"
    assert again.config.moderated is True
    assert again.export()["config_versions"] == exported["config_versions"]


def test_deleting_an_edited_room_leaves_no_versions_behind(db: Database) -> None:
    import storage

    room = make_room(db)
    room.update_config({"moderated": True})
    assert len(storage.room_config_versions(db, room.id)) == 2
    assert storage.delete_room(db, room.id)
    assert storage.room_config_versions(db, room.id) == []


def test_a_turn_already_claimed_keeps_its_version(db: Database) -> None:
    import asyncio

    import storage
    from conversation.rooms.engine import Call, Engine, HeldRoom
    from tests.support.room_common import FixedModels

    room = make_room(db, termination=MaxTurns(4))
    room.post("hello")
    engine = Engine(db, "test-owner")
    engine.models = FixedModels(OfflineModel(seed=1, mention_probability=0))
    token = storage.acquire_lease(db, room.id, "test-owner", 60)
    assert token is not None
    held = HeldRoom(room.id, token)
    [call] = engine.begin([held])
    assert isinstance(call, Call) and call.turn.speaker == "Alice"
    room.update_config({"moderated": True}, by="ann")  # while Alice's turn is being written
    reply = asyncio.run(engine.call(call))
    [step] = engine.finish([(call, reply)], claim_next=True)  # type: ignore[list-item]
    assert step.turn is not None and step.turn.state == "done"  # claimed under version 1
    assert held.pending is None  # the next claim, planned from version 1, was not made
    storage.release_lease(db, room.id, "test-owner", token)
    [draft] = room.run()
    assert draft.speaker == "Bob" and draft.state == "waiting"  # version 2 from the next turn
