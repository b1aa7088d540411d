"""Consent records (issue 34): the text a person agreed to is stored once per version, a text
changed after launch is a new version, and the exports carry each person's version."""

from __future__ import annotations

import hashlib

from conversation import study as S
from tests.conversation.study.helpers import definition_dict, launched


def test_each_person_keeps_the_consent_version_they_agreed_to(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    first = [S.join(db, study.code, {"PROLIFIC_PID": p}) for p in ("P1", "P2")]
    for person in first:
        S.give_consent(db, person.token)
    new_text = "A shorter consent text. Do you agree?"
    S.update_definition(db, study.code, S.definition_from_dict(definition_dict(consent=new_text)))
    late = S.join(db, study.code, {"PROLIFIC_PID": "P3"})
    assert S.participant_view(db, late.token).consent == new_text
    S.give_consent(db, late.token)
    S.decline(db, S.join(db, study.code, {"PROLIFIC_PID": "P4"}).token)  # agreed to nothing

    versions = S.consent_versions(db, study.code)
    original = definition_dict()["consent"]
    assert [(v.version, v.text) for v in versions] == [(1, original), (2, new_text)]
    assert versions[1].hash == hashlib.sha256(new_text.encode()).hexdigest()
    by_person = {p["pseudonym"]: p["consent_version"] for p in S.participants_table(db, study.code)}
    assert [by_person[p.pseudonym] for p in first] == [1, 1]
    assert by_person[late.pseudonym] == 2
    assert sorted(by_person.values(), key=str) == [1, 1, 2, None]
    consented = [e for e in S.study_events_table(db, study.code) if e["kind"] == "consented"]
    assert [e["data"]["consent_version"] for e in consented] == [1, 1, 2]


def test_the_same_text_agreed_again_is_the_same_version(db) -> None:  # type: ignore[no-untyped-def]
    study = launched(db)
    for pid in ("P1", "P2", "P3"):
        S.give_consent(db, S.join(db, study.code, {"PROLIFIC_PID": pid}).token)
    assert [v.version for v in S.consent_versions(db, study.code)] == [1]
