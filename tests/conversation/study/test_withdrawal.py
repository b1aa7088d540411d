"""Withdrawal (issue 34): from the participant's link or as the researcher's act, a person's
data leave every table and every later export; an audit note without content stays; the agents'
replies stay unless the study's rule says otherwise."""

from __future__ import annotations

import json

import sqlalchemy as sa
from sqlmodel import SQLModel

import storage
from conversation import study as S
from conversation.rooms.room import Room
from tests.conversation.study.helpers import launched, seated

SECRET = "Write me at ann.lee@example.org about the mug"
ANSWER = "The mediator was pushy, I am Ann Lee"


def _rows(db: storage.Database) -> list[tuple[str, dict]]:
    """Every row of every table as (table, {column: text})."""
    found = []
    with db.read_engine.connect() as conn:
        for table in sorted(SQLModel.metadata.tables.values(), key=lambda t: t.name):
            for row in conn.execute(sa.select(table)).mappings():
                found.append((table.name, {k: json.dumps(v, default=str) for k, v in row.items()}))
    return found


def _where(db: storage.Database, needle: str) -> list[str]:
    """``table.column`` (and, for events, the kind) of every place ``needle`` is stored."""
    places = []
    for table, row in _rows(db):
        for column, text in row.items():
            if needle in text:
                kind = f"[{json.loads(row['kind'])}]" if table == "events" else ""
                places.append(f"{table}{kind}.{column}")
    return places


def _study_with_ann(db: storage.Database, **changes):  # type: ignore[no-untyped-def]
    study = launched(db, **changes)
    ann, bob = seated(db, study.code, "PID-ANN", "PID-BOB")
    S.post_as_participant(db, ann.token, SECRET)
    room_id = S.participant_view(db, ann.token).room_id or 0
    Room(db, room_id).run(3)
    S.post_as_participant(db, bob.token, "I can pay $6")
    Room(db, room_id).run(3)
    S.message_researcher(db, ann.token, "Help, this is Ann Lee speaking")
    storage.record_signals(db, study.id, ann.participant_id, "message", {"pasted": 40})
    return study, ann, bob, room_id


def test_a_withdrawal_from_the_link_removes_the_person_everywhere(db) -> None:  # type: ignore[no-untyped-def]
    study, ann, bob, room_id = _study_with_ann(db)
    assert "model_cache.entry" in _where(db, SECRET)  # the agents were asked about it
    view = S.withdraw(db, ann.token)
    assert (view.stage, view.exit.status, view.exit.code, view.exit.redirect) == (
        "exit",
        "withdrawn",
        "",
        None,
    )
    # Nothing of hers is left but the agents' replies that quoted her (kept by default).
    assert set(_where(db, SECRET)) <= {"events[agent].content"}
    for needle in ("PID-ANN", "Ann Lee"):
        assert _where(db, needle) == [], needle
    her = storage.get_participant(db, ann.participant_id)
    assert (her.pre_survey, her.recruitment, her.labels, her.withdrawn_at is not None) == (
        None,
        None,
        None,
        True,
    )
    with db.read_engine.connect() as conn:
        signals = conn.execute(sa.text("select count(*) from participant_signals")).scalar()
    assert signals == 0
    log = Room(db, room_id).events()
    assert "[withdrawn]" in [e.content for e in log if e.kind == "human"]
    assert "I can pay $6" in [e.content for e in log]  # the other person's data stay
    # Later exports leave her out; Bob is still there.
    people = S.participants_table(db, study.code)
    assert [p["pseudonym"] for p in people] == [bob.pseudonym]
    assert [r["pseudonym"] for r in S.recruitment_table(db, study.code)] == [bob.pseudonym]
    transcript = S.transcripts_table(db, study.code)
    assert ann.pseudonym not in {r["participant"] for r in transcript}
    log_rows = S.study_events_table(db, study.code)
    assert ann.pseudonym not in {r["pseudonym"] for r in log_rows}
    # The audit note: who, when, what, without content.
    audit = [r for r in log_rows if r["kind"] == "data_deleted"]
    assert len(audit) == 1 and audit[0]["data"]["messages"] == 1
    assert audit[0]["data"]["by"] == f"participant {ann.pseudonym}"
    assert SECRET not in json.dumps(audit[0]["data"])
    # Once is enough: a second withdrawal changes nothing.
    again = S.withdraw_participant(db, study.code, ann.participant_id)
    assert again.withdrawn is False


def test_the_studys_rule_removes_messages_and_redacts_the_agents_replies(db) -> None:  # type: ignore[no-untyped-def]
    study, ann, bob, room_id = _study_with_ann(
        db, withdrawal={"messages": "remove", "agent_replies": "redact"}
    )
    hers = next(e.seq for e in Room(db, room_id).events() if e.content == SECRET)
    report = S.withdraw_participant(db, study.code, ann.participant_id, reason="asked by e-mail")
    assert report.withdrawn and report.messages == 1 and report.agent_turns >= 1
    assert report.cache_entries >= 1
    assert _where(db, SECRET) == []  # her words are nowhere, not even quoted by an agent
    after = Room(db, room_id).events()
    assert hers not in {e.seq for e in after}
    assert {e.content for e in after if e.kind == "agent"} >= {"[withdrawn]"}
    assert "I can pay $6" in [e.content for e in after]
    audit = [r for r in S.study_events_table(db, study.code) if r["kind"] == "data_deleted"]
    assert audit[0]["data"]["reason"] == "asked by e-mail" and audit[0]["data"]["rule"] == "remove"


def test_a_person_who_already_finished_can_withdraw_and_keeps_their_exit(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    token = S.join(db, study.code, {"PROLIFIC_PID": "P-DECLINED"})
    S.decline(db, token.token)
    report = S.withdraw_participant(db, study.code, token.participant_id)
    assert report.withdrawn
    assert S.participants_table(db, study.code) == []
    view = S.participant_view(db, token.token)
    assert view.exit.status == "declined"  # the exit they made stays theirs
