"""Everything time-driven (``tick``): assignment records, lobby timeouts, dropouts by the study's
rule, time limits, exits; and the researcher's acts."""

from __future__ import annotations

from datetime import timedelta

import pytest

import storage
from conversation import study as S
from conversation.rooms.room import Room
from tests.conversation.study.helpers import launched, seated, to_lobby


def _events(db, study, kind):  # type: ignore[no-untyped-def]
    return [e for e in storage.study_events(db, study.id) if e.kind == kind]


def test_assignment_is_balanced_and_recorded_with_its_seed_and_eligible_set(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    reading = S.join(db, study.code, {"PROLIFIC_PID": "slow"})
    tokens = [to_lobby(db, study.code, f"p{i}") for i in range(8)]
    assert S.tick(db, study.code).formed == 4
    groups = storage.list_groups(db, study.id)
    assert sorted(g.condition for g in groups) == ["firm mediator"] * 2 + ["friendly mediator"] * 2
    first = groups[0].assignment
    assert first["eligible_participants"] == [t.participant_id for t in tokens]
    assert first["eligible_conditions"] == ["friendly mediator", "firm mediator"]
    assert first["group_index"] == 1 and first["counts_before"] == {}
    replay = S.draw_group(
        [("friendly mediator", ["Buyer", "Seller"]), ("firm mediator", ["Buyer", "Seller"])],
        {},
        2,
        [t.participant_id for t in tokens],
        study.seed,
    )
    assert replay is not None and replay.condition == groups[0].condition
    assert replay.seats == groups[0].seats
    assigned = _events(db, study, "assigned")
    assert len(assigned) == 8 and all(e.data["seed"] for e in assigned)
    # Every group formed: the study is full for a ninth person; one who was still reading the
    # consent is told so when they consent, with the lobby-timeout code.
    with pytest.raises(S.StudyRefused) as full:
        S.join(db, study.code, {"PROLIFIC_PID": "p9"})
    assert full.value.reason == "full"
    assert S.join(db, study.code, {"PROLIFIC_PID": "p0"}).resumed
    S.give_consent(db, reading.token)
    home = S.participant_view(db, reading.token).exit
    assert home is not None and home.status == "lobby_timeout"


def test_lobby_timeout_sends_home_with_its_code(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, lobby={"on_timeout": "home", "timeout_seconds": 60})
    token = to_lobby(db, study.code, "alone")
    later = db.now() + timedelta(seconds=61)
    S.heartbeat(db, token.token, now=later)
    assert S.tick(db, study.code, now=later).timed_out == 1
    view = S.participant_view(db, token.token)
    assert view.exit is not None and (view.exit.status, view.exit.code) == (
        "lobby_timeout",
        "CMUG0003",
    )


def test_lobby_timeout_fills_the_empty_seats_with_agents(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, lobby={"on_timeout": "agents", "timeout_seconds": 60})
    token = to_lobby(db, study.code, "alone")
    later = db.now() + timedelta(seconds=61)
    S.heartbeat(db, token.token, now=later)
    assert S.tick(db, study.code, now=later).timed_out == 1
    view = S.participant_view(db, token.token)
    assert view.stage == "room"
    group = storage.list_groups(db, study.id)[0]
    other = "Seller" if view.seat == "Buyer" else "Buyer"
    assert group.seats[other] == "agent" and group.assignment["filled_with_agents"] == [other]
    assert other in Room(db, view.room_id or 0).config.names  # the stand-in plays the seat
    assert _events(db, study, "filled_with_agents")[0].data["seats"] == [other]


def test_someone_gone_from_the_lobby_is_not_seated(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    gone = to_lobby(db, study.code, "gone")
    later = db.now() + timedelta(seconds=50)
    here = to_lobby(db, study.code, "here")
    S.heartbeat(db, here.token, now=later)
    report = S.tick(db, study.code, now=later)
    assert report.dropped == 1 and report.formed == 0
    assert S.participant_view(db, gone.token).exit.status == "dropped"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("rule", "room_status", "kind"),
    [
        ("agent", None, "seat_taken_by_agent"),
        ("pause", "paused", "room_paused"),
        ("continue", None, "seat_left"),
        ("end", "stopped", "room_stopped"),
    ],
)
def test_a_dropout_is_handled_by_the_studys_rule(db, rule, room_status, kind) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, participants={"on_dropout": rule})
    stays, leaves = seated(db, study.code, "stays", "leaves")
    leaver = S.participant_view(db, leaves.token)
    later = db.now() + timedelta(seconds=46)
    S.heartbeat(db, stays.token, now=later)
    report = S.tick(db, study.code, now=later)
    assert report.dropped == 1
    assert S.participant_view(db, leaves.token).exit.code == "CMUG0004"  # type: ignore[union-attr]
    room = Room(db, leaver.room_id or 0)
    if room_status:
        assert room.status == room_status
    assert (leaver.seat in room.config.names) == (rule == "agent")
    event = _events(db, study, kind)[0]
    assert event.data["seat"] == leaver.seat and event.at is not None
    dropped = _events(db, study, "dropped")[0]
    assert dropped.data["rule"] == rule and dropped.data["absent_s"] >= 45
    if rule != "end":
        assert leaver.seat in (S.participant_view(db, stays.token).notice or "")


