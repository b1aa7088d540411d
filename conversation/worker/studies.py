"""The studies' clock and the participants' service beat, on threads beside the rooms.

:class:`StudyClock` applies everything time-driven in every study (``conversation.study.tick_all``:
groups formed, lobby timeouts, absences and their seat rules, time limits, exits) every
:data:`CLOCK_SECONDS`, in ``python -m conversation.worker`` and in the app's in-process runner:
a study moves with no page open. Several clocks on one database are safe (each change is
conditional and one write).

:class:`ServiceBeat` says, every ``BEAT_SECONDS``, that this process serves participants' pages
(``conversation.study.note_service_up``): every app process runs one, whether or not it runs
rooms, and a worker runs none. A gap in the beats is an outage, and the clock never counts it
as anyone's absence (docs/studies.md, "The outage rule").

Both wait out a database that cannot be used (growing backoff) and never stop the rooms.
"""

from __future__ import annotations

import logging
import threading
import time

import storage
from conversation.exceptions import StorageUnavailableError
from conversation.study import BEAT_SECONDS, note_service_up, tick_all

log = logging.getLogger(__name__)

#: How often the studies' clock ticks.
CLOCK_SECONDS = 1.0
#: The longest wait between tries while the database cannot be used.
MAX_BACKOFF_SECONDS = 10.0


class _Loop:
    """A daemon thread calling ``step()`` every ``interval`` seconds until stopped; a database
    that cannot be used is waited out (growing, capped), any other error is logged."""

    name = "rooms-loop"

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self) -> None:
        raise NotImplementedError

    def failed(self) -> None:
        """Called after a step the database could not take (the beat starts a new period)."""

    def run(self) -> None:
        backoff = 0.0
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.step()
                backoff = 0.0
            except StorageUnavailableError as exc:
                self.failed()
                backoff = min(max(backoff * 2, self.interval), MAX_BACKOFF_SECONDS)
                log.warning(
                    "%s: database unavailable, retrying in %.1f s: %s", self.name, backoff, exc
                )
                self._stop.wait(backoff)
                continue
            except Exception:  # one study's trouble must not stop the clock for the others
                log.exception("%s: a step failed", self.name)
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def start(self) -> _Loop:
        self._thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


class StudyClock(_Loop):
    """Ticks every study of ``db`` every ``interval`` seconds (see the module docstring)."""

    name = "rooms-study-clock"

    def __init__(self, db: storage.Database, *, interval: float = CLOCK_SECONDS) -> None:
        super().__init__(interval)
        self.db = db
        self.ticks = 0

    def step(self) -> None:
        for code, report in tick_all(self.db).items():
            log.info("study %s: %s", code, report)
        self.ticks += 1


class ServiceBeat(_Loop):
    """Says every ``interval`` seconds that this process serves participants' pages; its first
    beat, and its first after a failed one, start a new period of the service."""

    name = "rooms-service-beat"

    def __init__(
        self, db: storage.Database, *, owner: str | None = None, interval: float = BEAT_SECONDS
    ) -> None:
        super().__init__(interval)
        self.db = db
        self.owner = owner
        self._restarted = True

    def step(self) -> None:
        note_service_up(self.db, restarted=self._restarted, owner=self.owner)
        self._restarted = False

    def failed(self) -> None:
        self._restarted = True


__all__ = ["CLOCK_SECONDS", "ServiceBeat", "StudyClock"]
