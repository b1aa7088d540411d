"""The study's clock (issue 31): every stage's absence rule, the outage rule (time the service
was down is not absence), one write per transition, and the researcher's and the page's new
acts (end a conversation, the help thread, the stand-in disclosed)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

import storage
from conversation import study as S
from conversation.rooms.room import Room
from conversation.vocabulary import ExitStatus, ParticipantStage
from tests.conversation.study.helpers import launched, seated, to_lobby
from tests.support.clocks import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def timed(db_url: str, clock: FakeClock) -> Iterator[storage.Database]:
    """A database whose clock moves only when the test says so."""
    database = storage.Database(db_url, clock=clock)
    yield database
    database.dispose()


def _exits(db: storage.Database, study: Any) -> dict[int, tuple[str | None, str | None]]:
    return {
        int(p.id or 0): (p.exit_status, p.exit_code)
        for p in storage.list_participants(db, study.id)
    }


def test_every_stage_has_an_absence_rule_with_its_code_and_attrition_counts_it(
    timed: storage.Database, clock: FakeClock
) -> None:
    """Issue 31: people who closed the tab at the consent, the pre-survey, the lobby, the room
    or the post-survey each leave with their stage's exit status and code, and attrition
    counts them (it read 0% for a condition where none of three finished)."""
    db = timed
    study = launched(db, participants={"on_dropout": "continue"})
    a, b = seated(db, study.code, "a", "b")
    clock.advance(601)  # the room's time limit: both on to the post-survey
    for t in (a, b):
        S.heartbeat(db, t.token)
    S.tick(db, study.code)
    reading = S.join(db, study.code, {"PROLIFIC_PID": "reading"})
    surveying = S.join(db, study.code, {"PROLIFIC_PID": "surveying"})
    S.give_consent(db, surveying.token)
    c, d = seated(db, study.code, "c", "d")  # a second group, its people in the room
    waiting = to_lobby(db, study.code, "waiting")
    clock.advance(46)  # nobody says "still here" past the absence limit (45 s)
    report = S.tick(db, study.code)
    assert report.dropped == 7
    exits = _exits(db, study)
    assert exits[reading.participant_id] == ("abandoned", "CMUG0004")  # dropped's code
    assert exits[surveying.participant_id] == ("abandoned", "CMUG0004")
    assert exits[waiting.participant_id] == ("dropped", "CMUG0004")
    assert {exits[t.participant_id] for t in (a, b)} == {("unfinished", "CMUG0004")}
    assert {exits[t.participant_id] for t in (c, d)} == {("dropped", "CMUG0004")}
    logged = {e.participant_id: e for e in storage.study_events(db, study.id)}
    assert logged[reading.participant_id].data["where"] == "consent"
    monitor = S.study_monitor(db, study.code)
    rows = {r.condition: r for r in monitor.attrition}
    for t in (a, c):
        row = rows[str(storage.get_participant(db, t.participant_id).condition)]
        assert row.left == row.assigned and row.rate == 1.0 and row.completed == 0
    before = rows[S.BEFORE_ASSIGNMENT]
    assert (before.assigned, before.left) == (3, 3)
    assert before.left_by == {"abandoned": 2, "dropped": 1}
    assert all(r.idle_seconds is None for r in monitor.rows)  # they are done: nobody waits


def test_time_the_service_was_down_is_not_absence(
    timed: storage.Database, clock: FakeClock
) -> None:
    """Issue 31: while no app process beats, nobody is judged absent; once one beats again,
    absence counts from then: a person whose page reconnects stays, one who never comes back
    leaves only after the whole absence limit since the service came back."""
    db = timed
    study = launched(db, participants={"on_dropout": "agent"})
    S.note_service_up(db, restarted=True)
    stays, leaves = seated(db, study.code, "stays", "leaves")
    lobby = to_lobby(db, study.code, "lobby")
    for _ in range(3):  # the app serves them for a while
        clock.advance(2)
        S.note_service_up(db, restarted=False)
        for t in (stays, leaves, lobby):
            S.heartbeat(db, t.token)
    clock.advance(50)  # the app is killed: no beat, no heartbeat, for 50 s
    assert S.tick(db, study.code) == S.TickReport()  # the service is down: nobody judged
    S.note_service_up(db, restarted=True)  # the app is back (its first beat)
    assert S.tick(db, study.code).dropped == 0  # 52 s without a heartbeat, but 0 s of service
    for _ in range(10):  # two of them reconnect; one never does
        clock.advance(4)
        S.note_service_up(db, restarted=False)
        S.heartbeat(db, stays.token)
        S.heartbeat(db, lobby.token)
    assert S.tick(db, study.code).dropped == 0  # 40 s of service: within the limit
    for _ in range(2):
        clock.advance(4)
        S.note_service_up(db, restarted=False)
        S.heartbeat(db, stays.token)
        S.heartbeat(db, lobby.token)
    report = S.tick(db, study.code)  # 48 s of service without them: gone
    assert report.dropped == 1
    exits = _exits(db, study)
    assert exits[leaves.participant_id][0] == "dropped"
    assert exits[stays.participant_id] == (None, None) == exits[lobby.participant_id]
    dropped = next(e for e in storage.study_events(db, study.id) if e.kind == "dropped")
    assert 45 < dropped.data["absent_s"] < 52  # counted from the service's return


def test_a_database_outage_is_not_absence_either(timed: storage.Database, clock: FakeClock) -> None:
    """The app stays up but its beats fail while the database restarts: its first beat after
    that starts a new period (restarted), so the time of the outage counts against nobody."""
    db = timed
    study = launched(db)
    S.note_service_up(db, restarted=True)
    a, b = seated(db, study.code, "a", "b")
    clock.advance(40)  # the database is down: neither beats nor heartbeats land
    S.note_service_up(db, restarted=True)  # the beat's first success after a failure
    clock.advance(10)
    S.note_service_up(db, restarted=False)
    assert S.tick(db, study.code).dropped == 0  # 50 s without heartbeats, 10 s of service
    assert {S.participant_view(db, t.token).stage for t in (a, b)} == {"room"}


def _count_writes(db: storage.Database, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    writes: list[str] = []
    for name in ("write", "write_connection"):
        original = getattr(db, name)

        def counted(*args: Any, _original: Any = original, _name: str = name, **kw: Any) -> Any:
            writes.append(_name)
            return _original(*args, **kw)

        monkeypatch.setattr(db, name, counted)
    return writes


@pytest.mark.parametrize("rule", ["agent", "pause", "end", "continue"])
def test_a_dropout_its_seat_rule_and_its_events_are_one_write(
    db: storage.Database, monkeypatch: pytest.MonkeyPatch, rule: str
) -> None:
    study = launched(db, participants={"on_dropout": rule})
    stays, leaves = seated(db, study.code, "stays", "leaves")
    later = db.now() + timedelta(seconds=46)
    S.heartbeat(db, stays.token, now=later)
    writes = _count_writes(db, monkeypatch)
    assert S.tick(db, study.code, now=later).dropped == 1
    assert len(writes) == 1, writes  # was three: the exit, the room, the group and its event


def test_a_transition_that_fails_half_way_writes_nothing(
    db: storage.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Atomicity: the room's part of a dropout fails: the person, the group, the room and the
    log are all as they were, and the next tick does it whole."""
    study = launched(db, participants={"on_dropout": "agent"})
    stays, leaves = seated(db, study.code, "stays", "leaves")
    room_id = S.participant_view(db, leaves.token).room_id or 0
    events_before = len(storage.study_events(db, study.id))
    versions_before = len(Room(db, room_id).config_versions())
    later = db.now() + timedelta(seconds=46)
    S.heartbeat(db, stays.token, now=later)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the disk is full")

    monkeypatch.setattr("storage.studies.transitions._change_on", broken)
    with pytest.raises(RuntimeError):
        S.tick(db, study.code, now=later)
    assert S.participant_view(db, leaves.token).stage == "room"
    assert len(storage.study_events(db, study.id)) == events_before
    assert "agent" not in storage.list_groups(db, study.id)[0].seats.values()
    assert len(Room(db, room_id).config_versions()) == versions_before
    monkeypatch.undo()
    assert S.tick(db, study.code, now=later).dropped == 1
    assert "agent" in storage.list_groups(db, study.id)[0].seats.values()


