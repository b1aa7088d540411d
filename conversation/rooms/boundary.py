"""The one boundary where storage's errors become the project's (``conversation.exceptions``).

Everything above storage that a caller reaches (``Room``, ``Turn``, imports, experiments,
studies) goes through ``translated`` / ``storage_errors``, so a caller only ever sees the
project's exception tree:

- ``storage.RequestIdConflict`` -> ``RequestConflictError``;
- ``storage.RecordNotFound`` (a room, event, experiment ... id that does not exist) and
  ``storage.StorageValueError`` (a refused value, a secret in a config) -> ``ConversationValueError``;
- ``storage.DatabaseUnavailable`` -> ``StorageUnavailableError``.

A caller for whom a storage error has a meaning of its own says so with ``refusals`` (a study's
token nobody holds is its ``NotAParticipant``; a participant over their posting rate is told to
wait): those are translated first, by the caller's function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import storage
from conversation.exceptions import (
    ConversationValueError,
    RequestConflictError,
    StorageUnavailableError,
)

T = TypeVar("T")
#: A caller's own translations: a storage error's type -> its error, made from the storage one.
Refusals = Mapping[type[storage.StorageError], Callable[[Any], Exception]]


@contextmanager
def translated(refusals: Refusals | None = None) -> Iterator[None]:
    """Translate storage errors raised inside the block (see the module docstring)."""
    try:
        yield
    except storage.StorageError as exc:
        for kind, make in (refusals or {}).items():
            if isinstance(exc, kind):
                raise make(exc) from None
        if isinstance(exc, storage.RequestIdConflict):
            raise RequestConflictError(str(exc)) from exc
        if isinstance(exc, storage.RecordNotFound | storage.StorageValueError):
            raise ConversationValueError(str(exc)) from exc
        if isinstance(exc, storage.DatabaseUnavailable):
            raise StorageUnavailableError(str(exc)) from exc
        raise


def storage_errors(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` with its storage errors translated."""
    with translated():
        return call(*args, **kwargs)


__all__ = ["Refusals", "storage_errors", "translated"]
