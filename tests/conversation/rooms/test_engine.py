"""The one turn engine at its seams: bounded failures of a broken room, single-transaction
transitions, two moderators, a resumed empty summary, forgetting a stale log, a database that is
locked for a while."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from edsl import Agent, AgentList

import storage
from conversation import (
    ContextPolicy,
    ConversationStateError,
    OfflineModel,
    Room,
    Worker,
)
from conversation.exceptions import ImportRejected, TurnAlreadyDecided
from conversation.rooms.engine import PLAN_ATTEMPTS, Engine, HeldRoom, StepKind
from conversation.vocabulary import RoomStatus, TurnState
from storage import Database
from tests.support.room_common import FixedModels


def agents() -> AgentList:
    return AgentList([Agent(name="Alice", traits={"role": "a"}), Agent(name="Bob", traits={})])


def room_with(db: Database, model: Any, **options: Any) -> Room:
    # Scripted offline models live in this process only (their script cannot be stored).
    options.setdefault("in_process_only", True)
    room = Room.create(db, name="r", agents=agents(), model=model, **options)
    return room


def break_planner(db: Database, room: Room) -> None:
    """Store a planner no process can rebuild (as an older or hand-edited database might hold)."""
    config = dict(storage.get_room(db, room.id).config)
    config["planner"] = {"kind": "no-such-planner"}
    storage.update_room(db, room.id, config=config)


# -- a room that cannot be planned -------------------------------------------------------------


def test_a_room_whose_next_turn_cannot_be_planned_fails_with_the_reason(db: Database) -> None:
    room = room_with(db, OfflineModel(replies=["hi"] * 3))
    room.post("hello")
    break_planner(db, room)
    assert room.run() == []
    assert room.status == RoomStatus.FAILED
    assert "cannot be planned" in (room.stop_reason or "")
    assert "no-such-planner" in (room.stop_reason or "")
    notice = room.events()[-1]
    assert (notice.kind, notice.data["event"]) == ("system", "failed")


def test_planning_is_tried_a_bounded_number_of_times(db: Database) -> None:
    room = room_with(db, OfflineModel(replies=["hi"]))
    room.post("hello")
    break_planner(db, room)
    engine = Engine(db, "probe")
    token = storage.acquire_lease(db, room.id, "probe", 60)
    assert token is not None
    held = HeldRoom(room.id, token)
    kinds = [asyncio.run(engine.step(held)).kind for _ in range(PLAN_ATTEMPTS)]
    assert kinds == [StepKind.WAIT] * (PLAN_ATTEMPTS - 1) + [StepKind.FAIL]
    assert storage.get_room(db, room.id).status == RoomStatus.FAILED


def test_a_broken_room_does_not_starve_a_healthy_one_and_is_logged_once(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    broken = room_with(db, OfflineModel(replies=["x"]))
    broken.post("hello")
    break_planner(db, broken)
    healthy = room_with(db, OfflineModel(seed=1))
    healthy.post("hello")
    worker = Worker(db, concurrency=1, poll_interval=0.01)
    with caplog.at_level(logging.WARNING, logger="conversation"):
        asyncio.run(asyncio.wait_for(worker.run(until_idle=True), timeout=60))
    assert storage.get_room(db, broken.id).status == RoomStatus.FAILED
    assert storage.get_room(db, healthy.id).status == RoomStatus.SETTLED
    assert any(e.kind == "agent" for e in healthy.events())
    failures = [r for r in caplog.records if f"room {broken.id}" in r.getMessage()]
    assert len(failures) == 1, [r.getMessage() for r in failures]


# -- a person posting while the engine decides to settle -------------------------------------


@pytest.mark.parametrize("write", ["settle_rooms", "apply_turns"])
def test_a_message_posted_between_the_plan_and_the_settlement_is_answered(
    db: Database, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    """Another process's post lands after the engine planned "settled" but before it wrote it:
    the settlement is refused by the log's last seq and the room goes on to answer it."""
    room = room_with(db, OfflineModel(replies=["a", "b", "c", "d"]))
    room.post("hello")
    real = getattr(storage, write)
    posted: list[int] = []

    def post_first(*args: Any, **kwargs: Any) -> Any:
        settling = kwargs.get("settlements", args[1] if len(args) > 1 else ())
        if settling and not posted:
            posted.append(
                storage.append_message(db, room.id, "human", "user", "late", request_id="late")
            )
        return real(*args, **kwargs)

    monkeypatch.setattr(storage, write, post_first)
    if write == "settle_rooms":
        # Settle through a step of its own: every agent answers first, untouched.
        monkeypatch.setattr(storage, "apply_turns", _apply_without_settling(storage.apply_turns))
    room.run()
    assert posted, "the engine never tried to settle"
    rows = storage.events(db, room.id)
    late = next(e for e in rows if e.request_id == "late")
    assert any(e.kind == "agent" and e.seq > late.seq for e in rows), [
        (e.seq, e.speaker, e.content) for e in rows
    ]
    assert storage.get_room(db, room.id).status == RoomStatus.SETTLED


