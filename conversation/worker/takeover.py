"""Recognise leases a crashed process left behind on this host, so its rooms move in seconds.

A lease owner is named ``role:host:pid:nonce`` (``conversation.rooms.engine.owner_id``). After a
``kill -9`` its leases stay held until they expire; a restarted server or worker on the same host
need not wait for that: when the owner's host is this host and its process is gone (no such
process, a zombie, or a process started after the lease was taken: the pid was reused), the
leases are released at once (``storage.free_leases_of``). Owners on other hosts are never judged
here: their leases expire as before.

Guarantees: a lease is only ever freed when its process is certainly gone from this host; and if a
judgement were wrong, the live holder's next write would be refused by its fencing token (a turn
is never doubled, only asked again). Two containers that share a host name but not a process
table would misjudge each other: give them distinct host names, or turn this off with
``ROOMS_LEASE_TAKEOVER=0``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from datetime import UTC, datetime

import storage
from settings import SETTINGS, env_name

log = logging.getLogger(__name__)

#: Environment variable: "0" turns the same-host takeover off (leases then only expire).
TAKEOVER_ENV = env_name("lease_takeover")
#: Seconds of clock slack when comparing a process's start with its lease's acquisition.
START_SLACK_SECONDS = 2.0


def owner_process(owner: str) -> tuple[str, int] | None:
    """``(host, pid)`` of an owner named ``role:host:pid:nonce``; None for any other name."""
    parts = owner.rsplit(":", 3)
    if len(parts) != 4 or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2])


def _process_start(pid: int) -> datetime | None:
    """When process ``pid`` started (Linux ``/proc``), or None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open("/proc/stat", encoding="ascii") as system:
            boot = next(int(line.split()[1]) for line in system if line.startswith("btime "))
    except (OSError, StopIteration, IndexError, ValueError):
        return None
    ticks = int(fields[19])  # field 22 of stat: start time in clock ticks after boot
    return datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"), UTC)


def process_gone(pid: int, held_since: datetime | None) -> bool:
    """Whether the process that took a lease at ``held_since`` is certainly gone."""
    if pid == os.getpid():
        return False  # this very process (another object in it): alive by definition
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                return True  # killed, not yet reaped by its parent
    except OSError:
        return False
    started = _process_start(pid)
    if started is None or held_since is None:
        return False
    if held_since.tzinfo is None:
        held_since = held_since.replace(tzinfo=UTC)
    return (started - held_since).total_seconds() > START_SLACK_SECONDS  # the pid was reused


def gone_owners(holders: Mapping[str, datetime | None], host: str | None = None) -> list[str]:
    """The owners among ``holders`` (``{owner: earliest acquired_at}``) whose process on this
    host is gone."""
    host = host or socket.gethostname()
    gone = []
    for owner, since in holders.items():
        process = owner_process(owner)
        if process is not None and process[0] == host and process_gone(process[1], since):
            gone.append(owner)
    return gone


def take_over_gone_owners(db: storage.Database) -> int:
    """Release the leases of this host's gone processes; returns how many were released."""
    if not SETTINGS.lease_takeover:
        return 0
    gone = gone_owners(storage.lease_holders(db))
    if not gone:
        return 0
    freed = storage.free_leases_of(db, gone)
    if freed:
        log.warning("took over %d rooms left by gone processes: %s", freed, ", ".join(gone))
    return freed


__all__ = [
    "TAKEOVER_ENV",
    "gone_owners",
    "owner_process",
    "process_gone",
    "take_over_gone_owners",
]
