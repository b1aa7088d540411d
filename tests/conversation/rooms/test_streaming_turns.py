"""Streaming turns in the engine (issue 20): the partial draft is in storage while the reply
streams and never in a prompt or an export; a stop mid-stream cancels the call and is recorded as
a denial by who stopped it; the room's off switch; the write rate."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from edsl import Agent, AgentList

import storage
from conversation import OfflineModel, Room
from conversation.access.roles import Actor, Role
from conversation.exceptions import PermissionDenied
from conversation.models import streaming
from conversation.rooms.engine.streaming_call import STOPPED_WHILE_DRAFTING
from storage import Database
from tests.support.clocks import recorded_sleeps

LONG = " ".join(f"word{i}" for i in range(40))


def agents() -> AgentList:
    return AgentList([Agent(name="Alice", traits={}), Agent(name="Bob", traits={})])


def room_with(db: Database, model: Any, **options: Any) -> Room:
    options.setdefault("in_process_only", True)
    room = Room.create(db, name="r", agents=agents(), model=model, **options)
    room.post("hello")
    return room


def watch(db: Database, room: Room, run: Any, until: float = 30.0) -> tuple[list[Any], Any]:
    """Run ``run()`` in a thread while reading the room's draft; the drafts seen and the
    result."""
    seen: list[Any] = []
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.setdefault("out", run()))
    thread.start()
    deadline = time.monotonic() + until
    while thread.is_alive() and time.monotonic() < deadline:
        draft = storage.room_draft(db, room.id)
        if draft is not None and (not seen or seen[-1].text != draft.text):
            seen.append(draft)
        time.sleep(0.02)
    thread.join(until)
    return seen, result.get("out")


def test_the_draft_grows_in_storage_and_never_reaches_a_prompt_or_an_export(db) -> None:
    model = OfflineModel(replies=[LONG, "Bob answers."], words_per_second=40)
    room = room_with(db, model)
    seen, taken = watch(db, room, lambda: room.run(max_turns=2))
    assert {d.speaker for d in seen} <= {"Alice", "Bob"}
    seen = [d for d in seen if d.speaker == "Alice"]
    lengths = sorted({len(d.text) for d in seen})
    assert len(lengths) >= 3, lengths  # seen in pieces, growing
    assert all(LONG.startswith(d.text) for d in seen)
    assert [t.result for t in taken] == [LONG, "Bob answers."]
    # Bob's prompt holds Alice's committed message once: no partial of it, ever
    bob_prompt = model.prompts[1][1]
    assert bob_prompt.count("word39") == 1
    assert storage.room_draft(db, room.id) is None  # the commit removed it
    exported = str(room.export())
    assert exported.count("word10 ") == 1
    # throttled: at most ~4 writes a second (the default) for a 1 s reply
    assert max(d.writes for d in seen) <= 8


def test_a_stop_mid_stream_cancels_the_call_and_denies_the_draft_naming_who(db) -> None:
    model = OfflineModel(replies=[LONG, "A short second try."], words_per_second=20)
    room = room_with(db, model)
    moderator = Actor("mod@lab", Role.MODERATOR)
    stopped: dict[str, Any] = {}

    def stop_when_drafting() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            draft = storage.room_draft(db, room.id)
            if draft is not None and len(draft.text.split()) >= 3:
                stopped["at_words"] = len(draft.text.split())
                stopped["ok"] = room.turn(draft.event_id).stop_drafting(actor=moderator)
                return
            time.sleep(0.02)

    stopper = threading.Thread(target=stop_when_drafting)
    stopper.start()
    [turn] = room.run(max_turns=1)
    stopper.join()
    assert stopped["ok"]
    assert turn.state == "running"  # denied: the agent tries again
    [denial] = turn.inputs["denials"]
    assert denial["reason"] == STOPPED_WHILE_DRAFTING
    assert denial["by"] == "mod@lab"
    # The call was cancelled mid-stream: the turn ended on a part of the 40-word reply (a stop
    # honoured only once the reply was complete would deny all of it).
    assert LONG.startswith(denial["draft"]) and denial["draft"] != LONG
    assert storage.stop_requested(db, turn.id) is None  # consumed with the commit
    # the retry goes on with the feedback and commits the next reply
    [again] = room.run(max_turns=1)
    assert (again.id, again.result) == (turn.id, "A short second try.")
    assert STOPPED_WHILE_DRAFTING in model.prompts[-1][1]


def test_only_a_moderator_may_stop_a_draft(db) -> None:
    room = room_with(db, OfflineModel(replies=[LONG], words_per_second=20))
    seen: list[Any] = []

    def observer_stops() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            draft = storage.room_draft(db, room.id)
            if draft is not None:
                with pytest.raises(PermissionDenied):
                    room.turn(draft.event_id).stop_drafting(actor=Actor("o", Role.OBSERVER))
                seen.append(draft)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=observer_stops)
    thread.start()
    [turn] = room.run(max_turns=1)
    thread.join()
    assert seen and turn.result == LONG


def test_the_room_off_switch_keeps_todays_path(db) -> None:
    room = room_with(db, OfflineModel(replies=[LONG], words_per_second=40), streaming=False)
    seen, [turn] = watch(db, room, lambda: room.run(max_turns=1))
    assert seen == [] and turn.result == LONG


def test_the_offline_model_without_a_rate_answers_at_once(db, monkeypatch) -> None:
    monkeypatch.delenv("ROOMS_OFFLINE_WORDS_PER_SECOND", raising=False)
    paced = recorded_sleeps(monkeypatch, streaming)  # the waits between streamed words
    room = room_with(db, OfflineModel(replies=[LONG]))
    [turn] = room.run(max_turns=1)
    assert turn.result == LONG and paced == []  # streamed with no wait between its words


def test_the_partial_write_rate_is_the_rooms(db) -> None:
    model = OfflineModel(replies=[LONG], words_per_second=40)
    room = room_with(db, model, partial_writes_per_second=1.0)
    seen, _ = watch(db, room, lambda: room.run(max_turns=1))
    assert seen and max(d.writes for d in seen) <= 3  # ~1 s at 1 write/s


def test_a_stop_before_the_reply_starts_is_honoured(db) -> None:
    """A stop written while no process streams (the worker was down) takes effect when the
    turn's call starts."""
    model = OfflineModel(replies=[LONG, "later"], words_per_second=20)
    room = room_with(db, model)

    async def claim_only() -> int:
        from conversation.rooms.engine import Engine, HeldRoom

        engine = Engine(db, "w", lease_ttl=30)
        token = storage.acquire_lease(db, room.id, "w", 30)
        held = HeldRoom(room.id, token)
        [call] = engine.begin([held])
        storage.release_lease(db, room.id, "w", token)
        return call.turn.id

    turn_id = asyncio.run(claim_only())
    assert room.turn(turn_id).stop_drafting(by="researcher")
    [turn] = room.run(max_turns=1)
    assert turn.inputs["denials"][0]["by"] == "researcher"
    assert turn.inputs["denials"][0]["draft"] == ""