def test_time_limit_ends_the_room_then_post_survey_then_completed(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    a, b = seated(db, study.code, "a", "b")
    room_id = S.participant_view(db, a.token).room_id or 0
    later = db.now() + timedelta(seconds=601)
    for t in (a, b):
        S.heartbeat(db, t.token, now=later)
    assert S.tick(db, study.code, now=later).ended == 1
    assert Room(db, room_id).status == "stopped"
    view = S.participant_view(db, a.token)
    assert view.stage == "post_survey" and [q["question_name"] for q in view.questions] == [
        "satisfaction",
        "mediator_opinion",
    ]
    with pytest.raises(S.WrongStage):
        S.post_as_participant(db, a.token, "one more thing")
    done = S.answer_survey(db, a.token, {"satisfaction": "4", "mediator_opinion": "fine"})
    assert (
        done.exit is not None and done.exit.status == "completed" and done.exit.code == "CMUG0001"
    )
    assert storage.get_participant(db, a.participant_id).post_survey == {
        "satisfaction": 4,
        "mediator_opinion": "fine",
    }


def test_a_failed_room_exits_with_the_error_code(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    a, _ = seated(db, study.code, "a", "b")
    room_id = S.participant_view(db, a.token).room_id or 0
    storage.update_room(db, room_id, status="failed", stop_reason="the model is gone")
    assert S.tick(db, study.code).ended == 1
    view = S.participant_view(db, a.token)
    assert view.exit is not None and view.exit.status == "error" and view.exit.code == "CMUG0006"


def test_remove_participant_and_the_monitor_and_attrition(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, participants={"on_dropout": "agent"})
    a, b = seated(db, study.code, "a", "b")
    waiting = to_lobby(db, study.code, "c")
    assert S.remove_participant(db, study.code, a.participant_id, reason="abusive")
    assert not S.remove_participant(db, study.code, a.participant_id)
    assert S.participant_view(db, a.token).exit.status == "removed"  # type: ignore[union-attr]
    monitor = S.study_monitor(db, study.code)
    where = {r.participant_id: r.where for r in monitor.rows}
    assert where == {
        a.participant_id: "done",
        b.participant_id: "room",
        waiting.participant_id: "lobby",
    }
    assert (monitor.lobby, monitor.in_rooms, monitor.done) == (1, 1, 1)
    (group,) = monitor.groups
    assert "agent" in group.seats.values()
    condition = group.condition
    row = next(r for r in monitor.attrition if r.condition == condition)
    assert (row.assigned, row.dropped) == (2, 0)
    idle = S.study_monitor(db, study.code, now=db.now() + timedelta(seconds=30))
    assert {r.where for r in idle.rows if r.participant_id != a.participant_id} == {"idle"}
    with pytest.raises(Exception, match="not in study"):
        S.message_participant(db, study.code, 999, "hi")


def test_wilson_interval() -> None:
    from conversation.study.researcher.attrition import wilson

    low, high = wilson(2, 10)
    assert low == pytest.approx(0.0567, abs=1e-3) and high == pytest.approx(0.5098, abs=1e-3)
    assert wilson(0, 0) == (None, None)


def test_ordered_turns_wait_for_each_seat_and_skip_on_timeout(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, room={"turns": "ordered", "turn_seconds": 30, "on_turn_timeout": "nudge"})
    a, b = seated(db, study.code, "a", "b")
    room = Room(db, S.participant_view(db, a.token).room_id or 0)
    room.run(5)  # the mediator answers the opening, then the room waits for people
    views = {t.token: S.participant_view(db, t.token) for t in (a, b)}
    first = next(v for v in views.values() if v.your_turn)
    assert first.seat == "Buyer" and sum(v.your_turn for v in views.values()) == 1
    later = db.now() + timedelta(seconds=31)
    for t in (a, b):
        S.heartbeat(db, t.token, now=later)
    S.tick(db, study.code, now=later)
    (timeout,) = _events(db, study, "turn_timeout")
    assert timeout.data["seat"] == "Buyer"
    after = {v.seat: S.participant_view(db, tok) for tok, v in views.items()}
    assert after["Seller"].your_turn and not after["Buyer"].your_turn
    assert after["Buyer"].help[-1].text.startswith("It is your turn")


def test_a_room_everyone_left_is_stopped(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db, participants={"on_dropout": "agent"})
    a, b = seated(db, study.code, "a", "b")
    room_id = S.participant_view(db, a.token).room_id or 0
    later = db.now() + timedelta(seconds=46)
    report = S.tick(db, study.code, now=later)
    assert report.dropped == 2 and report.ended == 1
    room = Room(db, room_id)
    assert room.status == "stopped" and room.stop_reason == "every participant has left"
    assert storage.list_groups(db, study.id)[0].status == "ended"
