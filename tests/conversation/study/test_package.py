"""A study's replication package (issue 34): written, then replicated offline in another
process to identical transcripts and statistics; a deliberately changed cache is reported;
nothing personal is in a scrubbed package; withdrawn people and their rooms are left out."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from conversation import study as S
from conversation.replication.replicate import replicate
from conversation.rooms.room import Room
from conversation.study.package import package_study
from tests.conversation.study.helpers import definition_dict, seated

ROOT = Path(__file__).resolve().parents[3]
PID = "5f3a9b2c1d4e5f6a7b8c9d0e"  # a Prolific id's shape
JUDGES = [
    {"service": "offline", "model": "offline", "parameters": {"seed": 1}},
    {"service": "offline", "model": "offline", "parameters": {"seed": 2}},
]
PLAN = {
    "questions": [{"type": "yes_no", "name": "deal", "text": "Did they agree on a price?"}],
    "judges": JUDGES,
    "statistics": [
        {"name": "deal rate", "measure": "answer.deal", "statistic": "rate"},
        {"name": "satisfaction", "measure": "post.satisfaction", "statistic": "mean"},
    ],
    "exclusions": [{"name": "mostly pasted", "signal": "pasted_share", "above": 0.8}],
    "bootstrap": 200,
}


def _ran_study(db, *, withdraw: bool = False, withdraw_in_room: bool = False):  # type: ignore[no-untyped-def]
    study = S.launch_frozen(
        db, S.freeze(S.definition_from_dict(definition_dict(analysis=PLAN)), seed=3)
    )
    people = seated(db, study.code, PID, "PID-B", "PID-C", "PID-D")
    for index, person in enumerate(people):
        text = f"Hi, I'm in. Write to me at p{index}@example.org"
        pasted = len(text) if index == 0 else 0  # the first person pasted it all
        S.post_as_participant(db, person.token, text, signals={"pasted_chars": pasted})
        Room(db, S.participant_view(db, person.token).room_id or 0).run(3)
    if withdraw_in_room:  # their seat goes to the dropout rule, their messages are gone
        S.withdraw(db, people[-1].token)
        people = people[:-1]
    later = db.now() + timedelta(seconds=601)
    for person in people:
        S.heartbeat(db, person.token, now=later)
    S.tick(db, study.code, now=later)
    for index, person in enumerate(people):
        S.answer_survey(
            db, person.token, {"satisfaction": 2 + index, "mediator_opinion": "call 415-555-0132"}
        )
    if withdraw:
        S.withdraw(db, people[-1].token)
    return study, people


def _all_text(folder: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()
    )


def test_a_package_replicates_identically_in_another_process(db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    study, people = _ran_study(db)
    out = tmp_path / "package"
    written = package_study(db, study.code, out)
    assert written.rooms == 2 and written.source_differences == 0
    assert written.zip.is_file() and written.zip_bytes > 0
    # people wrote after the agents' first turns: each room is replayed from their stored
    # messages, the agents' replies asked again of the cache one turn at a time
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [r["mode"] for r in manifest["rooms"]] == ["replay", "replay"]
    text = _all_text(out)
    # nothing personal: no e-mail, phone or recruitment id anywhere, the placeholders instead
    assert "example.org" not in text and "555-0132" not in text and PID not in text
    assert "<EMAIL>" in text and "<PHONE>" in text
    readme = (out / "README.md").read_text(encoding="utf-8")
    for needed in ("git commit", "edsl 1.0.9", "schema revision", "preregistered: launched from"):
        assert needed in readme, needed
    assert f"python -m conversation.study replicate {out}" in readme
    assert "<EMAIL>" in readme  # the scrub report's counts
    results = json.loads((out / "analysis/results.json").read_text(encoding="utf-8"))
    assert results["exclusions"]["excluded"] == [people[0].pseudonym]
    assert "deal" in results["agreement"]
    # replicated offline in a fresh process (no provider key, nothing but the package)
    done = subprocess.run(
        [sys.executable, "-m", "conversation.study", "replicate", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "REPLICATED rooms=2 identical=2 stats_identical=1"
    assert "analysis: identical" in lines


def test_a_changed_cache_is_reported(db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    study, _ = _ran_study(db)
    out = tmp_path / "package"
    package_study(db, study.code, out)
    cache = out / "cache" / "model_cache.jsonl"
    rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
    entry = rows[0]["entry"]
    output = json.loads(entry["output"])
    output["choices"][0]["message"]["content"] = "A different reply altogether."
    entry["output"] = json.dumps(output)
    cache.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = replicate(out)
    assert report.files == ["cache/model_cache.jsonl"]
    changed = [name for name, lines in report.rooms.items() if lines]
    assert len(changed) == 1
    assert "A different reply altogether." in report.rooms[changed[0]][0]
    assert report.last_line().startswith("REPLICATED rooms=2 identical=1 ")
    assert not report.stats_identical  # the judges read a transcript they never saw


def test_a_missing_cache_entry_is_a_difference_not_a_model_call(db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    study, _ = _ran_study(db)
    out = tmp_path / "package"
    package_study(db, study.code, out)
    cache = out / "cache" / "model_cache.jsonl"
    lines = cache.read_text(encoding="utf-8").splitlines()
    cache.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    report = replicate(out)
    assert any("not in the cache" in line for lines in report.rooms.values() for line in lines)
    assert report.identical == 1


def test_withdrawn_people_and_their_rooms_are_left_out(db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    study, people = _ran_study(db, withdraw=True)
    out = tmp_path / "package"
    package_study(db, study.code, out)
    gone = people[-1].pseudonym
    assert gone not in (out / "data" / "people.json").read_text(encoding="utf-8")
    assert gone not in (out / "data" / "participants.csv").read_text(encoding="utf-8")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [r["mode"] for r in manifest["rooms"]].count("skipped") == 1
    report = replicate(out)
    assert report.last_line() == "REPLICATED rooms=1 identical=1 stats_identical=1"
    assert len(report.skipped) == 1


def test_a_room_left_mid_conversation_by_a_withdrawal_is_left_out(db, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    study, people = _ran_study(db, withdraw_in_room=True)
    out = tmp_path / "package"
    written = package_study(db, study.code, out)
    assert written.source_differences == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [r["mode"] for r in manifest["rooms"]].count("skipped") == 1
    assert replicate(out).last_line() == "REPLICATED rooms=1 identical=1 stats_identical=1"


def test_no_scrub_is_explicit_and_recorded(db, db_url: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from conversation.study.cli import main

    study, _ = _ran_study(db)
    out = tmp_path / "raw"
    assert main(["package", study.code, "--db", db_url, "--out", str(out), "--no-scrub"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"package: {out} (") and printed[1].startswith(f"zip: {out}.zip (")
    assert "p0@example.org" in _all_text(out)
    assert "**Not scrubbed** (`--no-scrub` was given)" in (out / "README.md").read_text("utf-8")
    assert main(["replicate", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "REPLICATED rooms=2 identical=2 stats_identical=1"
    )
