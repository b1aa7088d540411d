"""Preregistration (issue 34): a frozen bundle with a content hash, a study launched from it
that refuses edits of its frozen fields, and amendments (versioned, timestamped, with a
reason) listed with the study."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conversation import study as S
from conversation.exceptions import ConversationValueError
from conversation.study.cli import main
from tests.conversation.study.helpers import EXAMPLE, definition_dict


def _definition(**changes):  # type: ignore[no-untyped-def]
    return S.definition_from_dict(definition_dict(**changes))


def test_a_bundle_holds_the_promise_and_its_hash_is_its_content() -> None:
    bundle = S.freeze(_definition(), seed=11)
    data = bundle.to_dict()
    assert data["definition"]["seed"] == 11 and data["seeds"]["master"] == 11
    # every model, with where it is used: the agents of every condition and the judge
    used = [m["used_by"] for m in data["models"]]
    assert "firm mediator: Mediator" in used and "friendly mediator: Buyer" in used
    assert any(u.startswith("analysis judge") for u in used)
    assert all({"service", "model", "version", "parameters"} <= set(m) for m in data["models"])
    # the first prompts, rendered by the engine's prompt builder
    mediator = data["prompts"]["firm mediator"]["Mediator"]
    assert "brief and firm" in mediator["system"] and "1. Host: Welcome!" in mediator["user"]
    assert "exclusions" in data["analysis"]
    # the same content is the same hash, whenever it is frozen; any change is another
    assert S.freeze(_definition(), seed=11).hash == bundle.hash
    assert S.freeze(_definition(), seed=12).hash != bundle.hash
    assert S.load_bundle(data).hash == bundle.hash
    data["definition"]["consent"] = "Something else"
    with pytest.raises(ConversationValueError, match="changed after it was frozen"):
        S.load_bundle(data)


def test_freezing_draws_a_master_seed_when_the_definition_has_none() -> None:
    bundle = S.freeze(_definition())
    assert isinstance(bundle.seed, int) and bundle.definition.model.seed == bundle.seed


def test_a_preregistered_study_refuses_edits_of_frozen_fields(db) -> None:  # type: ignore[no-untyped-def]
    study = S.launch_frozen(db, S.freeze(_definition(), seed=5))
    assert study.seed == 5
    edited = _definition(consent="A new consent text.", seed=5)
    with pytest.raises(S.FrozenFieldChanged) as refused:
        S.update_definition(db, study.code, edited)
    assert refused.value.fields == ["consent"]
    assert "amend" in str(refused.value)
    # operational fields are not part of the promise
    looser = definition_dict(seed=5)
    looser["participants"]["cap"] = 12
    looser["exit"]["redirect"] = "https://example.org/done?cc={code}"
    assert S.update_definition(db, study.code, S.definition_from_dict(looser)).version == 2
    assert S.study_amendments(db, study.code) == []


def test_an_amendment_is_versioned_timestamped_reasoned_and_rehashes(db) -> None:  # type: ignore[no-untyped-def]
    bundle = S.freeze(_definition(), seed=5)
    study = S.launch_frozen(db, bundle)
    amended = _definition(consent="A clearer consent text.", seed=5)
    first = S.amend_study(db, study.code, amended, reason="the ethics board asked for it")
    assert (first.number, first.changes, first.version) == (1, ["consent"], 2)
    assert first.reason == "the ethics board asked for it" and first.at is not None
    assert first.bundle_hash != bundle.hash
    second = S.amend_study(
        db, study.code, _definition(consent="Clearer still.", seed=5), reason="typo"
    )
    assert second.number == 2
    record = S.study_preregistration(db, study.code)
    assert record.launched_hash == bundle.hash and record.bundle_hash == second.bundle_hash
    assert [a["number"] for a in record.bundle["amendments"]] == [1, 2]
    assert S.load_bundle(record.bundle).hash == second.bundle_hash  # the stored bundle holds
    assert [a.number for a in S.study_amendments(db, study.code)] == [1, 2]
    log = S.study_events_table(db, study.code)
    assert [e["data"]["number"] for e in log if e["kind"] == "amended"] == [1, 2]


def test_amendments_are_refused_without_a_reason_or_a_frozen_change(db) -> None:  # type: ignore[no-untyped-def]
    study = S.launch_frozen(db, S.freeze(_definition(), seed=5))
    with pytest.raises(ConversationValueError, match="reason"):
        S.amend_study(db, study.code, _definition(consent="x y z", seed=5), reason=" ")
    with pytest.raises(ConversationValueError, match="no frozen field"):
        S.amend_study(db, study.code, _definition(seed=5), reason="nothing")
    two_groups = definition_dict(seed=5)
    two_groups["experiment"]["groups"] = 3
    with pytest.raises(ConversationValueError, match="cannot change once the study is launched"):
        S.amend_study(db, study.code, S.definition_from_dict(two_groups), reason="more")
    plain = S.launch_study(db, _definition())
    with pytest.raises(ConversationValueError, match="without a frozen bundle"):
        S.amend_study(db, plain.code, _definition(consent="x"), reason="r")


def test_the_cli_freezes_then_launches_the_bundle(tmp_path: Path, db_url: str, capsys) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "study.toml"
    source.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["freeze", str(source)]) == 0
    printed = capsys.readouterr().out
    target = tmp_path / "study.frozen.json"
    data = json.loads(target.read_text(encoding="utf-8"))
    assert f"bundle hash: {data['hash']}" in printed
    assert main(["launch", str(target), "--db", db_url]) == 0
    assert f"preregistered: bundle {data['hash']}" in capsys.readouterr().out
    data["definition"]["name"] = "tampered"
    target.write_text(json.dumps(data), encoding="utf-8")
    assert main(["launch", str(target), "--db", db_url]) == 1
    assert "changed after it was frozen" in capsys.readouterr().err
