"""The one boundary where storage's errors become the project's (``conversation.exceptions``).

Everything above storage that a caller reaches (``Room``, ``Turn``, imports, experiments,
analyses, judges, the worker's loop) goes through ``translated`` (or ``storage_errors``, or a
class under ``@translating``), so a caller only ever sees the project's exception tree, and a
module that decides something on a storage error (not found -> skip, in use -> refuse,
unavailable -> wait) catches a project error:

- ``storage.RequestIdConflict`` -> ``RequestConflictError``;
- ``storage.RecordNotFound`` (a room, event, experiment ... id that does not exist) ->
  ``NotFoundError`` (a ``ConversationValueError``);
- ``storage.StorageValueError`` (a refused value, a secret in a config) ->
  ``ConversationValueError``;
- ``storage.RecordInUse`` (a worker holds it) -> ``InUseError`` (a ``ConversationStateError``);
- ``storage.DatabaseUnavailable`` -> ``StorageUnavailableError``;
- any other ``storage.StorageError`` -> ``StorageFailure`` (but ``storage.RateLimited``, a
  participant's post over their rate, which ``conversation.study`` decides on itself).

The original error is the new one's ``__cause__``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import storage
from conversation.exceptions import (
    ConversationValueError,
    InUseError,
    NotFoundError,
    RequestConflictError,
    StorageFailure,
    StorageUnavailableError,
)

T = TypeVar("T")
C = TypeVar("C", bound=type)


@contextmanager
def translated() -> Iterator[None]:
    """Translate storage errors raised inside the block (see the module docstring)."""
    try:
        yield
    except storage.RequestIdConflict as exc:
        raise RequestConflictError(str(exc)) from exc
    except storage.RecordNotFound as exc:
        raise NotFoundError(str(exc)) from exc
    except storage.StorageValueError as exc:
        raise ConversationValueError(str(exc)) from exc
    except storage.RecordInUse as exc:
        raise InUseError(str(exc)) from exc
    except storage.DatabaseUnavailable as exc:
        raise StorageUnavailableError(str(exc)) from exc
    except storage.RateLimited:
        # A participant's post over their rate: conversation/study decides on it (its wait)
        # where it calls the posting path; it is that package's to translate.
        raise
    except storage.StorageError as exc:
        raise StorageFailure(str(exc)) from exc


def storage_errors(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` with its storage errors translated."""
    with translated():
        return call(*args, **kwargs)


def unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the database cannot be used right now (storage's error, or the
    project's once translated): what a loop waits out instead of failing."""
    return isinstance(error, StorageUnavailableError | storage.DatabaseUnavailable)


def _translating(function: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def awaited(*args: Any, **kwargs: Any) -> Any:
            with translated():
                return await function(*args, **kwargs)

        return awaited

    @functools.wraps(function)
    def called(*args: Any, **kwargs: Any) -> Any:
        with translated():
            return function(*args, **kwargs)

    return called


def translating(cls: C) -> C:
    """A class decorator: every public method, class method and property of ``cls`` has its
    storage errors translated, so each documented method raises the project's errors only
    (a new method is covered the day it is written)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            setattr(cls, name, property(_translating(member.fget), member.fset, member.fdel, member.__doc__))  # type: ignore[arg-type]  # fmt: skip
        elif isinstance(member, classmethod):
            setattr(cls, name, classmethod(_translating(member.__func__)))
        elif isinstance(member, staticmethod):
            setattr(cls, name, staticmethod(_translating(member.__func__)))
        elif inspect.isfunction(member):
            setattr(cls, name, _translating(member))
    return cls


__all__ = ["storage_errors", "translated", "translating", "unavailable"]
