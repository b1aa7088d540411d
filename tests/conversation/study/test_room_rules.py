"""The room's time, message and turn rules for people (issue 33), through the public API: a
minimum time before anyone may leave, a minimum and a maximum of messages per person, ordered
rooms whose order is fixed or drawn anew each cycle from the group's recorded seed, and rules
per condition."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import storage
from conversation import study as S
from conversation.study.clock.turns import cycle_order
from tests.conversation.study.helpers import definition_dict, launched, seated


def _room_view(db: storage.Database, token: S.ParticipantToken, **kw: Any) -> S.ParticipantView:
    view = S.participant_view(db, token.token, **kw)
    assert view.stage == "room" and view.limits is not None
    return view


def test_before_the_minimum_time_nobody_leaves_and_the_page_says_how_long(
    db: storage.Database,
) -> None:
    study = launched(db, room={"min_seconds": 120})
    a, b = seated(db, study.code, "p1", "p2")
    group = storage.get_group(db, storage.get_participant(db, a.participant_id).group_id)
    start = group.started_at
    early = _room_view(db, a, now=start + timedelta(seconds=30))
    assert early.limits.leave_in == pytest.approx(90)
    assert not early.limits.can_leave
    assert early.limits.leave_refusal == "You can leave in 1:30."
    assert early.changes_at == start + timedelta(seconds=120)  # the page redraws then
    with pytest.raises(S.NotNow, match=r"You can leave in 1:30\."):
        S.leave_room(db, a.token, now=start + timedelta(seconds=30))
    later = start + timedelta(seconds=121)
    assert _room_view(db, a, now=later).limits.can_leave
    after = S.leave_room(db, a.token, now=later)
    assert after.stage == "post_survey"
    partner = _room_view(db, b)
    assert partner.notice is not None and "participant left" in partner.notice
    kinds = [e["kind"] for e in S.study_events_table(db, study.code)]
    assert "left_room" in kinds and "seat_left" in kinds


def test_below_the_minimum_of_messages_a_person_cannot_leave(db: storage.Database) -> None:
    study = launched(db, room={"min_messages": 2})
    a, _ = seated(db, study.code, "p1", "p2")
    view = _room_view(db, a)
    assert view.limits.messages_needed == 2 and view.limits.can_leave is False
    with pytest.raises(S.NotNow, match="Please send 2 more messages before you leave"):
        S.leave_room(db, a.token)
    S.post_as_participant(db, a.token, "I offer $5.")
    with pytest.raises(S.NotNow, match="Please send 1 more message before you leave"):
        S.leave_room(db, a.token)
    S.post_as_participant(db, a.token, "Or $6.")
    assert _room_view(db, a).limits.messages_sent == 2
    assert S.leave_room(db, a.token).stage == "post_survey"


def test_at_the_maximum_of_messages_the_box_closes_with_its_reason(db: storage.Database) -> None:
    study = launched(db, room={"max_messages": 2})
    a, b = seated(db, study.code, "p1", "p2")
    assert _room_view(db, a).limits.messages_left == 2
    S.post_as_participant(db, a.token, "one")
    S.post_as_participant(db, a.token, "two")
    view = _room_view(db, a)
    assert view.limits.messages_left == 0
    reason = "You have sent the most messages allowed here (2)."
    assert view.limits.closed_reason == reason
    with pytest.raises(S.NotNow, match=r"the most messages allowed here \(2\)"):
        S.post_as_participant(db, a.token, "three")
    assert _room_view(db, b).limits.closed_reason is None  # the cap is per person
    S.post_as_participant(db, b.token, "mine")


def test_an_ordered_room_says_whose_turn_it_is_and_closes_the_box_of_the_others(
    db: storage.Database,
) -> None:
    study = launched(db, room={"turns": "ordered"})
    a, b = seated(db, study.code, "p1", "p2")
    views = {t.token: _room_view(db, t) for t in (a, b)}
    first = next(t for t in (a, b) if views[t.token].your_turn)
    second = b if first is a else a
    mine, theirs = views[first.token], views[second.token]
    assert mine.limits.turn_banner == "Your turn" and mine.limits.closed_reason is None
    assert theirs.limits.turn_banner == f"Waiting for {mine.seat}"
    assert theirs.limits.closed_reason == f"It is {mine.seat}'s turn."
    with pytest.raises(S.NotNow, match=f"It is {mine.seat}'s turn"):
        S.post_as_participant(db, second.token, "me first")
    S.post_as_participant(db, first.token, "Hello")
    assert _room_view(db, second).limits.turn_banner == "Your turn"


def test_a_drawn_order_is_drawn_anew_each_cycle_from_the_groups_recorded_seed(
    db: storage.Database,
) -> None:
    study = launched(
        db,
        room={"turns": "ordered", "turn_order": "drawn"},
        experiment={
            "template": {
                "opening": "Welcome.",
                "planner": {"kind": "round_robin_room", "max_rounds": 1},
                "agents": [{"name": n} for n in ("A", "B", "C", "Mediator")],
            },
            "conditions": [{"label": "three", "seats": ["A", "B", "C"]}],
            "groups": 1,
        },
        pre_survey=[],
    )
    tokens = {}
    for pid in ("p1", "p2", "p3"):
        token = S.join(db, study.code, {"PROLIFIC_PID": pid})
        S.give_consent(db, token.token)
        tokens[pid] = token
    S.tick(db, study.code)
    by_seat = {_room_view(db, t).seat: t for t in tokens.values()}
    group = storage.list_groups(db, study.id)[0]
    seed = group.assignment["seed"]
    spoken = []
    for cycle in range(3):
        expected = cycle_order(["A", "B", "C"], seed, cycle)
        for seat in expected:
            due = [s for s, t in by_seat.items() if _room_view(db, t).your_turn]
            assert due == [seat]
            S.post_as_participant(db, by_seat[seat].token, f"{seat} in cycle {cycle}")
            spoken.append(seat)
    orders = [tuple(spoken[i : i + 3]) for i in (0, 3, 6)]
    assert len(set(orders)) > 1  # drawn anew: not the same order every cycle


def test_a_condition_has_its_own_rules() -> None:
    data = definition_dict(room={"max_messages": 5})
    data["experiment"]["conditions"][1]["room"] = {"max_messages": 1, "min_seconds": 10}
    definition = S.definition_from_dict(data)
    first, second = (c.label for c in definition.conditions)
    assert definition.room_rules(first).max_messages == 5
    assert definition.room_rules(second).max_messages == 1
    assert definition.room_rules(second).min_seconds == 10
    assert definition.room_rules(second).time_limit_seconds == 600  # the study's own
