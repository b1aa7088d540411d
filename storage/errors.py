"""The storage layer's own small exception tree.

``storage`` imports nothing from ``conversation``; the engine maps these to its own errors where it
needs to. Two families:

- ``StorageValueError`` (also a ``ValueError``): the caller passed something invalid (an unknown
  status, a secret inside a config, a duplicate name). Nothing was written.
- Everything else derives from ``StorageError`` directly: a record is missing, a request id was reused
  with different content, the database file belongs to a newer program.

Fences (a stale lease token, an unexpected turn state, a stale ``expected_last_seq``) are *not*
errors: those functions return ``None``/``False`` so a worker simply re-plans.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every error ``storage`` raises on purpose."""


class StorageValueError(StorageError, ValueError):
    """Invalid input: names the field, the value and the fix. Nothing was written."""


class CannotOpenDatabase(StorageValueError):
    """The configured database cannot be opened: the server is unreachable, refuses the login,
    the named database does not exist, or its driver is not installed. Raised when a
    :class:`~storage.database.Database` is constructed; the message names the URL (password
    masked) and the fix. ``url`` is that masked URL."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class ConfigContainsSecret(StorageValueError):
    """A JSON document about to be stored contains something that looks like a secret.

    API keys come from the environment, never from the database (docs/design.md, "Secrets are never stored"). ``path`` is
    where the offending value sits, e.g. ``config.model.api_key``.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class DuplicateName(StorageValueError):
    """A unique name (e.g. an agent profile's) is already taken."""


class InvalidTransition(StorageValueError):
    """A turn state change that the turn lifecycle never allows (e.g. ``done`` -> ``running``)."""


class RecordNotFound(StorageError, LookupError):
    """A row looked up by id does not exist."""


class RoomNotFound(RecordNotFound):
    """No room has this id."""


class EventNotFound(RecordNotFound):
    """No event has this id."""


class ExperimentNotFound(RecordNotFound):
    """No experiment has this id."""


class AgentProfileNotFound(RecordNotFound):
    """No agent profile has this id or name."""


class AnalysisNotFound(RecordNotFound):
    """No analysis has this id."""


class RecordInUse(StorageError):
    """A record cannot be deleted now: a worker holds a live lease on the room (or on one of the
    experiment's rooms), or the experiment is still running. Nothing was written; stop it first,
    and try again once its lease is released or expired."""


class RequestIdConflict(StorageError):
    """A request id was sent again with a different message: one id names one message only."""

    def __init__(self, message: str, *, room_id: int, request_id: str) -> None:
        super().__init__(message)
        self.room_id = room_id
        self.request_id = request_id


class LeaseLost(StorageError):
    """The caller's lease token is no longer current (expired, released, or taken over).

    Raised by :func:`storage.rooms.leases.require_lease`; the fenced write functions return ``False`` or
    ``None`` instead so a worker can re-plan without exception handling.
    """


class DatabaseUnavailable(StorageError):
    """The database could not be used just now: it is locked past the busy timeout, the server
    closed the connection, or it cannot be reached. Transient: the same call may succeed later
    (a worker backs off and tries again; nothing half-written is left, the transaction rolled
    back)."""


class UnsupportedDatabaseVersion(StorageError):
    """The database's schema revision is unknown to this program (written by a newer version),
    or the database has tables but no revision record. It is never modified in that case."""


__all__ = [
    "AgentProfileNotFound",
    "AnalysisNotFound",
    "ConfigContainsSecret",
    "CannotOpenDatabase",
    "DatabaseUnavailable",
    "DuplicateName",
    "EventNotFound",
    "ExperimentNotFound",
    "InvalidTransition",
    "LeaseLost",
    "RecordInUse",
    "RecordNotFound",
    "RequestIdConflict",
    "RoomNotFound",
    "StorageError",
    "StorageValueError",
    "UnsupportedDatabaseVersion",
]