def test_a_worker_does_not_count_a_turn_stopped_while_drafting(db) -> None:
    """The stopped draft is a denial, not a turn taken: the worker's count is the turns that
    committed a reply (two here), though three calls were made."""
    from conversation.termination.conditions import MaxTurns
    from conversation.worker import Worker
    from tests.support.room_common import FixedModels

    model = OfflineModel(replies=[LONG, "Alice again.", "Bob answers."], words_per_second=20)
    # stored as a portable spec; the worker is handed the scripted model
    room = room_with(db, OfflineModel(seed=1), termination=MaxTurns(2), in_process_only=False)
    moderator = Actor("mod@lab", Role.MODERATOR)

    def stop_first_draft() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            draft = storage.room_draft(db, room.id)
            if draft is not None and len(draft.text.split()) >= 3:
                room.turn(draft.event_id).stop_drafting(actor=moderator)
                return
            time.sleep(0.02)

    stopper = threading.Thread(target=stop_first_draft)
    stopper.start()
    worker = Worker(db, concurrency=1, poll_interval=0.05)
    worker.engine.models = FixedModels(model)
    taken = asyncio.run(asyncio.wait_for(worker.run(until_idle=True), 60))
    stopper.join()
    agent_turns = [e for e in room.events() if e.kind == "agent"]
    assert [e.content for e in agent_turns] == ["Alice again.", "Bob answers."]
    assert agent_turns[0].data["denials"][0]["reason"] == STOPPED_WHILE_DRAFTING
    assert taken == 2
