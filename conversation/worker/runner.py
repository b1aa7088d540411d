"""The runner: drives every runnable room of a database, many at once.

``Worker.run()`` is one asyncio loop: it lists rooms whose status is ``running`` and whose lease is
free or expired, takes the lease of up to ``concurrency`` of them, and drives each room's turns
with the one turn engine (``conversation.rooms.engine``) until it settles, waits for a person,
pauses, stops, fails or terminates; then it releases the lease and picks another. Several workers
(threads, processes, machines) on one database never run the same turn: the lease decides who
drives a room, and every commit is fenced by the lease token.

The web app runs one ``BackgroundWorker`` (a thread with its own loop) per server process; the
same code runs headless (``conversation.worker.cli``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import threading
from dataclasses import dataclass
from typing import Any

import storage
from conversation.boundary import translated, unavailable
from conversation.exceptions import StorageUnavailableError
from conversation.experiments.runs import catch_up
from conversation.models.bindings import ModelCache
from conversation.rooms.engine import Call, Engine, HeldRoom, Reply, Step, owner_id
from conversation.vocabulary import RoomStatus, TurnState
from conversation.worker.takeover import take_over_gone_owners

log = logging.getLogger(__name__)

#: How often a worker marks finished experiments as done.
EXPERIMENT_CHECK_SECONDS = 5.0
#: Rooms planned, or replies committed, per write transaction. Small enough that the first rooms'
#: next model calls are already waiting while the worker commits the later ones (the model's
#: latency overlaps the worker's own work instead of adding to it), large enough that one
#: commit's fixed cost is shared by many turns (a group commit).
CHUNK = 64
#: Times the runnable list is read again in one pass while other workers win its rooms.
ACQUIRE_ROUNDS = 8
#: Seconds a room's lease lasts; renewed every third of it while held (a heartbeat), so a room
#: whose driver died on another machine moves again within this time.
LEASE_TTL_SECONDS = 20.0
#: Seconds between looks for leases left by a gone process of this host (see worker/takeover.py).
TAKEOVER_SECONDS = 5.0
#: The garbage collector's thresholds in a process that is only a worker (Python's: 700, 10,
#: 10). Every collection of the youngest generation moves what is alive into the next, and a
#: worker always holds the state of every room in flight (logs, calls, prompts): collected at
#: Python's pace, that state was walked again and again by second-generation collections, half
#: the worker's collecting time (measured with 200 rooms). Less often, it has mostly died first:
#: with 200 rooms x 10 turns, a youngest-generation threshold of 5,000 spent 0.065 s of CPU
#: collecting (0.03 ms a turn), 50,000 half that (a turn's garbage is mostly freed by reference
#: counting; what a collection finds alive is the rooms' state, walked at each collection).
#: The young generation then holds up to 50,000 container objects: a few MB.
WORKER_GC_THRESHOLDS = (50000, 20, 10)


class Worker:
    """Drives runnable rooms of ``db``, at most ``concurrency`` at a time.

    Work is batched across rooms with the engine's own phases (``Engine.begin`` / ``call`` /
    ``finish``): one read plans every room that is due, one write claims all their turns, model
    calls run concurrently, and the replies that have arrived are committed together (a group
    commit, each fenced on its own). With hundreds of rooms this is what keeps the database from
    being the bottleneck. A database that is locked past its busy timeout or a dropped connection
    is waited out (growing backoff), never fatal; a room that cannot be planned fails alone.
    """

    def __init__(
        self,
        db: storage.Database,
        *,
        concurrency: int = 8,
        lease_ttl: float = LEASE_TTL_SECONDS,
        poll_interval: float = 0.5,
        owner: str | None = None,
        cache: Any = None,
        freeze_start_up_heap: bool = False,
    ) -> None:
        """``freeze_start_up_heap`` (for a process that is only a worker, as the command line's):
        once the first turns are committed (every module a model call loads is loaded by then),
        the objects alive are moved out of the garbage collector's reach (``gc.freeze()``), so
        its full collections stop walking EDSL's few hundred thousand start-up objects, a
        quarter of a second per collection measured with 200 rooms; and the collector runs at
        ``WORKER_GC_THRESHOLDS``."""
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
        self.db = db
        self.concurrency = concurrency
        self.poll_interval = poll_interval
        self.owner = owner or owner_id("worker")
        self.engine = Engine(db, self.owner, lease_ttl=lease_ttl, cache=cache, models=ModelCache())
        self.turns_taken = 0
        self._held: dict[int, _Held] = {}  # rooms whose lease we hold
        self._releasing: dict[int, int] = {}
        self._renewed = 0.0
        self._experiments_checked = -EXPERIMENT_CHECK_SECONDS
        self._takeover_checked = -TAKEOVER_SECONDS
        self._backoff = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None
        self._freeze_pending = freeze_start_up_heap

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
        # PostgreSQL: a room made runnable anywhere wakes this loop at once (polling stays).
        listener = storage.WorkListener(self.db.url, lambda _room: self.wake())
        listener.start()
        try:
            while not self._stopping.is_set():
                try:
                    with translated():
                        self._take_over_gone_owners()
                        self._acquire_rooms()
                        if until_idle and not self._held:
                            break  # nothing held and nothing runnable left
                        await self._begin_due()
                        self._backoff = 0.0
                except StorageUnavailableError as exc:
                    await self._wait_for_database(exc)
                    continue
                self._wake.clear()
                waiter = asyncio.ensure_future(self._wake.wait())
                calls = [h.task for h in self._held.values() if h.task is not None]
                due = any(h.due for h in self._held.values())
                await asyncio.wait(
                    [waiter, *calls],
                    timeout=0 if due else self.poll_interval,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                waiter.cancel()
                try:
                    with translated():
                        await self._finish_replies()
                        self._renew_leases()
                        self._flush_releases()
                        self._look_after_experiments()
                except StorageUnavailableError as exc:
                    await self._wait_for_database(exc)
            self._look_after_experiments(force=True)
        finally:
            listener.stop()
            tasks = [h.task for h in self._held.values() if h.task is not None]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            for room_id in list(self._held):
                self._release(room_id)
            self._flush_releases()
        return self.turns_taken

    async def _wait_for_database(self, exc: Exception) -> None:
        """Back off while the database cannot be used (locked, restarting, unreachable); the
        cached logs are dropped, since a write may or may not have landed."""
        self._backoff = min(max(self._backoff * 2, self.poll_interval), 30.0)
        log.warning("database unavailable, retrying in %.2f s: %s", self._backoff, exc)
        for held in self._held.values():
            held.record.forget_log()
            held.due = held.task is None
        assert self._stopping is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=self._backoff)

    def _take_over_gone_owners(self) -> None:
        """Every ``TAKEOVER_SECONDS`` (and at once on start): free the leases a crashed process
        of this host left, so its rooms move now rather than when the leases expire."""
        assert self._loop is not None
        if self._loop.time() - self._takeover_checked < TAKEOVER_SECONDS:
            return
        self._takeover_checked = self._loop.time()
        take_over_gone_owners(self.db)

    def _acquire_rooms(self) -> int:
        """Lease runnable rooms up to ``concurrency``. The list is a snapshot: another worker may
        lease some of its rooms first (two workers started together list the same rooms), so
        while rooms are lost that way the list is read again (they are leased now and left out);
        a worker never gives up, or exits ``until_idle``, over rooms someone else took."""
        taken_count = 0
        for _ in range(ACQUIRE_ROUNDS):
            free = self.concurrency - len(self._held)
            if free <= 0:
                break
            runnable = storage.list_runnable_rooms(self.db, limit=free + len(self._held))
            wanted = [room_id for room_id in runnable if room_id not in self._held][:free]
            if not wanted:
                break
            # One write for all of them; a room another worker took first is simply left out.
            taken = storage.acquire_leases(self.db, wanted, self.owner, self.engine.lease_ttl)
            for room_id, token in taken.items():
                self._held[room_id] = _Held(HeldRoom(room_id, token))
            taken_count += len(taken)
            if len(taken) == len(wanted):
                break
        return taken_count

    async def _begin_due(self) -> None:
        """Engine ``begin`` for every due room, ``CHUNK`` rooms at a time (plans, settlements
        and claims batched); each chunk's model calls start before the next chunk is planned."""
        due = [h for h in self._held.values() if h.due and h.task is None]
        for start in range(0, len(due), CHUNK):
            if start:
                await asyncio.sleep(0)  # let the calls just started reach their wait
            chunk = due[start : start + CHUNK]
            for held in chunk:
                held.due = False
            results = self.engine.begin([h.record for h in chunk])
            for held, result in zip(chunk, results, strict=True):
                if isinstance(result, Call):
                    held.task = asyncio.ensure_future(self._call(result))
                elif result.again:
                    held.due = True
                else:
                    self._release(held.record.room_id)

    async def _call(self, call: Call) -> tuple[Call, Reply | Step]:
        return call, await self.engine.call(call, renew=False)

    async def _finish_replies(self) -> None:
        """Commit every reply that has arrived, ``CHUNK`` replies per transaction (a group
        commit); each chunk's next calls start before the next chunk is committed."""
        arrived: list[tuple[Call, Reply]] = []
        for room_id, held in list(self._held.items()):
            task = held.task
            if task is None or not task.done():
                continue
            held.task = None
            if task.cancelled():
                self._release(room_id)
                continue
            error = task.exception()
            if error is not None:
                if unavailable(error):
                    held.record.forget_log()
                    held.due = True  # the turn is still open: resumed on the next plan
                    continue
                log.error("room %s: turn failed unexpectedly", room_id, exc_info=error)
                self._release(room_id)
                continue
            call, outcome = task.result()
            if isinstance(outcome, Step):
                if outcome.again:
                    held.due = True
                else:
                    self._release(room_id)
                continue
            arrived.append((call, outcome))
        for start in range(0, len(arrived), CHUNK):
            if start:
                await asyncio.sleep(0)  # let the calls just started reach their wait
            self._commit_chunk(arrived[start : start + CHUNK])

    def _commit_chunk(self, arrived: list[tuple[Call, Reply]]) -> None:
        if self._freeze_pending:
            self._freeze_pending = False
            gc.freeze()
            gc.set_threshold(*WORKER_GC_THRESHOLDS)
        for (call, _), step in zip(arrived, self.engine.finish(arrived), strict=True):
            room_id = call.held.room_id
            if step.turn is not None and step.turn.state != TurnState.RUNNING:
                # a turn still running was denied (e.g. stopped while drafting): not yet taken
                self.turns_taken += 1
            held = self._held[room_id]
            if step.turn is not None and step.status == RoomStatus.RUNNING:
                pending, held.record.pending = held.record.pending, None
                if pending is not None:  # claimed with this commit: ask the model at once
                    held.task = asyncio.ensure_future(self._call(pending))
                else:
                    held.due = True
            else:  # waiting for a person, failed, finished, or fenced out: give the room up
                self._release(room_id)

    def _renew_leases(self) -> None:
        """Renew every held lease once a third of its time is gone; a room whose lease is lost
        is dropped at once, with its cached log and its call in flight."""
        loop = self._loop
        assert loop is not None
        if loop.time() - self._renewed < self.engine.lease_ttl / 3:
            return
        self._renewed = loop.time()
        tokens = {room_id: held.record.token for room_id, held in self._held.items()}
        for room_id in storage.renew_leases(self.db, tokens, self.owner, self.engine.lease_ttl):
            held = self._held.pop(room_id)
            if held.task is not None:
                held.task.cancel()

    def _look_after_experiments(self, *, force: bool = False) -> None:
        """Every few seconds: create the rooms of running experiments that a crash left out, and
        mark experiments whose rooms all finished as done (so a headless worker completes an
        experiment without anyone opening the app)."""
        loop = self._loop
        assert loop is not None
        if not force and loop.time() - self._experiments_checked < EXPERIMENT_CHECK_SECONDS:
            return
        self._experiments_checked = loop.time()
        try:
            with translated():
                if catch_up(self.db):  # also marks finished experiments done
                    self.wake()
        except StorageUnavailableError:
            raise
        except Exception:  # bookkeeping must never stop the rooms
            log.exception("experiment bookkeeping failed")

    def _release(self, room_id: int) -> None:
        """Give the room up (its lease is released with the next flush)."""
        held = self._held.pop(room_id, None)
        if held is not None:
            self._releasing[room_id] = held.record.token

    def _flush_releases(self) -> None:
        if not self._releasing:
            return
        releasing, self._releasing = self._releasing, {}
        try:
            storage.release_leases(self.db, self.owner, releasing)
        except Exception:  # the database may be gone at shutdown; the leases simply expire
            log.debug("leases not released: %s", sorted(releasing), exc_info=True)


@dataclass(slots=True)
class _Held:
    """A held room in the worker: the engine's record, whether it is due to be planned, and its
    model call in flight."""

    record: HeldRoom
    due: bool = True
    task: asyncio.Task[tuple[Call, Reply | Step]] | None = None


class BackgroundWorker:
    """A ``Worker`` on its own thread and event loop (one per web-server process), and, with
    ``analyses`` (the default), an ``AnalysisRunner`` on a thread beside it that asks the
    stored analyses' planned answers (``conversation.worker.analyses``), and with ``studies``
    (the default) the studies' clock (``conversation.worker.studies.StudyClock``).

    It never touches Streamlit; pages see its work by reading the database.
    """

    def __init__(
        self,
        db: storage.Database,
        *,
        analyses: bool = True,
        studies: bool = True,
        **options: Any,
    ) -> None:
        from conversation.worker.analyses import AnalysisRunner
        from conversation.worker.studies import StudyClock

        self.worker = Worker(db, **options)
        self.analyses = AnalysisRunner(db) if analyses else None
        self.clock = StudyClock(db) if studies else None
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
        if self.analyses is not None:
            self.analyses.start()
        if self.clock is not None:
            self.clock.start()
        return self

    def wake(self) -> None:
        self.worker.wake()
        if self.analyses is not None:
            self.analyses.wake()

    def stop(self, timeout: float = 10.0) -> None:
        self.worker.stop()
        if self.clock is not None:
            self.clock.stop(timeout=timeout)
        if self.analyses is not None:
            self.analyses.stop(timeout=timeout)
        self._thread.join(timeout=timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


__all__ = ["BackgroundWorker", "Worker"]
