"""A study that runs by itself (issue 31): with only ``python -m conversation.worker`` running,
no page open and no ``tick`` called, the study forms its group, records an absence with its seat
rule, sends a lone waiting person home at the lobby timeout, records people gone at the consent
and the post-survey, ends the room at its time limit, and every exit has its code."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import storage
from conversation import study as S
from tests.conversation.study.helpers import definition_dict
from tests.support.room_common import ROOT, child_env

pytestmark = pytest.mark.slow


def wait_until(check: Callable[[], Any], timeout: float, what: str, worker: Any = None) -> Any:
    """Poll ``check`` until it returns something truthy (a deadline, not a speed figure)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if worker is not None and worker.poll() is not None:
            raise AssertionError(
                f"the worker exited while waiting for {what}: {worker.stderr.read()}"
            )
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


class Present:
    """A person whose page stays open: says "still here" every half second until told."""

    def __init__(self, db: storage.Database, token: str) -> None:
        self.db, self.token = db, token
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(0.5):
            S.heartbeat(self.db, self.token)

    def leave(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _exit(db: storage.Database, participant_id: int) -> tuple[str | None, str | None]:
    person = storage.get_participant(db, participant_id)
    return person.exit_status, person.exit_code


@pytest.mark.timeout(600)
def test_a_study_moves_with_only_a_worker_running(tmp_path: Path, db_url: str) -> None:
    db = storage.Database(db_url)
    data = definition_dict(
        lobby={"timeout_seconds": 10, "on_timeout": "home"},
        room={"time_limit_seconds": 30},
        participants={"heartbeat_seconds": 1, "dropout_seconds": 5, "on_dropout": "agent"},
    )
    found = S.launch_study(db, S.load_definition(json.dumps(data), fmt="json"))
    code = found.code
    people = {}
    for name in ("stays", "leaves"):
        token = S.join(db, code, {"PROLIFIC_PID": name})
        S.give_consent(db, token.token)
        S.answer_survey(db, token.token, {"bargained_before": "no"})
        people[name] = token
    # Both keep their page open until the group forms (a worker slow to start must not find
    # one of them already gone from the lobby); then one of them closes it.
    stays = Present(db, people["stays"].token)
    leaves = Present(db, people["leaves"].token)
    worker = subprocess.Popen(
        [sys.executable, "-m", "conversation.worker", "--db", db_url, "--poll", "0.2"],
        cwd=ROOT,
        env=child_env(tmp_path / "home", db_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The lobby forms the group, with no page and no tick (the worker's start included).
        view = wait_until(
            lambda: (v := S.participant_view(db, people["stays"].token)).stage == "room" and v,
            180,
            "the group to form",
            worker,
        )
        leaves.leave()
        # The one who left is recorded dropped, their seat given to its agent, in one write.
        assert (
            wait_until(lambda: _exit(db, people["leaves"].participant_id)[0], 60, "the absence")
            == "dropped"
        )
        assert _exit(db, people["leaves"].participant_id)[1] == "CMUG0004"
        (group,) = storage.list_groups(db, found.id)
        assert "agent" in group.seats.values()
        kinds = [e.kind for e in storage.study_events(db, found.id)]
        assert "seat_taken_by_agent" in kinds
        # A lone person in the lobby is sent home at the lobby timeout; one who never got past
        # the consent is recorded gone.
        alone = S.join(db, code, {"PROLIFIC_PID": "alone"})
        S.give_consent(db, alone.token)
        S.answer_survey(db, alone.token, {"bargained_before": "yes"})
        waiting = Present(db, alone.token)
        reader = S.join(db, code, {"PROLIFIC_PID": "reader"})
        wait_until(lambda: _exit(db, alone.participant_id)[0], 60, "the lobby timeout")
        waiting.leave()
        assert _exit(db, alone.participant_id) == ("lobby_timeout", "CMUG0003")
        wait_until(lambda: _exit(db, reader.participant_id)[0], 60, "the reader's absence")
        assert _exit(db, reader.participant_id) == ("abandoned", "CMUG0004")
        # The room ends at its time limit: on to the post-survey.
        wait_until(
            lambda: S.participant_view(db, people["stays"].token).stage == "post_survey",
            90,
            "the time limit",
        )
        room = storage.get_room(db, view.room_id or 0)
        assert (room.status, room.stop_reason) == ("stopped", "the time limit was reached")
        stays.leave()  # gone at the post-survey
        wait_until(lambda: _exit(db, people["stays"].participant_id)[0], 60, "the last absence")
        assert _exit(db, people["stays"].participant_id) == ("unfinished", "CMUG0004")
        assert all(p.exit_code for p in storage.list_participants(db, found.id))
    finally:
        stays.leave()
        leaves.leave()
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
        db.dispose()
    assert worker.returncode == 0, worker.stderr.read() if worker.stderr else ""
