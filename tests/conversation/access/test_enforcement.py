"""The engine's API refuses what the actor's role lacks, before anything is written, and records
who did each human act (the audit trail): messages, approvals, edits, denials, pause, resume, stop,
fork. ``actor=None`` (every existing call) keeps full rights."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import storage
from conversation import experiments as ex
from conversation import library
from conversation.access import Actor, Role
from conversation.analysis.questions import analyze, question_from_spec
from conversation.exceptions import PermissionDenied
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.log import log_view
from conversation.rooms.room import Room
from conversation.rooms.turn import Turn
from storage import Database
from tests.support.databases import row_counts
from tests.support.room_common import drive_with, scripted_model

AGENTS = [{"name": "Alice"}, {"name": "Bob"}]
TABLES = ("experiments", "rooms", "events", "agent_profiles", "analyses", "analysis_answers")
OBSERVER = Actor("olga@lab.org", Role.OBSERVER, signed_in=True)
MODERATOR = Actor("mo@lab.org", Role.MODERATOR, signed_in=True)
RESEARCHER = Actor("ana@lab.org", Role.RESEARCHER, signed_in=True)
TEMPLATE = {
    "agents": AGENTS,
    "planner": {"kind": "round_robin", "transitions": None},
    "termination": {"kind": "max_turns", "max_turns": 2},
    "model": {"service": "offline", "model": "offline", "parameters": {"seed": 1}},
    "moderated": False,
    "prompt_template": None,
    "context": None,
    "opening": "Negotiate.",
}


def waiting_room(db: Database) -> tuple[Room, Turn]:
    """A moderated room whose first draft waits for approval."""
    room = Room.create(
        db, name="moderated", agents=AGENTS, planner=RoundRobinRoomPlanner(1), moderated=True
    )
    drive_with(room, scripted_model())
    room.post("start")
    draft = room.step()
    assert draft is not None and draft.state == "waiting"
    return room, draft


def refused(db_url: str, act: Callable[[], Any]) -> PermissionDenied:
    """``act()`` raises PermissionDenied and no table changed."""
    before = row_counts(db_url, TABLES)
    with pytest.raises(PermissionDenied) as caught:
        act()
    assert row_counts(db_url, TABLES) == before
    return caught.value


# -- refusals -------------------------------------------------------------------------------------

ROOM_ACTS: dict[str, Callable[[Room, Turn, Actor], Any]] = {
    "post": lambda room, turn, who: room.post("hello", speaker="olga", actor=who),
    "approve": lambda room, turn, who: turn.approve(actor=who),
    "edit": lambda room, turn, who: turn.approve("better", actor=who),
    "deny": lambda room, turn, who: turn.deny("no", actor=who),
    "pass": lambda room, turn, who: turn.stop(actor=who),
    "pause": lambda room, turn, who: room.pause(actor=who),
    "stop": lambda room, turn, who: room.stop(actor=who),
    "fork": lambda room, turn, who: room.fork(1, actor=who),
}


@pytest.mark.parametrize("act", list(ROOM_ACTS))
def test_an_observer_cannot_post_moderate_or_control(db: Database, db_url: str, act: str) -> None:
    room, turn = waiting_room(db)
    denied = refused(db_url, lambda: ROOM_ACTS[act](room, turn, OBSERVER))
    assert denied.actor == "olga@lab.org"
    assert (room.status, turn.refresh().state) == ("waiting", "waiting")


def test_a_moderator_cannot_fork_but_can_post_moderate_and_control(
    db: Database, db_url: str
) -> None:
    room, turn = waiting_room(db)
    assert refused(db_url, lambda: room.fork(1, actor=MODERATOR)).needed == "researcher"
    turn.approve(actor=MODERATOR)
    room.post("more", speaker="mo", actor=MODERATOR)
    room.pause(actor=MODERATOR)
    room.resume(actor=MODERATOR)
    room.stop(actor=MODERATOR)
    assert room.status == "stopped"


def test_creating_rooms_needs_a_researcher(db: Database, db_url: str) -> None:
    for actor in (OBSERVER, MODERATOR):
        refused(db_url, lambda a=actor: Room.create(db, name="r", agents=AGENTS, actor=a))
        refused(
            db_url,
            lambda a=actor: Room.import_messages(
                db, [{"speaker": "user", "content": "hi"}], agents=AGENTS, actor=a
            ),
        )
    made = Room.create(db, name="r", agents=AGENTS, actor=RESEARCHER)
    assert made.status == "idle"


def test_experiments_need_a_researcher_and_stopping_one_a_moderator(
    db: Database, db_url: str
) -> None:
    config = ex.design(TEMPLATE, ex.crossed_conditions([("Alice", "mood", ["calm"])]), 1)
    for actor in (OBSERVER, MODERATOR):
        refused(db_url, lambda a=actor: ex.create(db, "e", config, actor=a))
    experiment_id = ex.create(db, "e", config, actor=RESEARCHER)
    refused(db_url, lambda: ex.stop(db, experiment_id, actor=OBSERVER))
    assert ex.stop(db, experiment_id, actor=MODERATOR) == 1
    (room,) = storage.list_rooms(db, experiment_id=experiment_id)
    notice = storage.events(db, int(room.id or 0))[-1]
    assert notice.data["by"] == "mo@lab.org"


def test_the_agent_library_needs_a_researcher(db: Database, db_url: str) -> None:
    for actor in (OBSERVER, MODERATOR):
        refused(db_url, lambda a=actor: library.create_profile(db, "Zed", actor=a))
    profile = library.create_profile(db, "Zed", traits={"mood": "calm"}, actor=RESEARCHER)
    for actor in (OBSERVER, MODERATOR):
        refused(db_url, lambda a=actor: library.update_profile(db, profile, name="Z", actor=a))
        refused(db_url, lambda a=actor: library.delete_profile(db, profile, actor=a))
    library.update_profile(db, profile, instruction="Be brief.", actor=RESEARCHER)
    assert library.delete_profile(db, profile, actor=RESEARCHER)
    assert library.create_profile(db, "Local") > 0  # no actor: the local user


def test_analysis_runs_need_a_researcher() -> None:
    question = question_from_spec({"type": "yes_no", "name": "deal", "text": "Deal?"})
    scenarios = [{"transcript": "Alice: deal"}]
    for actor in (OBSERVER, MODERATOR):
        with pytest.raises(PermissionDenied, match="run analyses"):
            analyze([question], scenarios, actor=actor)
    assert len(analyze([question], scenarios, actor=RESEARCHER).rows) == 1


# -- the audit trail ------------------------------------------------------------------------------


def test_every_human_act_records_who(db: Database) -> None:
    room, draft = waiting_room(db)
    original = draft.event.content
    message = room.post("a word from the moderator", speaker="mo", actor=MODERATOR)
    assert message.data == {"by": "mo@lab.org"} and message.created_at is not None
    draft.approve("an edited reply", actor=MODERATOR)
    data = draft.refresh().event.data
    assert data["draft"] == original and data["edited_by"] == "mo@lab.org"
    assert [(d["verb"], d["by"]) for d in data["decisions"]] == [("edit", "mo@lab.org")]
    assert all(d["at"] for d in data["decisions"])

    second = room.step()
    assert second is not None and second.state == "waiting"
    second.deny("too long", actor=RESEARCHER)
    denial = second.refresh().event.data["denials"][0]
    assert (denial["reason"], denial["by"]) == ("too long", "ana@lab.org")

    room.pause(actor=MODERATOR)
    room.resume(actor=RESEARCHER)
    room.stop("enough", actor=MODERATOR)
    fork = room.fork(1, actor=RESEARCHER)
    notices = [e for e in room.events() if e.kind == "system"]
    assert [(e.data["event"], e.data["by"]) for e in notices] == [
        ("paused", "mo@lab.org"),
        ("resumed", "ana@lab.org"),
        ("stopped", "mo@lab.org"),
    ]
    assert [e.content for e in notices[:2]] == ["Paused by mo@lab.org.", "Resumed by ana@lab.org."]
    forked = fork.events()[-1]
    assert (forked.data["event"], forked.data["by"]) == ("forked", "ana@lab.org")


def test_without_an_actor_the_speaker_or_by_is_recorded(db: Database) -> None:
    room, draft = waiting_room(db)
    assert room.events()[0].data == {"by": "user"}
    assert room.post("hi", speaker="ann").data == {"by": "ann"}
    draft.approve(by="ann")
    assert draft.refresh().event.data["decisions"][-1]["by"] == "ann"
    room.pause(by="ann")
    assert room.events()[-1].data == {"event": "paused", "by": "ann"}


def test_audit_notices_are_not_shown_to_agents_and_change_no_count(
    db: Database, tmp_path: Path
) -> None:
    def started(record: Path) -> Room:
        room = Room.create(db, name="r", agents=AGENTS, planner=RoundRobinRoomPlanner(2))
        drive_with(room, scripted_model(record))
        room.post("start")
        return room

    control, room = started(tmp_path / "control.jsonl"), started(tmp_path / "paused.jsonl")
    before = log_view(room.config.names, room.events())
    room.pause(actor=MODERATOR)
    room.resume(actor=MODERATOR)
    after = log_view(room.config.names, room.events())
    assert (after.events, after.resumed_at) == (before.events, before.resumed_at)
    assert len(room.events()) == 3
    # the same turns as in a room nobody paused, and no prompt mentions the pause
    taken, expected = room.run(), control.run()
    assert [t.speaker for t in taken] == [t.speaker for t in expected] and len(taken) >= 2
    prompts = (tmp_path / "paused.jsonl").read_text()
    assert prompts.count("\n") == len(taken)
    assert "Paused" not in prompts and "Resumed" not in prompts and "mo@lab.org" not in prompts


def test_managing_coding_and_rerunning_need_the_researcher_role(db: Database, db_url: str) -> None:
    from conversation.analysis import coding
    from conversation.rooms import manage

    room = Room.create(db, name="kept", agents=AGENTS)
    room.post("hello")
    event_id = room.events()[0].id
    experiment = ex.create(db, "study", ex.design(TEMPLATE, [ex.Condition("a", {})], 1))
    before = row_counts(db_url, (*TABLES, "message_tags", "code_labels"))
    for someone in (OBSERVER, MODERATOR):
        for act in (
            lambda a: manage.rename_room(db, room.id, "renamed", actor=a),
            lambda a: manage.archive_room(db, room.id, actor=a),
            lambda a: manage.delete_room(db, room.id, actor=a),
            lambda a: ex.rename_experiment(db, experiment, "renamed", actor=a),
            lambda a: ex.delete_experiment(db, experiment, actor=a),
            lambda a: ex.rerun_experiment(db, experiment, actor=a),
            lambda a: coding.add_label(db, "offer", room_id=room.id, actor=a),
            lambda a: coding.tag_message(db, event_id, "offer", by=a.identity, actor=a),
        ):
            with pytest.raises(PermissionDenied):
                act(someone)
    assert row_counts(db_url, (*TABLES, "message_tags", "code_labels")) == before
    assert storage.get_room(db, room.id).name == "kept"
    manage.rename_room(db, room.id, "renamed", actor=RESEARCHER)
    coding.add_label(db, "offer", room_id=room.id, actor=RESEARCHER)
    coding.tag_message(db, event_id, "offer", by=RESEARCHER.identity, actor=RESEARCHER)
    assert storage.get_room(db, room.id).name == "renamed"
