"""Faults with people in the rooms (issue 31): 24 participants (12 rooms of 2 people and an agent
mediator) chatting, then

- ``kill -9`` of the app, down longer than the study's absence limit, while a separate worker
  keeps the study's clock running, and the app restarted on the same port;
- a real PostgreSQL restart, down longer than the absence limit, the app and the worker up.

Each time every page reconnects by itself (the sessions here do what the page's script does), no
message is lost (everything sent before and after is stored and on the partner's screen), and
nobody is dropped: the clock never counted the outage as anyone's absence (presence comes from
the open streams). The participants are the page spoken over HTTP and its event stream
(``tests.support.study_sessions``): 24 browsers would take the server's CPU on this machine;
``tests/browser/participant/test_outage.py`` shows the outage's words in Chromium.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import storage
from conversation import study as S
from tests.browser.conftest import AppServer, free_port
from tests.conversation.study.helpers import definition_dict
from tests.support import pg_cluster
from tests.support.room_common import ROOT, child_env
from tests.support.study_sessions import Participant

pytestmark = pytest.mark.slow

PEOPLE = 24
ABSENCE_LIMIT = 15  # seconds: every outage below lasts longer
OUTAGE_SECONDS = 30


class Server(AppServer):
    """The app on a database of the test's choosing (a SQLite file, or the test's cluster)."""

    url_of_database: str = ""

    @property
    def db_url(self) -> str:  # type: ignore[override]
        return self.url_of_database or f"sqlite:///{self.folder / 'rooms.db'}"

    def env(self) -> dict[str, str]:
        env = super().env()
        env.update(ROOMS_PARTICIPANT_POLL_SECONDS="1", ROOMS_RUNNER_POLL_SECONDS="0.2")
        return env


@pytest.fixture
def worker_of() -> Iterator[Any]:
    started: list[subprocess.Popen[str]] = []

    def start(folder: Path, db_url: str) -> subprocess.Popen[str]:
        log = (folder / "worker.log").open("a")
        process = subprocess.Popen(
            [sys.executable, "-m", "conversation.worker", "--db", db_url, "--poll", "0.2", "-v"],
            cwd=ROOT,
            env=child_env(folder / "worker-home", db_url),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def launch(db_url: str) -> str:
    data = definition_dict(
        experiment={"groups": PEOPLE // 4},  # 2 conditions x 6 groups of 2 people
        room={"time_limit_seconds": 3600, "words_per_minute": 0},
        lobby={"timeout_seconds": 600},
        participants={
            "cap": PEOPLE,
            "heartbeat_seconds": 1,
            "dropout_seconds": ABSENCE_LIMIT,
            "on_dropout": "agent",
        },
        pre_survey=[],
    )
    db = storage.Database(db_url)
    try:
        return S.launch_study(db, S.load_definition(json.dumps(data), fmt="json")).code
    finally:
        db.dispose()


async def seated(url: str, code: str) -> list[Participant]:
    people = [Participant(url, code, f"fault-{n}") for n in range(PEOPLE)]
    for person in people:
        await person.open()
    await asyncio.gather(*(p.click("I agree") for p in people))
    await asyncio.gather(*(p.wait_seated(240) for p in people))
    return people


def partners(db_url: str, code: str, people: list[Participant]) -> dict[int, int]:
    """Each person's partner in their room, by their number."""
    number = {p.pid: n for n, p in enumerate(people)}
    db = storage.Database(db_url)
    try:
        pids = {r["pseudonym"]: r["PROLIFIC_PID"] for r in S.recruitment_table(db, code)}
        rooms: dict[Any, list[int]] = {}
        for row in S.participants_table(db, code):
            rooms.setdefault(row["room_id"], []).append(number[pids[row["pseudonym"]]])
    finally:
        db.dispose()
    found = {}
    for members in rooms.values():
        assert len(members) == 2, rooms
        a, b = members
        found[a], found[b] = b, a
    return found


#: What the page says when a message could not be stored (the database out of reach): the text
#: stays in the box, and the person sends it again.
NOT_SENT = "Not sent yet"
RESENT: list[str] = []


async def exchange(people: list[Participant], partner: dict[int, int], word: str) -> list[str]:
    """Everyone sends one message; each must reach their partner's screen. A person told their
    message was not sent yet sends it again, as the page asks them to (counted in RESENT)."""
    sent = []
    for n, person in enumerate(people):
        text = f"{word} from person {n}"
        await person.chat(text)
        sent.append(text)
        await asyncio.sleep(0.05)

    def arrived(n: int) -> bool:
        return any(f"{word} from person {n}" in t for t in people[partner[n]].seen)

    deadline = asyncio.get_running_loop().time() + 240
    while not all(arrived(n) for n in range(PEOPLE)):
        for n in range(PEOPLE):
            told = [t for t in people[n].seen if t.startswith(NOT_SENT)]
            if not arrived(n) and told:
                for notice in told:
                    del people[n].seen[notice]  # the next refusal is seen anew
                RESENT.append(sent[n])
                await people[n].chat(sent[n])
        if asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.5)
    missing = [n for n in range(PEOPLE) if not arrived(n)]
    if missing:

        def newest(n: int) -> list[str]:
            return [t for t in people[n].seen if not t.startswith("Time left")][-8:]

        senders = {n: newest(n) for n in missing}
        newest_of = {partner[n]: newest(partner[n]) for n in missing}
        raise AssertionError(
            f"not on the partner's screen: {missing}; the partners' newest texts: {newest_of}; "
            f"the senders': {senders}"
        )
    return sent


