"""A study's exports: pseudonyms only, recruitment ids in their own table, seat provenance, no
tokens anywhere, surveys as EDSL Results."""

from __future__ import annotations

from datetime import timedelta

from conversation import study as S
from conversation.rooms.room import Room
from tests.conversation.study.helpers import launched, seated


def _finished_study(db):  # type: ignore[no-untyped-def]
    study = launched(db)
    a, b = seated(db, study.code, "PID-A", "PID-B")
    S.post_as_participant(db, a.token, "I offer $5")
    Room(db, S.participant_view(db, a.token).room_id or 0).run(2)
    later = db.now() + timedelta(seconds=601)
    for t in (a, b):
        S.heartbeat(db, t.token, now=later)
    S.tick(db, study.code, now=later)
    for t in (a, b):
        S.answer_survey(db, t.token, {"satisfaction": 5, "mediator_opinion": "{{ x }} ok"})
    return study, a, b


def test_exports_keep_recruitment_ids_apart_and_tokens_out(db) -> None:  # type: ignore[no-untyped-def]
    study, a, b = _finished_study(db)
    people = S.participants_table(db, study.code)
    assert {p["exit_status"] for p in people} == {"completed"}
    assert {p["seat"] for p in people} == {"Buyer", "Seller"}
    assert all(p["pre_bargained_before"] == "no" and p["post_satisfaction"] == 5 for p in people)
    assert all(p["finished_at"] >= p["assigned_at"] >= p["joined_at"] for p in people)
    transcripts = S.transcripts_table(db, study.code)
    offer = next(r for r in transcripts if r["content"] == "I offer $5")
    seat = next(p["seat"] for p in people if p["participant"] == a.pseudonym)
    assert offer["seat"] == seat and offer["participant"] == a.pseudonym
    assert {r["participant"] for r in transcripts if r["kind"] == "agent"} == {"agent"}
    assert transcripts[0]["participant"] == "host"
    log = S.study_events_table(db, study.code)
    everything = repr((people, transcripts, log))
    assert "PID-A" not in everything and a.token not in everything and b.token not in everything
    pay = S.recruitment_table(db, study.code)
    assert {(r["PROLIFIC_PID"], r["exit_code"]) for r in pay} == {
        ("PID-A", "CMUG0001"),
        ("PID-B", "CMUG0001"),
    }


def test_surveys_as_edsl_results(db) -> None:  # type: ignore[no-untyped-def]
    study, _, _ = _finished_study(db)
    results = S.survey_results(db, study.code, "post")
    assert len(results) == 2
    assert sorted(results.select("answer.satisfaction").to_list()) == [5, 5]
    pre = S.survey_results(db, study.code, "pre")
    assert pre.select("answer.bargained_before").to_list() == ["no", "no"]
