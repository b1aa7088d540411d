"""Home and Results render times on a big database, against an empty one in the same run.

    python benchmarks/app_pages.py [--rooms 1000] [--big-room 2000]
    python benchmarks/app_pages.py --db sqlite:///big.db   # a database built by scale.py

What it does (offline model, temporary database and HOME, no network, runner off):
1. builds a database through storage's own bulk paths: ``--rooms`` rooms with a short log each
   (most of them in experiments of 100 rooms, created with ``storage.create_experiment(rooms=...)``
   and their logs with ``storage.create_room_with_log``), and one room of ``--big-room`` messages,
   the newest, so it is on the first page of every list and the room the Results transcript shows;
2. for the empty and the big database, each in a fresh Python process (the cold start of a fresh
   server: the server has imported Streamlit, nothing of the app), times with AppTest:
   Home's first render, Home's second render, Results' first render, its second render, a rerun
   after a filter change (a status picked), an experiment picked (its Statistics tab drawn) and
   the rerun after that (the empty database has no experiment: no figure there);
3. prints the figures and the ratios big/empty.

With ``--db``, step 1 is skipped: the big database is the one given (e.g. 100,000 rooms and
1,000,000 events from ``benchmarks/scale.py``'s generator; it is migrated, never written).

Targets: Home's first load on a fresh server < 3 s; Results' first render < 1 s with
1,000 rooms and one 2,000-message room.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MEASURE = r"""
import json, sys, time
from streamlit.testing.v1 import AppTest  # imported by the server before any visitor
app = sys.argv[1]
out = {}
at = AppTest.from_file(app, default_timeout=300)
t = time.perf_counter(); at.run(); out["home_first"] = time.perf_counter() - t
assert not at.exception, at.exception
t = time.perf_counter(); at.run(); out["home_again"] = time.perf_counter() - t
t = time.perf_counter(); at.switch_page("pages/results.py"); at.run()
out["results_first"] = time.perf_counter() - t
assert not at.exception, at.exception
t = time.perf_counter(); at.run(); out["results_again"] = time.perf_counter() - t
t = time.perf_counter(); at.multiselect(key="res-status").set_value(["terminated"]).run()
out["results_widget"] = time.perf_counter() - t  # a filter changed: a new rooms query
assert not at.exception, at.exception
experiments = at.selectbox(key="res-exp").options
if len(experiments) > 1:  # an experiment picked: its Statistics tab, then a rerun
    at.multiselect(key="res-status").set_value([]).run()
    at.session_state["res-section"] = "Statistics"  # a lazy tab: drawn once opened
    t = time.perf_counter(); at.selectbox(key="res-exp").set_value(experiments[1]).run()
    out["results_experiment"] = time.perf_counter() - t
    assert not at.exception, at.exception
    t = time.perf_counter(); at.run(); out["results_experiment_again"] = time.perf_counter() - t
else:
    out["results_experiment"] = out["results_experiment_again"] = float("nan")
print(json.dumps(out))
"""


def room_config() -> dict:
    from ui.room import rooms
    from ui.room.templates import MUG_NEGOTIATION

    return rooms.draft_from_template(MUG_NEGOTIATION).config().to_dict()


def log(n: int, roster: tuple[str, str] = ("Buyer", "Seller")) -> list[dict]:
    records = [{"kind": "human", "speaker": "user", "content": "Negotiate the mug.", "activity": 1}]
    for i in range(1, n):
        records.append(
            {
                "kind": "agent",
                "speaker": roster[i % 2],
                "content": f"Offer {i}: I could do ${3 + i % 7} for the mug, final answer maybe.",
                "activity": 1,
                "model": "offline",
                "input_tokens": 120 + i,
                "output_tokens": 14,
                "cost": 0.0001,
                "latency": 0.01,
            }
        )
    return records


def build(url: str, rooms: int, big_room: int) -> float:
    import storage
    from storage import Database

    started = time.perf_counter()
    config = room_config()
    db = Database(url)
    per_experiment = 100
    in_experiments = max(0, rooms - 100)
    made = 0
    for e in range(-(-in_experiments // per_experiment)):
        count = min(per_experiment, in_experiments - made)
        design = {"conditions": [{"label": f"c{c}", "traits": {}} for c in range(4)]}
        planned = [
            storage.ExperimentRoom(
                name=f"study {e} | c{i % 4} | #{i // 4 + 1}",
                config=config,
                condition=f"c{i % 4}",
                replicate=i // 4 + 1,
                opening="Negotiate the mug.",
                speaker="user",
                request_id=f"e{e}-{i}",
            )
            for i in range(count)
        ]
        storage.create_experiment(db, f"study {e}", design, status="done", rooms=planned)
        made += count
    for i in range(rooms - made - 1):
        storage.create_room_with_log(db, f"room {i}", config, log(8), status="terminated")
    storage.create_room_with_log(db, "the long one", config, log(big_room), status="terminated")
    db.dispose()
    return time.perf_counter() - started


def measure(url: str, home: Path) -> dict[str, float]:
    env = os.environ | {
        "ROOMS_DATABASE_URL": url,
        "ROOMS_APP_RUNNER": "0",
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    for key in [k for k in env if k.endswith("_API_KEY")]:
        env.pop(key)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(ROOT / "app.py")],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--big-room", type=int, default=2000)
    parser.add_argument("--db", help="measure this database instead of building one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        home = base / "home"
        home.mkdir()
        empty = f"sqlite:///{base / 'empty.db'}"
        big = f"sqlite:///{base / 'big.db'}"
        from storage import Database

        Database(empty).dispose()
        if args.db:
            big = args.db
        else:
            built = build(big, args.rooms, args.big_room)
            print(f"built {args.rooms} rooms (one of {args.big_room} messages) in {built:.1f} s")
        figures = {"empty": measure(empty, home), "big": measure(big, home)}
    print(f"{'':26}{'empty db':>10}{'big db':>10}{'ratio':>8}")
    names = ("home_first", "home_again", "results_first", "results_again", "results_widget")
    for name in (*names, "results_experiment", "results_experiment_again"):
        e, b = figures["empty"][name], figures["big"][name]
        print(f"{name:26}{e:>9.2f}s{b:>9.2f}s{b / e:>8.2f}")
    print("targets: home_first < 3 s on a fresh server; results_first and every rerun < 1 s")


if __name__ == "__main__":
    main()
