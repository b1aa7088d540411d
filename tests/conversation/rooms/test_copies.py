"""Copies stored as new messages (issue 35): a reply that copies an earlier message word for word
is retried like an echo (it was never cached), then stored as a pass with its reason; a near copy
is kept and flagged on the turn; a redraft after "Stop drafting" never repeats the stopped text;
short agreements repeat freely. With a scripted offline model and a scripted OpenAI-compatible
server (the chat path a real small model takes)."""

from __future__ import annotations

import threading
import time
from typing import Any

import storage
from conversation import OfflineModel, Room
from conversation.access.roles import Actor, Role
from conversation.planning.policies import RoundRobinPolicy
from conversation.termination.conditions import MaxTurns
from storage import Database
from tests.support.openai_server import OpenAICompatibleServer, Reply
from ui.room import rooms

AGENTS = [{"name": "Ann", "traits": {}}, {"name": "Ben", "traits": {}}]
OFFER = "I can sell you the mug for eight dollars today."


def make_room(db: Database, model: Any, turns: int, **options: Any) -> Room:
    options.setdefault("in_process_only", not isinstance(model, dict))
    room = Room.create(
        db,
        name="copies",
        agents=AGENTS,
        model=model,
        planner=RoundRobinPolicy(),
        termination=MaxTurns(turns),
        retry={"max_attempts": 3, "base_delay": 0.0},
        **options,
    )
    room.post("What does the mug cost?")
    return room


def agent_turns(db: Database, room: Room) -> list[storage.Event]:
    return [e for e in storage.events(db, room.id) if e.kind in ("agent", "pass")]


def test_an_exact_copy_is_retried_then_stored_as_a_pass_with_its_reason(db: Database) -> None:
    model = OfflineModel(replies=[OFFER, OFFER, OFFER.lower(), f"  {OFFER}  ", "Ben's own."])
    room = make_room(db, model, turns=2)
    room.run()
    ann, ben = agent_turns(db, room)
    assert ann.content == OFFER
    assert ben.kind == "pass" and ben.attempts == 3
    assert "copied an earlier message" in ben.data["pass_reason"]
    assert "message #2" in ben.data["pass_reason"]
    assert rooms.turn_details(ben)["why a pass"] == ben.data["pass_reason"]
    # the copies were never cached: a fourth ask would reach the model again
    assert model.remaining_replies == 1


def test_a_copy_once_is_asked_again_and_the_new_message_kept(db: Database) -> None:
    model = OfflineModel(replies=[OFFER, OFFER, "Seven dollars and not a cent more."])
    room = make_room(db, model, turns=2)
    room.run()
    ann, ben = agent_turns(db, room)
    assert ben.kind == "agent" and ben.content == "Seven dollars and not a cent more."
    assert ben.attempts == 2


def test_short_agreements_are_kept_and_a_short_loop_is_not(db: Database) -> None:
    replies = ["DEAL", "DEAL", "I agree.", "I agree.", "The seller accepts.", "The seller accepts."]
    room = make_room(db, OfflineModel(replies=replies), turns=5)
    room.run()
    kept = [t.content for t in agent_turns(db, room)]
    # issue 35: SmolLM2 said "The seller accepts." on six turns running, both speakers
    assert kept == ["DEAL", "DEAL", "I agree.", "I agree.", "The seller accepts."]


def test_the_offline_models_own_voice_is_not_checked(db: Database) -> None:
    """The stand-in repeats its few phrases by design (no author, no copy); a scripted offline
    model stands for a real one and is checked (the tests above)."""
    room = make_room(db, OfflineModel(seed=5), turns=12)
    room.run()
    turns = agent_turns(db, room)
    assert len(turns) == 12 and all(t.kind == "agent" for t in turns)


def test_a_near_copy_is_kept_and_flagged_on_the_turn(db: Database) -> None:
    near = "I can sell you the mug for eight dollars, today only."
    room = make_room(db, OfflineModel(replies=[OFFER, near]), turns=2)
    room.run()
    ann, ben = agent_turns(db, room)
    assert ben.content == near
    assert ben.data["near_copy"]["seq"] == ann.seq
    assert 0.8 <= ben.data["near_copy"]["similarity"] < 1
    assert "near_copy" not in ann.data
    assert "nearly copies message #" in rooms.turn_details(ben)["near copy"]
    from storage.research import frames  # and in Results: the rooms table counts them

    (row,) = frames.rooms_summary(db, room_ids=[room.id]).itertuples()
    assert row.near_copies == 1


def test_a_redraft_after_a_stop_does_not_repeat_the_stopped_text(db: Database) -> None:
    long = " ".join(f"word{i}" for i in range(40))
    model = OfflineModel(
        replies=[long, long, "Something else entirely, then."], words_per_second=20
    )
    room = make_room(db, model, turns=1, streaming=True)
    stopper = threading.Thread(target=_stop_when_drafting, args=(db, room))
    stopper.start()
    [turn] = room.run(max_turns=1)
    stopper.join()
    assert turn.state == "running"  # stopped while drafting: asked again
    [again] = room.run(max_turns=1)
    assert again.result == "Something else entirely, then."
    assert again.inputs["denials"][0]["draft"] in long


def test_a_copy_from_a_chat_server_is_retried_too(db: Database) -> None:
    with OpenAICompatibleServer(default_text="Seven, final offer, take it or leave it.") as server:
        server.script(Reply(text=OFFER), Reply(text=f"Ben: {OFFER}"))
        spec = {"service": "openai_compatible", "model": "tiny", "base_url": server.base_url}
        room = make_room(db, spec, turns=2)
        room.run()
    ann, ben = agent_turns(db, room)
    assert ann.content == OFFER
    assert ben.content == "Seven, final offer, take it or leave it." and ben.attempts == 2


def _stop_when_drafting(db: Database, room: Room) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        draft = storage.room_draft(db, room.id)
        if draft is not None and len(draft.text.split()) >= 6:
            room.turn(draft.event_id).stop_drafting(actor=Actor("mod@lab", Role.MODERATOR))
            return
        time.sleep(0.02)


def test_the_retry_prompt_says_once_what_happened() -> None:
    from conversation.rooms.prompt import STOPPED_WHILE_DRAFTING, denial_feedback

    stopped = denial_feedback([{"draft": OFFER, "reason": STOPPED_WHILE_DRAFTING, "by": "ann"}])
    assert stopped == (
        "Your previous reply was stopped before you finished it. "
        "Write a different message, or reply PASS."
    )
    denied = denial_feedback([{"draft": "Ten.\nBen: ok", "reason": "too pushy", "by": "mod"}])
    assert denied is not None
    assert denied.startswith('A moderator did not allow your previous draft ("Ten.\\nBen: ok").')
    assert "Their reason: too pushy." in denied
    assert "draft: " not in denied and "reason: reason" not in denied
    assert "no reason" in str(denial_feedback([{"draft": "x", "reason": None}]))
