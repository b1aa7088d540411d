"""Waking workers at once on PostgreSQL: ``LISTEN`` / ``NOTIFY`` (issue 23).

A trigger of migration 0013 (PostgreSQL only) sends ``NOTIFY rooms_work`` when a
room becomes ``running`` (created running, or moved to running from any other status: a posted
message, a resume, an experiment's rooms), in the transaction that does it, so the notice arrives
when that transaction commits and never for a write that rolled back; the payload is empty, so
PostgreSQL folds the notices of one transaction into one (an experiment of 10,000 rooms wakes each
worker once). A turn's commit, which only touches a running room, sends nothing.

:class:`WorkListener` holds one extra connection per worker process, ``LISTEN``\\s on it in a
daemon thread and calls ``on_notice`` for each notice; the worker then looks for runnable rooms at
once instead of at its next poll. Polling stays the fallback: a lost connection is reopened with a
growing delay, and notices sent while it was down are simply found by the next poll. SQLite has no
such channel: there :meth:`WorkListener.start` does nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

CHANNEL = "rooms_work"
#: Seconds the listening thread waits for a notice before checking whether it should stop.
WAIT_SECONDS = 1.0
MAX_RECONNECT_SECONDS = 30.0


class WorkListener:
    """Calls ``on_notice(None)`` for each committed transaction that made rooms runnable
    (PostgreSQL only; ``None`` also once each time listening starts, for what was missed).

    ``on_notice`` runs on the listener's thread: it must be thread-safe and quick (a worker's
    ``wake``)."""

    def __init__(self, url: str, on_notice: Callable[[int | None], None]) -> None:
        self.url = url
        self.on_notice = on_notice
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.listening = threading.Event()  # set while LISTEN is active (tests wait for it)

    @property
    def supported(self) -> bool:
        return make_url(self.url).get_backend_name() == "postgresql"

    def start(self) -> bool:
        """Start listening in a daemon thread; ``False`` (nothing started) on SQLite."""
        if not self.supported or self._thread is not None:
            return False
        self._thread = threading.Thread(target=self._run, name="rooms-listen", daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout: float = 0.0) -> None:
        """Stop listening (the thread ends within ``WAIT_SECONDS``; wait up to ``timeout``)."""
        self._stop.set()
        if self._thread is not None:
            if timeout:
                self._thread.join(timeout)
            self._thread = None

    def _conninfo(self) -> str:
        url = make_url(self.url).set(drivername="postgresql")
        return url.render_as_string(hide_password=False)

    def _run(self) -> None:
        import psycopg

        delay = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo(), autocommit=True, connect_timeout=10) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    delay = 0.5
                    self.on_notice(None)  # notices missed while not listening: look now
                    while not self._stop.is_set():
                        for notice in conn.notifies(timeout=WAIT_SECONDS):
                            self.on_notice(_room_id(notice.payload))
            except Exception as exc:  # a dropped connection, a restarting server: poll meanwhile
                self.listening.clear()
                log.info("LISTEN %s lost (%s); reconnecting in %.1f s", CHANNEL, exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, MAX_RECONNECT_SECONDS)
        self.listening.clear()


def _room_id(payload: str) -> int | None:
    try:
        return int(payload)
    except (TypeError, ValueError):
        return None


__all__ = ["CHANNEL", "WorkListener"]
