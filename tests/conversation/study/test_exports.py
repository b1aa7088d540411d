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
    seat = next(p["seat"] for p in people if p["pseudonym"] == a.pseudonym)
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


def test_the_exports_have_the_columns_docs_studies_md_lists(db) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: a script written from docs/studies.md finds every column it names (the
    exports were ``participant``, ``definition_version`` and ``label_<name>``)."""
    import re
    from pathlib import Path

    from conversation.study.researcher import exports

    docs = (Path(__file__).resolve().parents[3] / "docs" / "studies.md").read_text("utf-8")
    section = docs[docs.index("### Export columns") :].split("\n\n### ")[0]
    documented = {
        m.group(1): re.findall(r"`([A-Za-z_]+)`", m.group(2).split(", then")[0])
        for m in re.finditer(r"^\| `(\w+)` \| (.+) \|$", section, re.M)
    }
    study, a, _ = _finished_study(db)
    tables = {
        "participants_table": S.participants_table(db, study.code),
        "recruitment_table": S.recruitment_table(db, study.code),
        "transcripts_table": S.transcripts_table(db, study.code),
        "study_events_table": S.study_events_table(db, study.code),
    }
    assert set(documented) == set(tables)
    for name, rows in tables.items():
        fixed = [c for c in rows[0] if not c.startswith(("pre_", "post_"))]
        assert fixed == documented[name], name
    constants = {
        "participants_table": exports.PARTICIPANT_COLUMNS,
        "recruitment_table": exports.RECRUITMENT_COLUMNS,
        "transcripts_table": exports.TRANSCRIPT_COLUMNS,
        "study_events_table": exports.LOG_COLUMNS,
    }
    assert {k: list(v) for k, v in constants.items()} == documented
    people = tables["participants_table"]
    assert all(row["labels"] == {} and row["version"] == 1 for row in people)
    assert {row["pseudonym"] for row in people} >= {a.pseudonym}


def test_a_survey_nobody_answered_yet_is_zero_answers_not_an_error(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    assert S.survey_answers(db, study.code, "post") == 0
    assert len(S.survey_results(db, study.code, "post")) == 0


def test_an_agents_message_carries_the_pace_it_was_shown_at(db) -> None:  # type: ignore[no-untyped-def]
    """Issue 33: words_per_minute is recorded with each agent message of the transcripts (the
    condition's pace for that agent); a person's message and an unpaced one have none."""
    study = launched(db, room={"words_per_minute": {"Mediator": 200}})
    a, _ = seated(db, study.code, "PID-A", "PID-B")
    S.post_as_participant(db, a.token, "I offer $5")
    Room(db, S.participant_view(db, a.token).room_id or 0).run(2)
    rows = S.transcripts_table(db, study.code)
    agents = [r for r in rows if r["participant"] == "agent"]
    assert agents and {r["words_per_minute"] for r in agents if r["speaker"] == "Mediator"} == {200}
    assert {r["words_per_minute"] for r in rows if r["participant"] != "agent"} == {None}