def test_the_researcher_ends_a_conversation_now(db: storage.Database) -> None:
    """Issue 31: Stop was disabled on a settled room and the monitor had no action: the
    group's conversation ends now and its people go to the post-survey."""
    study = launched(db)
    a, b = seated(db, study.code, "a", "b")
    view = S.participant_view(db, a.token)
    Room(db, view.room_id or 0).run(3)  # the mediator answers: the room settles
    (group,) = S.study_monitor(db, study.code).groups
    assert S.end_conversation(db, study.code, group.group_id)
    assert not S.end_conversation(db, study.code, group.group_id)  # already ended
    assert {S.participant_view(db, t.token).stage for t in (a, b)} == {"post_survey"}
    room = Room(db, view.room_id or 0)
    assert room.status == "stopped" and room.stop_reason == "ended by the researcher"
    ended = [e for e in storage.study_events(db, study.id) if e.kind == "room_ended"]
    assert ended[0].data["reason"] == "ended by the researcher"
    from conversation.access import Actor, Role
    from conversation.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        S.end_conversation(db, study.code, group.group_id, actor=Actor("o@x.org", Role.OBSERVER))


def test_the_help_thread_is_shown_and_marked_read(db: storage.Database) -> None:
    """Issue 31: the monitor counted a participant's help reply as unread but showed its text
    nowhere: the thread reads both ways and reading it clears the count."""
    study = launched(db)
    token = to_lobby(db, study.code, "asks")
    S.message_researcher(db, token.token, "The page is slow")
    S.message_participant(db, study.code, token.participant_id, "Thanks, looking into it")
    S.message_researcher(db, token.token, "Now it works")
    S.message_researcher(db, token.token, "Thank you!")
    row = S.study_monitor(db, study.code).rows[0]
    assert row.help_unread == 2
    thread = S.help_thread(db, study.code, token.participant_id)
    assert [(m.from_researcher, m.text) for m in thread] == [
        (False, "The page is slow"),
        (True, "Thanks, looking into it"),
        (False, "Now it works"),
        (False, "Thank you!"),
    ]
    assert S.mark_help_read(db, study.code, token.participant_id) == 2
    assert S.study_monitor(db, study.code).rows[0].help_unread == 0
    assert S.mark_help_read(db, study.code, token.participant_id) == 0  # nothing more to mark
    S.message_researcher(db, token.token, "One more thing")
    assert S.study_monitor(db, study.code).rows[0].help_unread == 1


