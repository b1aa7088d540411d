"""The runner: drives every runnable room of a database, many at once.

``Worker.run()`` is one asyncio loop: it lists rooms whose status is ``running`` and whose lease is
free or expired, takes the lease of up to ``concurrency`` of them, and drives each room's turns
(``room_driver.TurnDriver``) until it settles, waits for a person, pauses, stops, fails or
terminates; then it releases the lease and picks another. Several workers (threads, processes,
machines) on one database never run the same turn: the lease decides who drives a room, and every
commit is fenced by the lease token.

The web app runs one ``BackgroundWorker`` (a thread with its own loop) per server process; the
same code runs headless::

    python -m conversation.worker --db sqlite:///rooms.db --concurrency 50
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import threading
from collections.abc import Sequence
from typing import Any

import storage

from .room_driver import ModelCache, Settled, TurnDriver, owner_id

log = logging.getLogger(__name__)


class Worker:
    """Drives runnable rooms of ``db``, at most ``concurrency`` at a time."""

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
            settle_after_commit=False,
        )
        self._active: dict[int, asyncio.Task[None]] = {}
        self.turns_taken = 0
        self._stopping: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None

    def wake(self) -> None:
        """Look for runnable rooms now (thread-safe; e.g. after a human message was posted)."""
        wake, loop = self._wake, self._loop
        if wake is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(wake.set)

    _loop: asyncio.AbstractEventLoop | None = None

    async def run(self, *, until_idle: bool = False) -> int:
        """Drive rooms until ``stop()`` (or, with ``until_idle``, until no room is runnable and
        none is being driven). Returns the number of turns taken."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        try:
            while not self._stopping.is_set():
                self._reap()
                free = self.concurrency - len(self._active)
                started = 0
                if free > 0:
                    started = self._start_rooms(free)
                if until_idle and not self._active and started == 0:
                    break
                self._wake.clear()
                waits = [asyncio.ensure_future(self._wake.wait())]
                waits += list(self._active.values())
                await asyncio.wait(
                    waits, timeout=self.poll_interval, return_when=asyncio.FIRST_COMPLETED
                )
                waits[0].cancel()
        finally:
            for task in self._active.values():
                task.cancel()
            if self._active:
                await asyncio.gather(*self._active.values(), return_exceptions=True)
            self._active.clear()
        return self.turns_taken

    def stop(self) -> None:
        """Ask ``run()`` to return (thread-safe); rooms in flight are released."""
        stopping, loop = self._stopping, self._loop
        if stopping is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stopping.set)

    def _reap(self) -> None:
        for room_id, task in list(self._active.items()):
            if task.done():
                del self._active[room_id]
                if not task.cancelled() and task.exception() is not None:
                    log.error("room %s: driver crashed", room_id, exc_info=task.exception())

    def _start_rooms(self, free: int) -> int:
        candidates = storage.list_runnable_rooms(self.db, limit=free + len(self._active))
        started = 0
        for room_id in candidates:
            if started >= free:
                break
            if room_id in self._active:
                continue
            token = storage.acquire_lease(self.db, room_id, self.owner, self.driver.lease_ttl)
            if token is None:
                continue  # another worker took it first
            self._active[room_id] = asyncio.ensure_future(self._drive(room_id, token))
            started += 1
        return started

    async def _drive(self, room_id: int, token: int) -> None:
        loop = asyncio.get_running_loop()
        renewed = loop.time()
        try:
            while True:
                outcome = await self.driver.take_turn(room_id, token)
                if isinstance(outcome, Settled):
                    if outcome.again:
                        continue
                    return
                self.turns_taken += 1
                # Renew between turns once a third of the lease is gone (not on every turn: it is
                # a write); during a model call the driver renews on its own.
                if loop.time() - renewed > self.driver.lease_ttl / 3:
                    if not storage.renew_lease(
                        self.db, room_id, self.owner, token, self.driver.lease_ttl
                    ):
                        return  # lost the room (paused past the lease); another worker has it
                    renewed = loop.time()
        except Exception:
            log.exception("room %s: turn failed unexpectedly", room_id)
        finally:
            try:
                storage.release_lease(self.db, room_id, self.owner, token)
            except Exception:  # the database may be gone at shutdown
                log.debug("room %s: lease not released", room_id, exc_info=True)


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conversation.worker",
        description="Drive every runnable room of a database (several workers may share one).",
    )
    parser.add_argument(
        "--db", default=None, help="database URL (default: ROOMS_DATABASE_URL or the app's file)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=8, help="rooms driven at once (default 8)"
    )
    parser.add_argument(
        "--lease-ttl", type=float, default=60.0, help="seconds a room's lease lasts"
    )
    parser.add_argument(
        "--poll", type=float, default=0.5, help="seconds between looks for new work"
    )
    parser.add_argument("--until-idle", action="store_true", help="exit when no room is runnable")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    db = storage.Database(args.db) if args.db else storage.Database()
    worker = Worker(
        db, concurrency=args.concurrency, lease_ttl=args.lease_ttl, poll_interval=args.poll
    )

    async def run() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, worker.stop)
        return await worker.run(until_idle=args.until_idle)

    turns = asyncio.run(run())
    log.info("worker %s took %d turns", worker.owner, turns)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["BackgroundWorker", "Worker", "main"]
