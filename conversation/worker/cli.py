"""``python -m conversation.worker``: drive every runnable room of a database from its own process,
ask the planned answers of its analyses (``worker.analyses``, on a thread beside the rooms), and
run its studies' clock (``worker.studies``: lobbies, timeouts, absences, time limits, exits).

    python -m conversation.worker --db sqlite:///rooms.db --concurrency 50

SIGINT and SIGTERM stop it cleanly: calls in flight are cancelled and every lease is released, so
another worker (or this one, restarted) takes the rooms over at once instead of after a lease
timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from collections.abc import Sequence

import storage
from conversation.worker.analyses import AnalysisRunner
from conversation.worker.runner import LEASE_TTL_SECONDS, Worker
from conversation.worker.studies import StudyClock
from settings import SettingError, check

log = logging.getLogger("conversation.worker")


def _parser() -> argparse.ArgumentParser:
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
        "--lease-ttl",
        type=float,
        default=LEASE_TTL_SECONDS,
        help=f"seconds a room's lease lasts (default {LEASE_TTL_SECONDS:g}; renewed every third)",
    )
    parser.add_argument(
        "--poll", type=float, default=0.5, help="seconds between looks for new work"
    )
    parser.add_argument(
        "--until-idle",
        action="store_true",
        help="exit when no room is runnable and no analysis answer is left to ask",
    )
    parser.add_argument(
        "--no-analyses", action="store_true", help="leave analyses to other workers"
    )
    parser.add_argument(
        "--no-studies", action="store_true", help="leave the studies' clock to other workers"
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    try:
        check()  # a mistyped ROOMS_* variable stops the worker here, not in its first turn
    except SettingError as exc:
        parser.error(str(exc))
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    db = storage.Database(args.db) if args.db else storage.Database()
    worker = Worker(
        db,
        concurrency=args.concurrency,
        lease_ttl=args.lease_ttl,
        poll_interval=args.poll,
        freeze_start_up_heap=True,  # this process is only a worker (see Worker)
    )

    async def run() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, worker.stop)
        return await worker.run(until_idle=args.until_idle)

    analyses = None if args.no_analyses else AnalysisRunner(db, poll_interval=args.poll)
    if analyses is not None and not args.until_idle:
        analyses.start()  # on a thread while the rooms run
    clock = None if args.no_studies or args.until_idle else StudyClock(db).start()
    try:
        turns = asyncio.run(run())
    finally:
        if clock is not None:
            clock.stop()
        if analyses is not None and not args.until_idle:
            analyses.stop()
    if analyses is not None and args.until_idle:
        analyses.run(until_idle=True)
    log.info("worker %s took %d turns", worker.owner, turns)
    return 0


__all__ = ["main"]