def check_nobody_dropped_and_nothing_lost(db_url: str, code: str, sent: list[str]) -> None:
    db = storage.Database(db_url)
    try:
        rows = S.participants_table(db, code)
        assert [r["exit_status"] for r in rows] == [None] * PEOPLE, rows
        assert {r["stage"] for r in rows} == {"room"}
        kinds = {e["kind"] for e in S.study_events_table(db, code)}
        assert not kinds & {"dropped", "seat_taken_by_agent", "room_ended"}, kinds
        said = [r["content"] for r in S.transcripts_table(db, code)]
        assert [t for t in sent if said.count(t) != 1] == []  # each stored once
        print(
            f"FAULT result: {len(rows)} people, dropped: {sum(bool(r['exit_status']) for r in rows)}, "
            f"messages stored once: {sum(said.count(t) == 1 for t in sent)}/{len(sent)}, "
            f"sent again after 'not sent yet': {len(RESENT)}"
        )
        RESENT.clear()
    finally:
        db.dispose()


async def _close(people: list[Participant]) -> None:
    await asyncio.gather(*(p.close() for p in people), return_exceptions=True)


@pytest.mark.timeout(900)
def test_kill_9_of_the_app_with_24_people_in_rooms(tmp_path: Path, worker_of: Any) -> None:
    server = Server(tmp_path / "app")
    server.folder.mkdir()
    code = launch(server.db_url)
    worker_of(server.folder, server.db_url)  # the study's clock goes on while the app is gone
    server.start(timeout=90)

    async def run() -> list[str]:
        people = await seated(server.url, code)
        try:
            partner = partners(server.db_url, code, people)
            sent = await exchange(people, partner, "before the kill")
            assert server.process is not None
            os.kill(server.process.pid, signal.SIGKILL)
            server.process.wait()
            down = time.monotonic()
            await asyncio.sleep(OUTAGE_SECONDS)
            server.start(timeout=90)
            up = time.monotonic()
            await asyncio.gather(*(p.wait_reconnected(120) for p in people))
            back = time.monotonic()
            sent += await exchange(people, partner, "after the restart")
            print(
                f"\nFAULT kill -9 of the app: down {up - down:.0f} s (absence limit "
                f"{ABSENCE_LIMIT} s, a worker's clock running); {sum(p.reconnects > 0 for p in people)}"
                f"/{PEOPLE} pages reconnected by themselves, the last {back - up:.1f} s after the "
                f"restart; {len(sent)} messages sent"
            )
            return sent
        finally:
            await _close(people)

    try:
        sent = asyncio.run(run())
    finally:
        server.stop()
    check_nobody_dropped_and_nothing_lost(server.db_url, code, sent)


@pytest.fixture
def cluster() -> Iterator[pg_cluster.Cluster]:
    why = pg_cluster.available()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    # Not under tmp_path: the postgres user cannot enter root's private test folders.
    folder = Path(tempfile.mkdtemp(prefix="pg-study-"))
    made = pg_cluster.Cluster(folder / "cluster", free_port()).init()
    made.start()
    yield made
    with contextlib.suppress(subprocess.CalledProcessError):
        made.stop("immediate")
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.timeout(900)
def test_a_postgresql_restart_with_24_people_in_rooms(
    tmp_path: Path, cluster: pg_cluster.Cluster, worker_of: Any
) -> None:
    server = Server(tmp_path / "app")
    server.url_of_database = cluster.url
    server.folder.mkdir()
    code = launch(server.db_url)
    worker_of(server.folder, server.db_url)
    server.start(timeout=90)

    async def run() -> list[str]:
        people = await seated(server.url, code)
        try:
            partner = partners(server.db_url, code, people)
            sent = await exchange(people, partner, "before the restart")
            cluster.stop("fast")  # every connection cut; nothing answers
            down = time.monotonic()
            await asyncio.sleep(OUTAGE_SECONDS)
            saw_the_words = sum(p.saw_outage for p in people)
            cluster.start()
            up = time.monotonic()
            sent += await exchange(people, partner, "after the restart")
            assert saw_the_words, "no page said the study's words during the outage"
            print(
                f"\nFAULT PostgreSQL restart: down {up - down:.0f} s (absence limit "
                f"{ABSENCE_LIMIT} s); {saw_the_words}/{PEOPLE} pages said the study's words "
                f"meanwhile; {len(sent)} messages sent"
            )
            return sent
        finally:
            await _close(people)

    try:
        sent = asyncio.run(run())
    finally:
        server.stop()
    check_nobody_dropped_and_nothing_lost(server.db_url, code, sent)
