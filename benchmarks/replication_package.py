"""Replication packages (issue 34): the size and time of a package, and what ``replicate``
printed, for a 100-room experiment without people and for a 24-person study.

    python benchmarks/replication_package.py [--rooms 100] [--turns 10] [--people 24] [--no-scrub]

What it does, offline (the offline model, a temporary HOME and SQLite database):
1. an experiment of ``--rooms`` agent-only rooms (two conditions, a buyer and a seller, ending
   after ``--turns`` turns) run by a worker; then
   ``python -m conversation.experiments package ID --db URL --out DIR`` (with an analysis plan:
   one yes/no question asked of two offline judges, its rate by condition and the judges'
   alpha) and ``python -m conversation.experiments replicate DIR``, each in its own process;
2. a frozen study (``examples/study.toml``: two people and an agent mediator per room) of
   ``--people`` participants, each through consent and the pre-survey, seated, writing twice
   (once before the agents' turns, once after: the rooms are replayed from the people's
   messages), answering the post-survey; then ``python -m conversation.study package CODE ...``
   and ``replicate DIR``.
For each it prints the rooms, model calls, the folder's and the zip's size, the wall time of
``package`` and ``replicate`` (each a fresh process: Python, edsl and Presidio's start
included) and ``replicate``'s last line. Times are wall times: on a shared machine they are
upper bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
STUDY_PLAN = {
    "questions": [{"type": "yes_no", "name": "deal", "text": "Did they agree on a price?"}],
    "judges": [
        {"service": "offline", "model": "offline", "parameters": {"seed": 1}},
        {"service": "offline", "model": "offline", "parameters": {"seed": 2}},
    ],
    "statistics": [
        {"name": "deal rate", "measure": "answer.deal", "statistic": "rate"},
        {"name": "satisfaction", "measure": "post.satisfaction", "statistic": "mean"},
    ],
    "exclusions": [{"name": "mostly pasted", "signal": "pasted_share", "above": 0.8}],
    "bootstrap": 200,
}


def _cli(*args: str) -> tuple[float, list[str]]:
    """Run ``python -m ...`` in a fresh process: its wall time and printed lines."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return seconds, done.stdout.strip().splitlines()


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _report(title: str, work: Path, out: Path, package: tuple[float, list[str]], again: tuple[float, list[str]]) -> None:  # fmt: skip
    print(f"\n== {title}")
    for line in package[1]:
        if line.startswith(("rooms:", "source differences", "written in")):
            print(f"  {line}")
    print(
        f"  folder: {_size(out):,} bytes; zip: {(work / (out.name + '.zip')).stat().st_size:,} bytes"
    )
    print(f"  package: {package[0]:.1f} s (a fresh process)")
    print(f"  replicate: {again[0]:.1f} s (a fresh process)")
    print(f"  replicate printed: {again[1][-1] if again[1] else '(nothing)'}")


def experiment(work: Path, url: str, rooms: int, turns: int, scrub: bool) -> None:
    import storage
    from conversation.experiments import Condition, design
    from conversation.experiments import create as create_experiment
    from conversation.worker import Worker

    template = {
        "agents": [
            {"name": "Buyer", "traits": {"role": "buyer of a coffee mug"}},
            {"name": "Seller", "traits": {"role": "seller of a coffee mug"}},
        ],
        "planner": {"kind": "round_robin", "transitions": None},
        "termination": {"kind": "max_turns", "max_turns": turns},
        "model": {"service": "offline", "model": "offline", "parameters": {"seed": 3}},
        "opening": "Negotiate the price of a coffee mug.",
    }
    conditions = [
        Condition("patient", {"Buyer": {"mood": "patient"}}),
        Condition("hurried", {"Buyer": {"mood": "hurried"}}),
    ]
    with storage.Database(url) as db:
        experiment_id = create_experiment(
            db, "mugs", design(template, conditions, replicates=rooms // 2)
        )
        started = time.perf_counter()
        asyncio.run(Worker(db, concurrency=8, poll_interval=0.02).run(until_idle=True))
        print(
            f"experiment: {rooms} rooms x {turns} turns run in {time.perf_counter() - started:.1f} s"
        )
    plan = work / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    out = work / "experiment-package"
    extra = [] if scrub else ["--no-scrub"]
    package = _cli("conversation.experiments", "package", str(experiment_id), "--db", url, "--out", str(out), "--plan", str(plan), *extra)  # fmt: skip
    again = _cli("conversation.experiments", "replicate", str(out))
    _report(f"experiment without people ({rooms} rooms)", work, out, package, again)


def study(work: Path, url: str, people: int, scrub: bool) -> None:
    import tomllib

    import storage
    from conversation import study as S
    from conversation.rooms.room import Room

    data = tomllib.loads((ROOT / "examples" / "study.toml").read_text(encoding="utf-8"))
    data["experiment"]["groups"] = max(1, people // 4)  # two people a room, two conditions
    data["participants"]["cap"] = people
    data["room"]["words_per_minute"] = 0
    data["analysis"] = STUDY_PLAN
    with storage.Database(url) as db:
        started = time.perf_counter()
        found = S.launch_frozen(db, S.freeze(S.definition_from_dict(data), seed=3))
        tokens = []
        for index in range(people):
            token = S.join(db, found.code, {"PROLIFIC_PID": f"{index:024x}"})
            S.give_consent(db, token.token)
            S.answer_survey(db, token.token, {"bargained_before": "no"})
            tokens.append(token)
        S.tick(db, found.code)
        for index, token in enumerate(tokens):
            text = f"Hi, I'm in. Write to me at p{index}@example.org"
            S.post_as_participant(db, token.token, text, signals={"pasted_chars": 0})
            room_id = S.participant_view(db, token.token).room_id or 0
            Room(db, room_id).run(3)
            S.post_as_participant(db, token.token, "I can go up to 6 dollars, not more.")
            Room(db, room_id).run(1)
        later = db.now() + timedelta(seconds=601)
        for token in tokens:
            S.heartbeat(db, token.token, now=later)
        S.tick(db, found.code, now=later)
        for index, token in enumerate(tokens):
            S.answer_survey(
                db, token.token, {"satisfaction": 1 + index % 5, "mediator_opinion": "fine"}
            )
        print(f"study: {people} people run in {time.perf_counter() - started:.1f} s")
        code = found.code
    out = work / "study-package"
    extra = [] if scrub else ["--no-scrub"]
    package = _cli("conversation.study", "package", code, "--db", url, "--out", str(out), *extra)
    again = _cli("conversation.study", "replicate", str(out))
    _report(f"study with {people} people", work, out, package, again)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rooms", type=int, default=100)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--people", type=int, default=24)
    parser.add_argument("--no-scrub", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="replication-bench-") as folder:
        work = Path(folder)
        home = work / "home"
        home.mkdir()
        os.environ["HOME"] = str(home)  # EDSL writes under the user's data folder
        os.environ["EDSL_FETCH_TOKEN_PRICES"] = "False"
        sys.path.insert(0, str(ROOT))
        print(
            f"cores: {os.cpu_count()}, load average: {', '.join(f'{v:.1f}' for v in os.getloadavg())}"
        )
        experiment(
            work, f"sqlite:///{work}/experiment.db", args.rooms, args.turns, not args.no_scrub
        )
        study(work, f"sqlite:///{work}/study.db", args.people, not args.no_scrub)
    return 0


if __name__ == "__main__":
    sys.exit(main())
