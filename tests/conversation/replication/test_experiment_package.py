"""An experiment's replication package (issue 34): ``python -m conversation.experiments package
ID`` writes it (folder and zip, a plan's results), the same ``replicate`` as a study's re-runs it
offline in a fresh process to identical transcripts and statistics, and a deliberately changed
cache is reported. Scrubbing reaches the messages and the cached replies but never the provider
response's own fields."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conversation.experiments import Condition, design
from conversation.experiments import create as create_experiment
from conversation.experiments.cli import main as experiments_cli
from conversation.replication.replicate import replicate
from conversation.worker import Worker
from storage import Database

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE = {
    "agents": [
        {"name": "Buyer", "traits": {"role": "buyer"}},
        {"name": "Seller", "traits": {"role": "seller"}},
    ],
    "planner": {"kind": "round_robin", "transitions": None},
    "termination": {"kind": "max_turns", "max_turns": 4},
    "model": {"service": "offline", "model": "offline", "parameters": {"seed": 3}},
    "opening": "Negotiate the price of a mug. Mail me at ann.lee@example.org",
}
CONDITIONS = [
    Condition("patient", {"Buyer": {"mood": "patient"}}),
    Condition("hurried", {"Buyer": {"mood": "hurried"}}),
]
PLAN = """\
[analysis]
bootstrap = 200
questions = [{ type = "yes_no", name = "deal", text = "Did they agree on a price?" }]
judges = [
  { service = "offline", model = "offline", parameters = { seed = 1 } },
  { service = "offline", model = "offline", parameters = { seed = 2 } },
]
statistics = [{ name = "deal rate", measure = "answer.deal", statistic = "rate" }]
"""


def _ran_experiment(db: Database) -> int:
    experiment = create_experiment(db, "mugs", design(TEMPLATE, CONDITIONS, replicates=2))
    worker = Worker(db, concurrency=4, poll_interval=0.02)
    asyncio.run(asyncio.wait_for(worker.run(until_idle=True), 120))
    return experiment


def _package(db_url: str, experiment: int, out: Path, *extra: str) -> list[str]:
    return [str(experiment), "--db", db_url, "--out", str(out), *extra]


def test_an_experiment_package_replicates_identically_in_another_process(
    db: Database, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _ran_experiment(db)
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    out = tmp_path / "package"
    assert (
        experiments_cli(["package", *_package(db_url, experiment, out, "--plan", str(plan))]) == 0
    )
    printed = capsys.readouterr().out
    assert "rooms: 4, model calls cached: 16" in printed
    assert "source differences at packaging: 0" in printed
    assert (tmp_path / "package.zip").is_file()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["kind"] == "experiment"
    assert [r["mode"] for r in manifest["rooms"]] == ["rerun"] * 4
    assert sorted({r["condition"] for r in manifest["rooms"]}) == ["hurried", "patient"]
    results = json.loads((out / "analysis/results.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in results["statistics"]] == ["deal rate"]
    assert "deal" in results["agreement"]
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# Replication package: mugs\n\nAn experiment (experiment ")
    assert f"python -m conversation.experiments replicate {out}" in readme
    # the same replicate as a study's, offline, in a fresh process
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
    assert lines[-1] == "REPLICATED rooms=4 identical=4 stats_identical=1"
    assert lines.count("analysis: identical") == 1


def test_a_changed_cache_is_reported_room_by_room(
    db: Database, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _ran_experiment(db)
    out = tmp_path / "package"
    assert experiments_cli(["package", *_package(db_url, experiment, out)]) == 0
    cache = out / "cache" / "model_cache.jsonl"
    rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
    output = json.loads(rows[0]["entry"]["output"])
    output["choices"][0]["message"]["content"] = "A different reply altogether."
    rows[0]["entry"]["output"] = json.dumps(output)
    cache.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    capsys.readouterr()
    assert experiments_cli(["replicate", str(out)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "file changed since packaging: cache/model_cache.jsonl"
    assert lines[-1] == "REPLICATED rooms=4 identical=3 stats_identical=1"
    changed = [line for line in lines if "A different reply altogether." in line]
    assert len(changed) == 1 and changed[0].startswith("room-000")


def test_scrubbing_reaches_messages_and_replies_but_not_the_responses_fields(
    db: Database, tmp_path: Path
) -> None:
    from conversation.replication.experiment import package_experiment

    experiment = _ran_experiment(db)
    out = tmp_path / "package"
    package_experiment(db, experiment, out)
    rooms_and_cache = "".join(
        p.read_text(encoding="utf-8")
        for p in [*(out / "rooms").iterdir(), out / "cache" / "model_cache.jsonl"]
    )
    assert "ann.lee@example.org" not in rooms_and_cache and "<EMAIL>" in rooms_and_cache
    entries = [json.loads(line)["entry"] for line in (out / "cache/model_cache.jsonl").open()]
    assert {json.loads(e["output"])["object"] for e in entries} == {"chat.completion"}
    report = json.loads((out / "data/scrub_report.json").read_text(encoding="utf-8"))
    # counted in the transcripts: each room's opening and its first reply, which quotes it
    assert report["replacements"] == {"EMAIL": 8}
    assert sum(p.read_text("utf-8").count("<EMAIL>") for p in (out / "rooms").iterdir()) == 8
    assert replicate(out).last_line() == "REPLICATED rooms=4 identical=4 stats_identical=1"


def test_no_scrub_keeps_the_text_and_says_so(db: Database, tmp_path: Path) -> None:
    from conversation.replication.experiment import package_experiment

    experiment = _ran_experiment(db)
    out = tmp_path / "raw"
    package_experiment(db, experiment, out, scrub=False)
    assert "ann.lee@example.org" in (out / "rooms" / "room-0001.json").read_text("utf-8")
    assert "**Not scrubbed** (`--no-scrub` was given)" in (out / "README.md").read_text("utf-8")
    assert not (out / "data" / "scrub_report.json").exists()
    assert replicate(out).last_line() == "REPLICATED rooms=4 identical=4 stats_identical=1"


def test_an_unreadable_plan_or_package_is_an_error_not_a_traceback(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "plan.toml"
    bad.write_text(
        "[analysis]\nstatistics = [{ name = 'x', measure = 'nope', statistic = 'rate' }]\n"
    )
    assert (
        experiments_cli(
            ["package", "1", "--db", db_url, "--out", str(tmp_path / "p"), "--plan", str(bad)]
        )
        == 1
    )
    assert "error:" in capsys.readouterr().err
    assert experiments_cli(["replicate", str(tmp_path)]) == 1
    assert "is not a replication package" in capsys.readouterr().err