def _apply_without_settling(real: Any) -> Any:
    def apply(db: Database, *, commits: Any = (), settlements: Any = (), claims: Any = ()) -> Any:
        committed, _, claimed = real(db, commits=commits, settlements=(), claims=claims)
        return committed, [False] * len(settlements), claimed

    return apply


# -- transitions are single transactions ---------------------------------------------------------


def _no_second_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the separate status writes impossible: a transition must not need them."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a transition wrote the room's status in a second transaction")

    monkeypatch.setattr(storage, "update_room", refuse)
    monkeypatch.setattr(storage, "settle_rooms", refuse)


def test_a_draft_and_the_room_waiting_are_one_write(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = room_with(db, OfflineModel(replies=["draft"]), moderated=True)
    room.post("hello")
    _no_second_write(monkeypatch)
    turn = room.step()
    assert turn is not None and turn.state == TurnState.WAITING
    assert storage.get_room(db, room.id).status == RoomStatus.WAITING


def test_deciding_a_draft_and_the_room_going_on_are_one_write(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = room_with(db, OfflineModel(replies=["draft", "next"]), moderated=True)
    room.post("hello")
    turn = room.step()
    assert turn is not None
    _no_second_write(monkeypatch)
    turn.approve(by="ann")
    assert storage.get_room(db, room.id).status == RoomStatus.RUNNING


def test_posting_and_reopening_are_one_write(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    room = room_with(db, OfflineModel(replies=["hi"]))
    room.post("hello")
    room.run()
    assert room.status == RoomStatus.SETTLED
    _no_second_write(monkeypatch)
    room.post("again")
    assert storage.get_room(db, room.id).status == RoomStatus.RUNNING


def test_a_resent_message_does_not_reopen_a_stopped_room(db: Database) -> None:
    room = room_with(db, OfflineModel(replies=["hi"]))
    room.post("hello", request_id="r-1")
    room.stop()
    room.post("hello", request_id="r-1")
    assert room.status == RoomStatus.STOPPED


def test_stopping_is_one_write_with_its_notice(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = room_with(db, OfflineModel(replies=["draft"]), moderated=True)
    room.post("hello")
    room.step()
    monkeypatch.setattr(storage, "update_turn_state", lambda *a, **k: pytest.fail("second write"))
    _no_second_write(monkeypatch)
    room.stop("enough")
    assert (room.status, room.stop_reason) == ("stopped", "enough")
    assert room.events()[-2].state == TurnState.STOPPED
    assert room.events()[-1].content == "Stopped: enough"
    with pytest.raises(ConversationStateError, match="cannot stop"):
        room.stop("again")


def test_an_import_that_fails_halfway_leaves_no_room(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    import storage.rooms.imports as imports_module

    real = imports_module._insert_imported

    def half(conn: Any, room_id: int, prepared: Any, now: Any) -> Any:
        real(conn, room_id, prepared[:1], now)
        raise storage.StorageValueError("the disk said no halfway through")

    monkeypatch.setattr(imports_module, "_insert_imported", half)
    messages = [{"speaker": "user", "content": "hi"}, {"speaker": "Alice", "content": "hello"}]
    with pytest.raises(ImportRejected, match="halfway"):
        Room.import_messages(db, messages, agents=agents())
    assert storage.count_rooms(db) == 0


# -- two moderators -------------------------------------------------------------------------------


def test_the_second_moderator_is_told_who_decided_first(db: Database) -> None:
    room = room_with(db, OfflineModel(replies=["draft", "more"]), moderated=True)
    room.post("hello")
    first = room.step()
    assert first is not None
    second = room.turn(first.id)  # another browser tab, read before the first decision
    first.approve(by="ann")
    with pytest.raises(TurnAlreadyDecided, match="already approved by ann") as info:
        second.deny("too long", by="bob")
    assert (info.value.by, info.value.verb) == ("ann", "approve")
    assert room.turn(first.id).result == "draft"  # the denial changed nothing


def test_an_edit_records_the_original_draft_and_who_edited(db: Database) -> None:
    room = room_with(db, OfflineModel(replies=["draft"]), moderated=True)
    room.post("hello")
    turn = room.step()
    assert turn is not None
    turn.approve("edited text", by="ann")
    data = room.turn(turn.id).event.data
    assert data["draft"] == "draft" and data["edited_by"] == "ann"
    assert [d["verb"] for d in data["decisions"]] == ["edit"]


# -- smaller seams --------------------------------------------------------------------------------


def test_a_resumed_summary_with_nothing_to_summarise_ends_as_an_empty_pass(db: Database) -> None:
    model = OfflineModel(replies=["a reply"])
    room = room_with(db, model, context=ContextPolicy(max_messages=2, summarize=True))
    room.post("hello")
    token = storage.acquire_lease(db, room.id, "crashed", 60)
    assert token is not None
    turn = storage.claim_turn(
        db,
        room.id,
        token=token,
        expected_last_seq=1,
        speaker="summary",
        request_id="turn-2",
        activity=1,
        round=0,
        data={"event": "summary", "covers_seqs": [1, 1]},
    )
    assert turn is not None
    storage.release_lease(db, room.id, "crashed", token)
    resumed = room.step()
    assert resumed is not None and resumed.id == turn.id
    assert (resumed.state, resumed.passed, resumed.result) == ("done", True, "")
    assert model.calls == 0  # nothing was asked


def test_a_refused_commit_forgets_the_cached_log(db: Database) -> None:
    room = room_with(db, OfflineModel(replies=["a", "b"]))
    room.post("hello")
    engine = Engine(db, "one", models=FixedModels(OfflineModel(replies=["a", "b"])))
    token = storage.acquire_lease(db, room.id, "one", 60)
    assert token is not None
    held = HeldRoom(room.id, token)
    [call] = engine.begin([held])
    assert held.log is not None and not isinstance(call, type(None))
    room.stop("a person stopped it mid-call")
    reply = asyncio.run(engine.call(call))  # type: ignore[arg-type]
    [step] = engine.finish([(call, reply)])  # type: ignore[list-item]
    assert (step.kind, step.reason) == (StepKind.WAIT, "commit refused by the fence")
    assert held.log is None


def test_the_worker_waits_out_a_locked_database(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = room_with(db, OfflineModel(replies=["hi", "hello"]))
    room.post("hello")
    real = storage.list_runnable_rooms
    failures = [storage.DatabaseUnavailable("database is locked")] * 2

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return real(*args, **kwargs)

    monkeypatch.setattr(storage, "list_runnable_rooms", flaky)
    worker = Worker(db, poll_interval=0.01)
    turns = asyncio.run(asyncio.wait_for(worker.run(until_idle=True), timeout=30))
    assert failures == [] and turns == 2  # both agents answered the opening
    assert storage.get_room(db, room.id).status == RoomStatus.SETTLED


def test_the_focal_agent_is_asked_to_address_its_next_counterpart(db: Database) -> None:
    from conversation import FocalSpeakerPolicy

    model = OfflineModel(replies=["to bob", "hi", "to cara", "hey"])
    room = Room.create(
        db,
        name="focal",
        agents=AgentList([Agent(name=n) for n in ("Alice", "Bob", "Cara")]),
        planner=FocalSpeakerPolicy(focal_speaker="Alice"),
        model=model,
        in_process_only=True,
    )
    room.post("auction starts")
    room.run(max_turns=3)
    prompts = [user for _, user in model.prompts]
    assert "Address your message to Bob." in prompts[0]
    assert "Address your message to" not in prompts[1]
    assert "Address your message to Cara." in prompts[2]
    assert room.turns()[0].event.data["addressee"] == "Bob"
