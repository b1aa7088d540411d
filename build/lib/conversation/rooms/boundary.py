"""The one boundary where storage's errors become the project's (``conversation.exceptions``).

Everything above storage that a caller reaches (``Room``, ``Turn``, imports, experiments) goes
through ``storage_errors``, so a caller only ever sees the project's exception tree:

- ``storage.RequestIdConflict`` -> ``RequestConflictError``;
- ``storage.RecordNotFound`` (a room, event, experiment ... id that does not exist) and
  ``storage.StorageValueError`` (a refused value, a secret in a config) -> ``ConversationValueError``;
- ``storage.DatabaseUnavailable`` -> ``StorageUnavailableError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import storage
from conversation.exceptions import (
    ConversationValueError,
    RequestConflictError,
    StorageUnavailableError,
)

T = TypeVar("T")


@contextmanager
def translated() -> Iterator[None]:
    """Translate storage errors raised inside the block (see the module docstring)."""
    try:
        yield
    except storage.RequestIdConflict as exc:
        raise RequestConflictError(str(exc)) from exc
    except (storage.RecordNotFound, storage.StorageValueError) as exc:
        raise ConversationValueError(str(exc)) from exc
    except storage.DatabaseUnavailable as exc:
        raise StorageUnavailableError(str(exc)) from exc


def storage_errors(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` with its storage errors translated."""
    with translated():
        return call(*args, **kwargs)


__all__ = ["storage_errors", "translated"]
