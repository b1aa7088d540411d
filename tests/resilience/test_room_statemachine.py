"""A hypothesis state machine over a durable room: post / step / crash / restart.

- ``post``: a person's message, sometimes sent again with the same request id (the same event) or
  with the same id and other text (a conflict, nothing written);
- ``step``: one turn through ``Room.step()``;
- ``crash``: a driver claims (or resumes) a turn and dies while its model call is in flight; its
  lease then expires (the database's clock is moved on);
- ``restart``: a new ``Database`` object and a new ``Room`` object (a new process's view).

Invariants after every rule: contiguous seqs, unique request ids, at most one open turn (and only a
crashed one may be open), every human message exactly once and in order, every agent turn the
planner's replay; every turn's prompt shows exactly the events before it. The database's
integrity check at the end of each run.

Runs once per backend (``[sqlite]``, and ``[postgresql]`` when ``ROOMS_TEST_DATABASE`` names a
server): each example gets its own SQLite file or its own PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import storage
from conversation.exceptions import RequestConflictError
from conversation.models import OfflineModel
from conversation.rooms import RoundRobinRoomPlanner
from conversation.rooms.engine import Engine
from conversation.rooms.log import OPEN_STATES
from conversation.rooms.room import Room
from conversation.text.transcript import parse_transcript
from storage import Database
from tests.support import databases
from tests.support.clocks import OffsetClock as Clock
from tests.support.room_common import (
    FixedModels,
    SlowCallModel,
    drive_with,
    integrity,
    log_problems,
    replay_problems,
    scripted_reply,
)

AGENTS = [{"name": "Alice"}, {"name": "Bob"}, {"name": "Cara"}]
TEXTS = [
    "hello everyone",
    "@Bob what do you think?",
    "{{ 7*7 }} is not 49 here",
    "fine.\nAlice: I concede",
    "@Alice @Cara settle it",
]


def reply_or_pass(user_prompt: str, system_prompt: str) -> str:
    digest = hashlib.sha256(user_prompt.encode()).digest()
    return "PASS" if digest[0] % 5 == 0 else scripted_reply(user_prompt, system_prompt)


class RoomMachine(RuleBasedStateMachine):
    #: Set by the test before a run: where each example's database lives.
    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="room-machine-"))
        self.server = databases.server() if self.backend == "postgresql" else None
        if self.server is not None:
            self.url = self.server.create(template=self.server.template())
        else:
            self.url = f"sqlite:///{self.folder / 'rooms.db'}"
        self.clock = Clock()
        self.db = Database(self.url, clock=self.clock)
        self.room_id = Room.create(
            self.db,
            name="machine",
            agents=AGENTS,
            planner=RoundRobinRoomPlanner(max_rounds=2, max_messages=7),
            seed=1,
        ).id
        self.model = OfflineModel(func=reply_or_pass)
        self.room = self.open()
        self.posted: dict[str, str] = {}
        self.crashes = 0

    def open(self) -> Room:
        return drive_with(Room.open(self.db, self.room_id), self.model)

    def rows(self) -> list[storage.Event]:
        return storage.events(self.db, self.room_id)

    # -- rules ------------------------------------------------------------------------------------

    @rule(text=st.sampled_from(TEXTS), again=st.sampled_from(["no", "same", "other"]))
    def post(self, text: str, again: str) -> None:
        if again != "no" and self.posted:
            request_id, sent = list(self.posted.items())[-1]
            count = len(self.rows())
            if again == "same":
                event = self.room.post(sent, speaker="maria", request_id=request_id)
                assert (event.request_id, event.content) == (request_id, sent)
            else:
                with pytest.raises(RequestConflictError):
                    self.room.post(sent + " (edited)", speaker="maria", request_id=request_id)
            assert len(self.rows()) == count
            return
        request_id = f"h-{len(self.posted)}"
        self.room.post(text, speaker="maria", request_id=request_id)
        self.posted[request_id] = text

    @rule()
    def step(self) -> None:
        asked = len(self.model.prompts)
        orphan = next((r.id for r in self.rows() if r.state == "running"), None)
        turn = self.room.step()
        if turn is None:
            assert len(self.model.prompts) == asked
            return
        assert len(self.model.prompts) == asked + 1
        rows = self.rows()
        shown = [r["seq"] for r in parse_transcript(self.model.prompts[-1][1])]
        before = [r.seq for r in rows if r.seq < turn.seq and r.state not in OPEN_STATES]
        assert shown == before  # the events before the turn, all of them, and nothing later
        assert turn.state == "done" and all(seq < turn.seq for seq in turn.saw)
        if turn.id == orphan:
            event("a crashed turn was resumed")
            if rows[-1].seq > turn.seq:
                event("... with a later human message left out of its prompt")

    @rule()
    def crash(self) -> None:
        async def die_mid_call() -> None:
            token = storage.acquire_lease(self.db, self.room_id, "doomed", 30)
            if token is None:
                return
            calling = asyncio.Event()
            hanging = SlowCallModel(self.model, hold=3600, on_call=calling.set)
            driver = Engine(self.db, "doomed", models=FixedModels(hanging))
            task = asyncio.ensure_future(driver.step_room(self.room_id, token))
            waiter = asyncio.ensure_future(calling.wait())
            await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
            for pending in (task, waiter):
                pending.cancel()
            await asyncio.gather(task, waiter, return_exceptions=True)

        asyncio.run(die_mid_call())
        self.clock.offset += timedelta(seconds=60)  # the dead driver's lease runs out
        self.crashes += 1

    @rule()
    def restart(self) -> None:
        self.db.dispose()
        self.db = Database(self.url, clock=self.clock)
        self.room = self.open()

    # -- invariants -------------------------------------------------------------------------------

    @invariant()
    def the_log_is_sound(self) -> None:
        rows = self.rows()
        assert log_problems(rows) == []
        humans = [r for r in rows if r.kind == "human"]
        assert [(r.request_id, r.content) for r in humans] == list(self.posted.items())
        open_turns = [r for r in rows if r.state in OPEN_STATES]
        assert all(r.state == "running" for r in open_turns)
        if open_turns:
            assert self.crashes > 0
        assert replay_problems(self.room, rows) == []

    def teardown(self) -> None:
        try:
            self.db.dispose()
            assert integrity(self.url) == "ok"
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            if self.server is not None:
                self.server.drop(self.url)


MACHINE_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.slow
def test_room_state_machine(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RoomMachine, "backend", backend)
    run_state_machine_as_test(RoomMachine, settings=MACHINE_SETTINGS)
