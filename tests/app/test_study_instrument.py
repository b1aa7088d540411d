"""The monitor's controls of issues 33 and 34 through AppTest: attention checks sent to a room
(answers, misses and a failed check in attrition), the comprehension checks' tries, withdrawal
with its confirmation and audit list, a frozen study's amendments, signals and exclusions, the
consent version per person and the replication package. Each act lands in the database; a bad
input is refused with a clear message and nothing is lost; what people and researchers typed
stays text."""

from __future__ import annotations

import io
import zipfile

import pytest

from conversation import study
from storage import Database
from tests.app.page_support import shown
from tests.app.study_support import click, in_lobby, joined, launch, page, texts

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HOSTILE = "**Click** [here](http://127.0.0.1:9/x) <img src=x onerror=alert(1)>"
FAILED_CODE = "CMUGFAIL"


def monitor(code: str):  # type: ignore[no-untyped-def]
    at = page("pages/study_monitor.py", study=code)
    assert not at.exception, at.exception
    return at


def table(at, column: str):  # type: ignore[no-untyped-def]
    return next(d.value for d in at.dataframe if column in d.value.columns)


def markup(at) -> str:  # type: ignore[no-untyped-def]
    """What the page drew as markdown (titles, captions, alerts, markdown): no user text."""
    parts = []
    for kind in ("title", "caption", "info", "warning", "error", "success", "markdown"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def in_room(db: Database, **sections):  # type: ignore[no-untyped-def]
    """A launched study with two people in a room: (study, ana's token, bo's token)."""
    found = launch(db, **sections)
    ana, bo = in_lobby(db, found.code), in_lobby(db, found.code)
    study.tick(db, found.code)
    assert study.participant_view(db, ana).stage == "room"
    return found, ana, bo


def fill_attention(at, question: str, options: str, correct: str):  # type: ignore[no-untyped-def]
    at.text_area(key="attention-question").input(question)
    at.text_area(key="attention-options").input(options)
    at.text_input(key="attention-correct").input(correct)


def test_an_attention_check_sent_to_a_room_reaches_each_person_and_its_answers_show(
    db: Database,
) -> None:
    codes = {"exit": {"codes": {**_codes(), "failed_check": FAILED_CODE}}}
    found, ana, bo = in_room(db, **codes)
    at = monitor(found.code)
    assert at.selectbox(key="attention-to").value.startswith("room:")  # the room first
    fill_attention(at, HOSTILE, "Red\nBlue", "Blue")
    at.selectbox(key="attention-on-fail").set_value("exit")
    click(at, "Send the attention check")
    assert not at.exception, at.exception
    assert "Attention check sent to 2 person(s)." in shown(texts(at))
    prompts = [study.participant_view(db, t).attention for t in (ana, bo)]
    assert all(p is not None and p.question_text == HOSTILE for p in prompts)
    assert prompts[0].question_options == ["Red", "Blue"]
    assert study.answer_attention_check(db, ana, prompts[0].check_id, "Blue")
    assert not study.answer_attention_check(db, bo, prompts[1].check_id, "Red")
    left = study.participant_view(db, bo).exit
    assert left is not None and left.status == "failed_check" and left.code == FAILED_CODE

    after = monitor(found.code)
    checks = table(after, "outcome")
    assert sorted(checks["outcome"]) == ["right", "wrong"]
    assert set(checks["question"]) == {HOSTILE}  # in a table, as text
    assert HOSTILE not in markup(after) and "**Click**" not in markup(after)
    attrition = table(after, "failed a check")
    assert attrition["failed a check"].sum() == 1


def _codes() -> dict[str, str]:
    from tests.app.study_support import definition_data

    return dict(definition_data()["exit"]["codes"])


def test_a_bad_attention_check_is_refused_and_the_form_keeps_it(db: Database) -> None:
    found, ana, _ = in_room(db)
    at = monitor(found.code)
    fill_attention(at, "Which colour is the sky?", "Red\nBlue", "Green")
    click(at, "Send the attention check")
    assert not at.exception, at.exception
    [error] = [shown(e.value) for e in at.error]
    assert error.startswith("Not done:") and "correct" in error and "Green" in error
    assert study.participant_view(db, ana).attention is None  # nothing was put
    assert at.text_area(key="attention-question").value == "Which colour is the sky?"
    assert at.text_input(key="attention-correct").value == "Green"
    at.text_area(key="attention-question").input("   ")
    click(at, "Send the attention check")
    assert "Write the question." in [shown(e.value) for e in at.error]


def test_nobody_in_a_room_means_no_attention_check_form(db: Database) -> None:
    found = launch(db)
    in_lobby(db, found.code)
    at = monitor(found.code)
    assert "Nobody is in a room" in texts(at)
    assert not [b for b in at.button if b.label == "Send the attention check"]


def test_comprehension_check_tries_and_their_failure_are_shown(db: Database) -> None:
    check = {
        "question_name": "who_sets_the_price",
        "question_type": "multiple_choice",
        "question_text": "Who sets the price?",
        "question_options": ["the buyer", "nobody: you bargain"],
        "correct": "nobody: you bargain",
        "attempts": 1,
    }
    codes = {"codes": {**_codes(), "failed_check": FAILED_CODE}}
    found = launch(db, pre_survey=[check], exit=codes)
    token = joined(db, found.code)
    study.give_consent(db, token)
    study.answer_survey(db, token, {"who_sets_the_price": "the buyer"})
    assert study.participant_view(db, token).exit.status == "failed_check"
    at = monitor(found.code)
    tries = table(at, "try")
    assert list(tries["wrong"]) == ["who_sets_the_price"] and list(tries["try"]) == [1]
    assert "who_sets_the_price: the buyer" in tries["answers"][0]
    attrition = table(at, "failed a check")
    assert attrition["failed a check"].sum() == 1


def test_withdrawal_asks_for_confirmation_then_deletes_and_is_audited(db: Database) -> None:
    found = launch(db)
    ana = in_lobby(db, found.code, PROLIFIC_PID="PID-ANA")
    at = monitor(found.code)
    at.text_input(key="withdraw-reason").input(HOSTILE)
    click(at, "Withdraw the participant")
    assert not at.exception, at.exception
    assert "Tick the confirmation first: nothing was withdrawn." in [
        shown(e.value) for e in at.error
    ]
    assert study.participant_view(db, ana).exit is None
    assert at.text_input(key="withdraw-reason").value == HOSTILE  # kept for the next try
    at.checkbox(key="withdraw-sure").check()
    click(at, "Withdraw the participant")
    assert not at.exception, at.exception
    assert any("withdrawn:" in shown(s.value) for s in at.success)
    assert study.participant_view(db, ana).exit.status == "withdrawn"
    assert study.recruitment_table(db, found.code) == []  # left out of every export
    audit = table(at, "asked by")
    assert list(audit["reason"]) == [HOSTILE] and list(audit["messages"]) == [0]
    assert HOSTILE not in markup(at)
    assert "Nobody to withdraw." in texts(at)


def _frozen(db: Database) -> tuple[str, str]:
    """Freeze the example in the editor and launch it from the bundle: (code, hash)."""
    at = page("pages/experiments.py")
    click(at, "Freeze (preregister)")
    assert not at.exception, at.exception
    [line] = [t.value for t in at.text if t.value.startswith("Frozen bundle, hash ")]
    bundle_hash = line.rsplit(" ", 1)[1]
    assert len(bundle_hash) == 64
    click(at, "Launch the frozen study")
    assert not at.exception, at.exception
    [link] = [t.value for t in at.text if t.value.startswith("Participant link: ")]
    return link.rsplit("study=", 1)[1], bundle_hash


def test_freeze_launch_and_amend_a_preregistered_study(db: Database) -> None:
    code, bundle_hash = _frozen(db)
    record = study.study_preregistration(db, code)
    assert record.frozen and record.bundle_hash == bundle_hash
    at = monitor(code)
    assert f"Frozen: launched from bundle {bundle_hash}" in texts(at)
    key = f"amend-definition-{code}"
    edited = at.text_area(key=key).value.replace('"timeout_seconds": 180', '"timeout_seconds": 240')
    assert '"timeout_seconds": 240' in edited
    at.text_area(key=key).input(edited)
    click(at, "Amend (with the reason) or save")  # no reason: a frozen field is refused
    assert not at.exception, at.exception
    [error] = [shown(e.value) for e in at.error]
    assert "lobby.timeout_seconds" in error and "amendment" in error
    assert study.study_amendments(db, code) == []
    assert at.text_area(key=key).value == edited  # the edit is still there
    at.text_area(key=f"amend-reason-{code}").input(HOSTILE)
    click(at, "Amend (with the reason) or save")
    assert not at.exception, at.exception
    [made] = study.study_amendments(db, code)
    assert made.changes == ["lobby.timeout_seconds"] and made.reason == HOSTILE
    assert any("Amendment 1 stored: lobby.timeout_seconds." in shown(s.value) for s in at.success)
    amendments = table(at, "changes")
    assert list(amendments["reason"]) == [HOSTILE]
    assert f"In force after its amendments: bundle {made.bundle_hash}" in texts(at)
    assert HOSTILE not in markup(at)


def test_a_study_launched_without_a_bundle_says_so_and_saves_edits(db: Database) -> None:
    found = launch(db)
    at = monitor(found.code)
    assert "Not frozen" in texts(at)
    key = f"amend-definition-{found.code}"
    at.text_area(key=key).input(at.text_area(key=key).value.replace("180", "200", 1))
    click(at, "Save the change")
    assert not at.exception, at.exception
    assert study.get_study(db, found.code).version == 2
    at.text_area(key=key).input("{ not json")
    click(at, "Save the change")
    assert "The definition is not valid:" in [shown(e.value) for e in at.error]
    assert study.get_study(db, found.code).version == 2


def test_signals_and_the_exclusion_report_are_tables(db: Database) -> None:
    plan = {"exclusions": [{"name": "mostly pasted", "signal": "pasted_share", "above": 0.8}]}
    found, ana, bo = in_room(db, analysis=plan)
    study.post_as_participant(
        db, ana, "I will pay five dollars, final.", signals={"pasted_chars": 30, "typed_chars": 1}
    )
    at = monitor(found.code)
    signals = table(at, "pasted_share")
    assert len(signals) == 2 and signals["pasted_share"].max() > 0.8
    by_condition = table(at, "people without exclusions")
    assert by_condition["excluded"].sum() == 1 and by_condition["people"].sum() == 2
    assert by_condition["people without exclusions"].sum() == 1
    by_rule = table(at, "excludes")
    assert list(by_rule["rule"]) == ["mostly pasted"] and list(by_rule["excludes"]) == [1]
    assert study.participant_view(db, ana).exit is None  # nobody's path changed


def test_the_people_table_shows_each_persons_consent_version(db: Database) -> None:
    found = launch(db)
    in_lobby(db, found.code)
    joined(db, found.code)  # not consented yet
    versions = table(monitor(found.code), "consent version")["consent version"]
    assert sorted(versions.fillna(0).astype(int)) == [0, 1]


def test_the_replication_package_is_written_and_offered(db: Database) -> None:
    found = launch(db)
    in_lobby(db, found.code)
    at = monitor(found.code)
    click(at, "Write the replication package")
    assert not at.exception, at.exception
    [button] = [b for b in at.get("download_button") if "package (zip)" in b.proto.label]
    code, name, data, _ = at.session_state["_study-package"]
    assert code == found.code and name.endswith(".zip")
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        names = package.namelist()
    assert any(n.endswith("README.md") for n in names)
    assert any("room(s)" in t.value for t in at.text)


def test_freeze_refuses_a_broken_definition_and_an_edit_unfreezes(db: Database) -> None:
    at = page("pages/experiments.py")
    text = at.text_area(key="study-definition").value
    at.text_area(key="study-definition").input(text.replace("timeout_seconds = 180", "x = ["))
    click(at, "Freeze (preregister)")
    assert not at.exception, at.exception
    assert "The definition is not valid:" in [shown(e.value) for e in at.error]
    assert not [b for b in at.button if b.label == "Launch the frozen study"]
    at.text_area(key="study-definition").input(text)
    click(at, "Freeze (preregister)")
    assert [b for b in at.button if b.label == "Launch the frozen study"]
    at.text_area(key="study-definition").input(text + "\n# edited after freezing\n").run()
    assert not [b for b in at.button if b.label == "Launch the frozen study"]  # freeze again
    assert study.list_studies(db) == []  # freezing launches nothing


def test_a_frozen_bundle_opened_in_the_editor_is_checked_and_launches_frozen(
    db: Database,
) -> None:
    import json

    from tests.app.study_support import definition_data

    bundle = study.freeze(study.definition_from_dict(definition_data()))
    text = json.dumps(bundle.to_dict(), indent=1)
    at = page("pages/experiments.py")
    altered = text.replace('"timeout_seconds": 180', '"timeout_seconds": 181', 1)
    assert altered != text
    at.text_area(key="study-definition").input(altered)
    click(at, "Validate")
    assert not at.exception, at.exception
    [error] = [shown(e.value) for e in at.error]
    assert "changed after it was frozen" in error
    assert not [b for b in at.button if b.label == "Launch the frozen study"]
    at.text_area(key="study-definition").input(text)
    click(at, "Launch the study")  # a bundle launches frozen
    assert not at.exception, at.exception
    [link] = [t.value for t in at.text if t.value.startswith("Participant link: ")]
    code = link.rsplit("study=", 1)[1]
    assert study.study_preregistration(db, code).bundle_hash == bundle.hash
    assert f"frozen (bundle {bundle.hash[:12]})" in shown(texts(monitor(code)))
