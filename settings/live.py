"""Reading the settings when they are used: ``SETTINGS``, a view of ``Settings`` over the environment.

``SETTINGS.max_calls_per_provider`` reads ``ROOMS_MAX_CALLS_PER_PROVIDER`` at that moment, checked
against its declaration (``settings.declared``). Why a view, and not the other two ways:

- not ``Settings()`` at each read: it reads and checks the whole environment, about half a
  millisecond, and some settings are read on every turn (the crash-test hook at four points of a
  turn, the in-flight limit at each call: the engine's whole cost is under a millisecond a turn);
- not once, at import: a variable set later (a test's ``monkeypatch.setenv``, a benchmark, the
  app exporting its secrets at start) would not be seen, and the limits documented as "read at each
  call" would not be.

So each read is one environment lookup and one dictionary lookup (about a microsecond): a value is
checked once per distinct text it takes, and kept. A bad value fails only the reader of that one
setting, with a ``SettingError`` naming the variable, the value and the fix; ``check()`` checks
them all at once, so a process can refuse to start on a typo rather than fail later.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from settings.declared import Settings

_FIELDS: dict[str, FieldInfo] = dict(Settings.model_fields)
_VARIABLES: dict[str, str] = {name: str(field.alias) for name, field in _FIELDS.items()}
_BY_VARIABLE: dict[str, str] = {variable: name for name, variable in _VARIABLES.items()}


class SettingError(ValueError):
    """A setting's environment variable holds a value its declaration refuses. ``variable`` and
    ``value`` say which; the message says what is expected and how to fix it."""

    def __init__(self, message: str, *, variable: str, value: str) -> None:
        super().__init__(message)
        self.variable = variable
        self.value = value


def read(name: str) -> Any:
    """The setting ``name`` (a field of ``Settings``) as the environment holds it now: its
    default when its variable is unset or blank; ``SettingError`` when the value is refused."""
    try:
        variable = _VARIABLES[name]
    except KeyError:
        raise AttributeError(f"there is no setting {name!r}; see settings.Settings") from None
    raw = os.environ.get(variable)
    if raw is None or not raw.strip():
        return _FIELDS[name].default
    return _checked(name, raw)


@functools.lru_cache(maxsize=512)
def _checked(name: str, raw: str) -> Any:
    # Checked by the class itself (its validators and constraints), this one field alone:
    # ``model_validate`` would run ``BaseSettings.__init__``, which reads every variable.
    values = Settings.model_construct()
    try:
        Settings.__pydantic_validator__.validate_assignment(values, name, raw)
    except ValidationError as exc:
        raise _error(name, raw, exc.errors(include_url=False)[0]["msg"]) from None
    return getattr(values, name)


def _error(name: str, raw: str, detail: str) -> SettingError:
    field, variable = _FIELDS[name], _VARIABLES[name]
    default = field.default
    fix = "unset it" if default is None else f"unset it for the default ({_shown(default)})"
    return SettingError(
        f"{variable}={raw!r} must be {expected(field)} ({detail[0].lower()}{detail[1:]}); {fix}",
        variable=variable,
        value=raw,
    )


def expected(field: FieldInfo) -> str:
    """What a setting's value must be, in words (``a positive whole number``)."""
    kinds = getattr(field.annotation, "__args__", (field.annotation,))
    kind = next((k for k in kinds if k is not type(None)), str)
    # the bounds pydantic keeps in the field's metadata (``gt=0`` is a ``Gt(gt=0)``)
    greater = [m.gt for m in field.metadata if getattr(m, "gt", None) is not None]
    at_least = [m.ge for m in field.metadata if getattr(m, "ge", None) is not None]
    positive = any(b >= 0 for b in greater) or any(b > 0 for b in at_least)
    if kind is bool:
        return "1 or 0 (true or false)"
    if kind is int:
        return "a positive whole number" if positive else "a whole number"
    if kind is float:
        if positive:
            return "a positive number"
        return "zero or more" if at_least else "a number"
    if kind is Path:
        return "a folder"
    return "text"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def check() -> Settings:
    """Every setting read and checked at once (``Settings()``); a ``SettingError`` naming each
    refused variable. A process calls it as it starts."""
    try:
        return Settings()
    except ValidationError as exc:
        errors = [_error(_BY_VARIABLE[str(e["loc"][0])], _raw(e["loc"]), e["msg"])
                  for e in exc.errors(include_url=False)]  # fmt: skip
        raise SettingError(
            "; ".join(map(str, errors)), variable=errors[0].variable, value=errors[0].value
        ) from None


def _raw(loc: tuple[int | str, ...]) -> str:
    return os.environ.get(str(loc[0]), "")


class _Live:
    """``Settings`` read from the environment at each attribute access (see the module
    docstring). Read-only: set the environment variable instead."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        return read(name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"settings are read from the environment: set {_VARIABLES.get(name, name)} instead"
        )

    def __dir__(self) -> list[str]:
        return sorted(_FIELDS)

    def __repr__(self) -> str:
        return "SETTINGS (each read from the environment when used)"


#: The process settings, each read from its environment variable when used: typed as the
#: ``Settings`` it is a view of.
SETTINGS: Settings = cast(Settings, _Live())


__all__ = ["SETTINGS", "SettingError", "check", "expected", "read"]
