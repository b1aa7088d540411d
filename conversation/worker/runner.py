"""The runner: drives every runnable room of a database, many at once.

``Worker.run()`` is one asyncio loop: it lists rooms whose status is ``running`` and whose lease is
free or expired, takes the lease of up to ``concurrency`` of them, and drives each room's turns
(``room_driver.TurnDriver``) until it settles, waits for a person, pauses, stops, fails or
terminates; then it releases the lease and picks another. Several workers (threads, processes,
machines) on one database never run the same turn: the lease decides who drives a room, and every
commit is fenced by the lease token.

The web app runs one ``BackgroundWorker`` (a thread with its own loop) per server process; the
same code runs headless (``conversation.worker.cli``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import storage
from conversation.experiments.runs import finish_experiments
from conversation.models.bindings import ModelCache
from conversation.rooms.engine import (
    Settled,
    TurnDriver,
    committed_event,
    failure_reason,
    owner_id,
    settlement,
)

log = logging.getLogger(__name__)

#: How often a worker marks finished experiments as done.
EXPERIMENT_CHECK_SECONDS = 5.0


class Worker:
    """Drives runnable rooms of ``db``, at most ``concurrency`` at a time.

    Work is batched across rooms: one read transaction plans every room that is due, one write
    transaction claims all their turns, model calls run concurrently, and the replies that have
    arrived are committed together (a group commit, each fenced on its own). With hundreds of
    rooms this is what keeps the database from being the bottleneck.
    """

    def __init__(
        self,
        db: storage.Database,
        *,
        concurrency: int = 8,
        lease_ttl: float = 60.0,
        poll_interval: float = 0.5,
        owner: str | None = None,
        cache: Any = None,
    ) -> None:
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
        self.db = db
        self.concurrency = concurrency
        self.poll_interval = poll_interval
        self.owner = owner or owner_id("worker")
        self.driver = TurnDriver(
            db,
            self.owner,
            lease_ttl=lease_ttl,
            cache=cache,
            model_cache=ModelCache(),
        )
        self.turns_taken = 0
        self._tokens: dict[int, int] = {}  # rooms whose lease we hold -> token
        self._due: set[int] = set()  # rooms to plan next
        self._calls: dict[int, asyncio.Task[Any]] = {}  # rooms with a model call in flight
        self._refusals: dict[int, int] = {}
        self._rows: dict[int, list[storage.Event]] = {}  # the logs of held rooms, kept current
        self._releasing: dict[int, int] = {}
        self._renewed = 0.0
        self._experiments_checked = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None

    # -- control (thread-safe) ----------------------------------------------------------------

    def wake(self) -> None:
        """Look for runnable rooms now (e.g. after a human message was posted)."""
        self._call_soon(lambda: self._wake.set() if self._wake else None)

    def stop(self) -> None:
        """Ask ``run()`` to return; rooms in flight are released (their turns resume later)."""
        self._call_soon(lambda: self._stopping.set() if self._stopping else None)

    def _call_soon(self, action: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(action)

    # -- the loop -------------------------------------------------------------------------------

    async def run(self, *, until_idle: bool = False) -> int:
        """Drive rooms until ``stop()`` (or, with ``until_idle``, until no room is runnable and
        none is held). Returns the number of turns taken."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._renewed = self._loop.time()
        try:
            while not self._stopping.is_set():
                started = self._acquire_rooms()
                self._plan_due()
                if until_idle and not self._tokens and started == 0:
                    break
                self._wake.clear()
                waiter = asyncio.ensure_future(self._wake.wait())
                pending = [waiter, *self._calls.values()]
                timeout = 0 if self._due else self.poll_interval
                await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                self._commit_replies()
                self._renew_leases()
                self._finish_experiments()
            self._finish_experiments(force=True)
        finally:
            for task in self._calls.values():
                task.cancel()
            if self._calls:
                await asyncio.gather(*self._calls.values(), return_exceptions=True)
            self._calls.clear()
            for room_id in list(self._tokens):
                self._release(room_id)
            self._flush_releases()
        return self.turns_taken

    def _acquire_rooms(self) -> int:
        free = self.concurrency - len(self._tokens)
        if free <= 0:
            return 0
        started = 0
        for room_id in storage.list_runnable_rooms(self.db, limit=free + len(self._tokens)):
            if started >= free:
                break
            if room_id in self._tokens:
                continue
            token = storage.acquire_lease(self.db, room_id, self.owner, self.driver.lease_ttl)
            if token is None:
                continue  # another worker took it first
            self._tokens[room_id] = token
            self._due.add(room_id)
            started += 1
        return started

    def _plan_due(self) -> None:
        """Plan every due room from one read, then claim all their turns in one write and settle
        the finished rooms in another."""
        if not self._due:
            return
        due, self._due = sorted(self._due), set()
        known = {rid: self._rows[rid][-1].seq for rid in due if self._rows.get(rid)}
        logs = storage.room_logs(self.db, due, after_seq=known)
        claims: list[tuple[int, Any]] = []
        settlements: list[storage.RoomSettlement] = []
        for room_id in due:
            token = self._tokens.get(room_id)
            if token is None:
                continue
            if room_id not in logs:
                self._release(room_id)
                continue
            room, new_rows = logs[room_id]
            rows = self._rows.setdefault(room_id, [])
            rows.extend(new_rows)
            try:
                decision = self.driver.decide(room, list(rows), token)
            except Exception:
                log.exception("room %s: cannot plan its next turn", room_id)
                self._release(room_id)
                continue
            if decision.settled is not None:
                if decision.write:
                    settlements.append(settlement(room_id, token, decision.settled))
                self._release(room_id)
            elif decision.resume is not None:
                if storage.lease_is_current(self.db, room_id, token):
                    self._start_call(room_id, decision, decision.resume)
                else:
                    self._release(room_id)
            else:
                claims.append((room_id, decision))
        if settlements:
            storage.settle_rooms(self.db, settlements)
        self._flush_releases()
        if not claims:
            return
        claimed = storage.claim_turns(self.db, [decision.claim for _, decision in claims])
        for (room_id, decision), turn in zip(claims, claimed, strict=True):
            if turn is None:
                # The log moved (plan again) or the lease is gone (give the room up).
                self._refusals[room_id] = self._refusals.get(room_id, 0) + 1
                if self._refusals[room_id] > 3:
                    self._release(room_id)
                else:
                    self._due.add(room_id)
                continue
            self._refusals.pop(room_id, None)
            self._rows[room_id].append(turn)
            self._start_call(room_id, decision, turn)
        self._flush_releases()

    def _start_call(self, room_id: int, decision: Any, turn: storage.Event) -> None:
        token = self._tokens[room_id]

        async def call() -> tuple[Any, storage.Event, Any]:
            outcome = await self.driver.call(
                room_id, token, decision.config, decision.rows, turn, decision.prompt, renew=False
            )
            return decision, turn, outcome

        self._calls[room_id] = asyncio.ensure_future(call())

    def _commit_replies(self) -> None:
        """Commit every reply that has arrived, in one transaction (a group commit)."""
        batch: list[tuple[int, storage.Event, storage.TurnCommit]] = []
        for room_id, task in list(self._calls.items()):
            if not task.done():
                continue
            del self._calls[room_id]
            if task.cancelled():
                self._release(room_id)
                continue
            error = task.exception()
            if error is not None:
                log.error("room %s: turn failed unexpectedly", room_id, exc_info=error)
                self._release(room_id)
                continue
            decision, turn, outcome = task.result()
            if isinstance(outcome, Settled):
                if outcome.again:
                    self._due.add(room_id)
                else:
                    self._release(room_id)
                continue
            token = self._tokens[room_id]
            batch.append(
                (room_id, turn, self.driver.commit_for(turn, token, decision.config, outcome))
            )
        if not batch:
            return
        results = storage.commit_turns(self.db, [commit for _, _, commit in batch])
        waiting: list[storage.RoomSettlement] = []
        for (room_id, turn, commit), ok in zip(batch, results, strict=True):
            if not ok:
                self._release(room_id)  # fenced out: stopped by a person, or the lease was lost
                continue
            self.turns_taken += 1
            rows = self._rows.get(room_id)
            if rows and rows[-1].id == turn.id:
                rows[-1] = committed_event(turn, commit)
            else:
                self._rows.pop(room_id, None)  # unexpected shape: read it whole next time
            if commit.state == "waiting":
                waiting.append(settlement(room_id, self._tokens[room_id], Settled("waiting")))
                self._release(room_id)
            elif commit.state == "failed":
                reason = failure_reason(committed_event(turn, commit))
                waiting.append(
                    settlement(room_id, self._tokens[room_id], Settled("failed", reason))
                )
                self._release(room_id)
            else:
                self._due.add(room_id)
        if waiting:
            storage.settle_rooms(self.db, waiting)
        self._flush_releases()

    def _renew_leases(self) -> None:
        """Renew every held lease once a third of its time is gone."""
        loop = self._loop
        assert loop is not None
        if loop.time() - self._renewed < self.driver.lease_ttl / 3:
            return
        self._renewed = loop.time()
        for room_id, token in list(self._tokens.items()):
            if not storage.renew_lease(self.db, room_id, self.owner, token, self.driver.lease_ttl):
                task = self._calls.pop(room_id, None)
                if task is not None:
                    task.cancel()
                self._tokens.pop(room_id, None)
                self._due.discard(room_id)

    def _finish_experiments(self, *, force: bool = False) -> None:
        """Every few seconds, mark experiments whose rooms all finished as done (so a headless
        worker completes them without anyone opening the app)."""
        loop = self._loop
        assert loop is not None
        if not force and loop.time() - self._experiments_checked < EXPERIMENT_CHECK_SECONDS:
            return
        self._experiments_checked = loop.time()
        try:
            finish_experiments(self.db)
        except Exception:  # bookkeeping must never stop the rooms
            log.exception("experiment bookkeeping failed")

    def _release(self, room_id: int) -> None:
        """Give the room up (its lease is released with the next flush)."""
        token = self._tokens.pop(room_id, None)
        self._due.discard(room_id)
        self._refusals.pop(room_id, None)
        self._rows.pop(room_id, None)
        if token is not None:
            self._releasing[room_id] = token

    def _flush_releases(self) -> None:
        if not self._releasing:
            return
        releasing, self._releasing = self._releasing, {}
        try:
            storage.release_leases(self.db, self.owner, releasing)
        except Exception:  # the database may be gone at shutdown; the leases simply expire
            log.debug("leases not released: %s", sorted(releasing), exc_info=True)


class BackgroundWorker:
    """A ``Worker`` on its own thread and event loop (one per web-server process).

    It never touches Streamlit; pages see its work by reading the database.
    """

    def __init__(self, db: storage.Database, **options: Any) -> None:
        self.worker = Worker(db, **options)
        self._thread = threading.Thread(target=self._serve, name="rooms-worker", daemon=True)
        self._started = threading.Event()

    def _serve(self) -> None:
        async def main() -> None:
            self._started.set()
            await self.worker.run()

        asyncio.run(main())

    def start(self) -> BackgroundWorker:
        self._thread.start()
        self._started.wait(timeout=10)
        return self

    def wake(self) -> None:
        self.worker.wake()

    def stop(self, timeout: float = 10.0) -> None:
        self.worker.stop()
        self._thread.join(timeout=timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


__all__ = ["BackgroundWorker", "Worker"]