def test_an_ai_stand_in_after_a_lobby_timeout_is_disclosed(db: storage.Database) -> None:
    """Issue 31: the consent promised another participant; a seat an agent plays from the
    start (the lobby timed out) is said, as a dropout's stand-in is."""
    study = launched(db, lobby={"on_timeout": "agents", "timeout_seconds": 60})
    token = to_lobby(db, study.code, "alone")
    later = db.now() + timedelta(seconds=61)
    S.heartbeat(db, token.token, now=later)
    assert S.tick(db, study.code, now=later).timed_out == 1
    view = S.participant_view(db, token.token)
    other = "Seller" if view.seat == "Buyer" else "Buyer"
    assert view.notice == f"No other participant could join in time: an AI agent plays {other}."


def test_tick_all_ticks_the_studies_with_someone_on_their_path(db: storage.Database) -> None:
    quiet = launched(db)
    busy = launched(db)
    to_lobby(db, busy.code, "p1")
    to_lobby(db, busy.code, "p2")
    assert storage.active_study_codes(db) == [busy.code]
    assert S.tick_all(db) == {busy.code: S.TickReport(formed=1)}
    assert S.tick_all(db) == {}  # nothing due: nothing reported
    assert quiet.code not in storage.active_study_codes(db)


def test_two_clocks_never_end_a_group_one_of_them_read_as_empty(db: storage.Database) -> None:
    """Two clocks (the app's runner and a worker) tick at once: one reads the lobby before the
    other forms a group, then sees the new group with nobody in it. Ending it "because every
    participant has left" is refused in the write (found with 24 people on PostgreSQL: whole
    rooms stopped at their start)."""
    from conversation.study.clock.ticks import EVERYONE_LEFT, finish_group
    from conversation.study.record import get_study, study_definition

    study = launched(db)
    a, b = seated(db, study.code, "a", "b")
    (group,) = storage.list_groups(db, study.id)
    definition = study_definition(db, get_study(db, study.code))
    stale = finish_group(db, definition, group, [], EVERYONE_LEFT, db.now(), only_if_empty=True)
    assert stale is False
    assert storage.list_groups(db, study.id)[0].status == "running"
    assert Room(db, S.participant_view(db, a.token).room_id or 0).status != "stopped"


def test_an_absence_judged_from_an_older_read_is_no_move_after_a_heartbeat(
    db: storage.Database,
) -> None:
    from conversation.study.clock.seats import leave
    from conversation.study.record import get_study, study_definition

    study = launched(db)
    token = to_lobby(db, study.code, "back")
    read = storage.get_participant(db, token.participant_id)  # the clock's read
    S.heartbeat(db, token.token, now=read.last_seen_at + timedelta(seconds=1))  # then a beat
    definition = study_definition(db, get_study(db, study.code))
    gone = leave(
        db,
        definition,
        read,
        ExitStatus.DROPPED,
        ParticipantStage.LOBBY,
        {},
        db.now(),
        seen_before=read.last_seen_at,
    )
    assert gone is False
    assert S.participant_view(db, token.token).stage == "lobby"
