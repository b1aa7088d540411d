"""The analysis runner: asks the answers of stored analyses in the background, beside the rooms.

An analysis started on the Results page (``conversation.analysis.runs.start_analysis``) is only
stored: its rooms are ``planned``. ``AnalysisRunner`` is a loop on its own thread (EDSL's job
blocks while it runs, so it stays off the rooms' event loop) that asks them a chunk at a time
(``runs.ask_next``): it claims up to ``ANALYSIS_CHUNK`` answers, asks them in one EDSL job and
stores each as it is had, then looks again; between chunks it sleeps until woken or
``poll_interval`` passes. ``BackgroundWorker`` starts one beside the rooms' loop (in every web
server process) and ``python -m conversation.worker`` runs one too, so several runners may share
a database: the claims (``storage.research.analysis_runs``) keep them from asking a room twice.

A runner that died mid-chunk (``kill -9``, a crash) leaves its rooms ``asking``: a runner on the
same host frees them as soon as it sees the process is gone (``worker.takeover``), any other when
the claim expires (``ANSWER_CLAIM_SECONDS``). Rooms already answered are never asked again.
"""

from __future__ import annotations

import logging
import threading
import time

import storage
from conversation.analysis.runs import ANALYSIS_CHUNK, ANSWER_CLAIM_SECONDS, ask_next
from conversation.boundary import translated
from conversation.exceptions import StorageUnavailableError
from conversation.worker.takeover import gone_owners
from settings import SETTINGS

log = logging.getLogger(__name__)

#: Seconds between looks for analyses to ask while none has work (a wake looks at once).
ANALYSIS_POLL_SECONDS = 1.0
#: Seconds between looks for claims left by a gone process of this host.
TAKEOVER_SECONDS = 5.0


def take_over_gone_analysis_runners(db: storage.Database) -> int:
    """Plan again the answers this host's gone processes were asking; how many."""
    if not SETTINGS.lease_takeover:
        return 0
    gone = gone_owners(storage.answer_claim_holders(db))
    if not gone:
        return 0
    freed = storage.free_answer_claims_of(db, gone)
    if freed:
        log.warning("took over %d analysis answers left by %s", freed, ", ".join(gone))
    return freed


class AnalysisRunner:
    """Asks the planned answers of every analysis of ``db``, a chunk at a time."""

    def __init__(
        self,
        db: storage.Database,
        *,
        owner: str | None = None,
        poll_interval: float = ANALYSIS_POLL_SECONDS,
        chunk: int = ANALYSIS_CHUNK,
        claim_seconds: float = ANSWER_CLAIM_SECONDS,
    ) -> None:
        from conversation.rooms.engine.records import owner_id

        self.db = db
        self.owner = owner or owner_id("analyses")
        self.poll_interval = poll_interval
        self.chunk = chunk
        self.claim_seconds = claim_seconds
        self.answers_asked = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._takeover_checked = -TAKEOVER_SECONDS

    def run_once(self) -> int:
        """Free the claims of gone processes (every few seconds), then ask one chunk; how many
        answers were asked (0: nothing to ask now)."""
        if time.monotonic() - self._takeover_checked >= TAKEOVER_SECONDS:
            self._takeover_checked = time.monotonic()
            take_over_gone_analysis_runners(self.db)
        asked = ask_next(self.db, self.owner, limit=self.chunk, claim_seconds=self.claim_seconds)
        self.answers_asked += asked
        return asked

    def run(self, *, until_idle: bool = False) -> int:
        """Ask until ``stop()`` (or, with ``until_idle``, until nothing is left to claim);
        returns the number of answers asked. A database that cannot be used is waited out."""
        backoff = 0.0
        while not self._stop.is_set():
            try:
                with translated():
                    asked = self.run_once()
                backoff = 0.0
            except StorageUnavailableError as exc:
                backoff = min(max(backoff * 2, self.poll_interval), 30.0)
                log.warning("database unavailable, retrying in %.2f s: %s", backoff, exc)
                self._stop.wait(backoff)
                continue
            except Exception:  # one analysis's trouble must not stop the others
                log.exception("analysis runner: a chunk failed")
                asked = 0
            if asked:
                continue
            if until_idle:
                break
            self._wake.wait(self.poll_interval)
            self._wake.clear()
        return self.answers_asked

    # -- on a thread ------------------------------------------------------------------------

    def start(self) -> AnalysisRunner:
        """Run on a daemon thread (see ``BackgroundWorker``)."""
        self._thread = threading.Thread(target=self.run, name="rooms-analyses", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        """Look for answers to ask now (e.g. after an analysis was started)."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the chunk in flight (its answers are stored); claims not asked yet are
        given back so another runner asks them at once."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            if self._thread.is_alive():
                return  # still asking: its claims stay held, and expire if it never ends
        try:
            storage.release_answer_claims(self.db, self.owner)
        except Exception:  # the database may be gone at shutdown; the claims simply expire
            log.debug("analysis claims not released", exc_info=True)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


__all__ = ["ANALYSIS_POLL_SECONDS", "AnalysisRunner", "take_over_gone_analysis_runners"]
