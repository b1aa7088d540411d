"""Studies in storage, on SQLite and PostgreSQL: the races that matter (two people joining a
study with one place left, the same PROLIFIC_PID from several tabs at once, several lobby ticks
at once) and the conditional updates they rely on."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

import storage
from conversation import study as S
from tests.conversation.study.helpers import launched, to_lobby


def _at_once(count: int, call):  # type: ignore[no-untyped-def]
    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(call, i) for i in range(count)]
        outcomes = []
        for future in futures:
            try:
                outcomes.append(future.result(timeout=120))
            except S.StudyRefused as exc:
                outcomes.append(exc)
        return outcomes


def test_two_people_consenting_for_the_last_place_at_once(db: storage.Database) -> None:
    """The cap counts people who consented: both may join and read the consent; of two
    consenting at once for the last place, one takes it and the other is told it is full."""
    study = launched(db, participants={"cap": 1})
    people = [S.join(db, study.code, {"PROLIFIC_PID": f"p{i}"}) for i in range(2)]
    views = _at_once(2, lambda i: S.give_consent(db, people[i].token))
    assert sorted(v.stage for v in views) == ["exit", "pre_survey"]
    (home,) = [v for v in views if v.stage == "exit"]
    assert home.exit is not None and home.exit.status == "lobby_timeout"
    with pytest.raises(S.StudyRefused) as refused:
        S.join(db, study.code, {"PROLIFIC_PID": "p2"})
    assert refused.value.reason == "full"
    assert len(storage.list_participants(db, study.id)) == 2


def test_the_same_pid_from_several_tabs_at_once_is_one_participant(db: storage.Database) -> None:
    study = launched(db)
    tokens = _at_once(4, lambda i: S.join(db, study.code, {"PROLIFIC_PID": "same"}))
    assert len({t.participant_id for t in tokens}) == 1
    assert sum(not t.resumed for t in tokens) == 1
    assert len(storage.list_participants(db, study.id)) == 1
    assert {S.participant_view(db, t.token).pseudonym for t in tokens} == {tokens[0].pseudonym}


def test_lobby_ticks_at_once_seat_everyone_once(db: storage.Database) -> None:
    study = launched(db)
    people = [to_lobby(db, study.code, f"p{i}") for i in range(6)]
    _at_once(3, lambda i: S.tick(db, study.code))
    S.tick(db, study.code)  # a tick that lost a race leaves the rest to the next one
    groups = storage.list_groups(db, study.id)
    assert len(groups) == 3
    seated = [h for g in groups for h in g.seats.values()]
    assert sorted(seated) == sorted(p.participant_id for p in people)
    rooms = {g.room_id for g in groups}
    assert len(rooms) == 3 and None not in rooms
    assert len(storage.list_rooms(db, experiment_id=study.experiment_id, limit=None)) == 3


def test_a_stage_change_is_made_once(db: storage.Database) -> None:
    study = launched(db)
    token = S.join(db, study.code, {})
    moves = _at_once(
        3,
        lambda i: storage.update_participant(
            db,
            token.participant_id,
            expected_stages={"consent"},
            stage="pre_survey",
            event=("consented", None),
        ),
    )
    assert sum(m is not None for m in moves) == 1
    assert len(storage.study_events(db, study.id, kinds={"consented"})) == 1


def test_an_unknown_token_and_an_unknown_study(db: storage.Database) -> None:
    with pytest.raises(storage.ParticipantNotFound):
        storage.participant_by_token(db, "0" * 64)
    with pytest.raises(storage.StudyNotFound):
        storage.get_study(db, "nope")


def test_tokens_are_stored_as_hashes_only(db: storage.Database) -> None:
    import sqlalchemy as sa

    study = launched(db)
    token = S.join(db, study.code, {"PROLIFIC_PID": "p"})
    with db.read_connection() as conn:
        dump = repr(
            [
                conn.execute(sa.text(f"SELECT * FROM {t}")).all()
                for t in ("study_tokens", "study_participants", "study_events", "studies")
            ]
        )
    assert token.token not in dump


def test_a_whole_path_with_a_dropout_and_the_time_limit(db: storage.Database) -> None:
    """Every storage function of a study's life on this backend: a group formed, a dropout
    whose seat an agent takes, the time limit, the post-survey, the exports."""
    from datetime import timedelta

    from conversation.rooms.room import Room
    from tests.conversation.study.helpers import seated

    study = launched(db, participants={"on_dropout": "agent"})
    stays, leaves = seated(db, study.code, "stays", "leaves")
    S.post_as_participant(db, stays.token, "Hello")
    room_id = S.participant_view(db, stays.token).room_id or 0
    soon = db.now() + timedelta(seconds=46)
    S.heartbeat(db, stays.token, now=soon)
    assert S.tick(db, study.code, now=soon).dropped == 1
    (group,) = storage.list_groups(db, study.id)
    assert "agent" in group.seats.values() and len(Room(db, room_id).config.names) == 2
    later = db.now() + timedelta(seconds=601)
    S.heartbeat(db, stays.token, now=later)
    assert S.tick(db, study.code, now=later).ended == 1
    done = S.answer_survey(db, stays.token, {"satisfaction": 3, "mediator_opinion": "ok"})
    assert done.exit is not None and done.exit.status == "completed"
    statuses = {r["pseudonym"]: r["exit_status"] for r in S.participants_table(db, study.code)}
    assert statuses == {stays.pseudonym: "completed", leaves.pseudonym: "dropped"}
    kinds = [e["kind"] for e in S.study_events_table(db, study.code)]
    for kind in ("joined", "assigned", "dropped", "seat_taken_by_agent", "room_ended"):
        assert kind in kinds


def test_lobby_timeouts_at_once_seat_everyone_once_with_agents(db: storage.Database) -> None:
    from datetime import timedelta

    study = launched(db, lobby={"on_timeout": "agents", "timeout_seconds": 60})
    people = [to_lobby(db, study.code, f"p{i}") for i in range(3)]
    S.tick(db, study.code)  # two of them form a group now
    later = db.now() + timedelta(seconds=61)
    for person in people:
        S.heartbeat(db, person.token, now=later)
    _at_once(3, lambda i: S.tick(db, study.code, now=later))
    S.tick(db, study.code, now=later)
    stages = {p.id: (p.stage, p.exit_status) for p in storage.list_participants(db, study.id)}
    assert set(stages.values()) == {("room", None)}
    groups = storage.list_groups(db, study.id)
    assert len(groups) == 2
    assert sorted(h for g in groups for h in g.seats.values() if isinstance(h, int)) == sorted(
        p.participant_id for p in people
    )
    assert sum(list(g.seats.values()).count("agent") for g in groups) == 1


def test_a_participants_seat_in_one_read(db: storage.Database) -> None:
    """``participant_seat``: the person, their study and where they sit (the post's checks),
    or ``ParticipantNotFound`` for a token nobody holds."""
    from conversation.study.participant.identity import token_hash
    from tests.conversation.study.helpers import seated

    study = launched(db)
    waiting = to_lobby(db, study.code, "w")
    seat = storage.participant_seat(db, token_hash(waiting.token))
    assert seat.participant.stage == "lobby" and seat.room_id is None and seat.group_status is None
    a, _ = seated(db, study.code, "p1", "p2")
    seat = storage.participant_seat(db, token_hash(a.token))
    room = storage.get_room(db, seat.room_id or 0)
    assert (seat.study.code, seat.study.version) == (study.code, study.version)
    assert (seat.group_status, seat.room_status, seat.room_config) == (
        "running",
        room.status,
        room.config,
    )
    assert seat.participant == storage.participant_by_token(db, token_hash(a.token))
    with pytest.raises(storage.ParticipantNotFound):
        storage.participant_seat(db, token_hash("forged"))


def test_a_stage_move_the_table_never_allows_is_refused_and_writes_nothing(
    db: storage.Database,
) -> None:
    """Every stage written is checked against ``vocabulary.STAGE_TRANSITIONS``: nobody comes
    back from the exit, nobody skips from consent into a room."""
    study = launched(db)
    token = S.join(db, study.code, {})
    with pytest.raises(storage.InvalidTransition):
        storage.update_participant(db, token.participant_id, stage="room")
    with pytest.raises(storage.InvalidTransition):  # an expected stage the move never leaves
        storage.update_participant(
            db, token.participant_id, expected_stages={"consent", "exit"}, stage="lobby"
        )
    S.decline(db, token.token)
    with pytest.raises(storage.InvalidTransition):
        storage.update_participant(db, token.participant_id, stage="lobby")
    person = storage.get_participant(db, token.participant_id)
    assert (person.stage, person.exit_status) == ("exit", "declined")
    with pytest.raises(storage.StorageValueError, match="must be one of"):
        storage.update_participant(db, token.participant_id, stage="nowhere")
