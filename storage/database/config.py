"""Where the database lives: configuration from the environment.

- ``ROOMS_DATABASE_URL``: a SQLite or PostgreSQL URL (``sqlite:///path/rooms.db``,
  ``postgresql://user@host:5432/db``). When unset, the default below is used.
  PostgreSQL is spoken through psycopg 3: ``postgresql://`` and ``postgres://`` (the forms libpq,
  ``psql`` and hosting providers print) mean ``postgresql+psycopg://`` (see :func:`normalize_url`).
- ``ROOMS_DATA_DIR``: the app's data folder; default ``platformdirs.user_data_dir("conversation-rooms")``.
  The default database is ``<data_dir>/rooms.db``.

Nothing here reads secrets: a password inside ``ROOMS_DATABASE_URL`` stays in the environment and is
masked whenever a URL is shown (see :func:`display_url`).
"""

from __future__ import annotations

import re
from pathlib import Path

import platformdirs
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from settings import SETTINGS, env_name
from storage.errors import StorageValueError

APP_NAME = "conversation-rooms"
DATABASE_URL_ENV = env_name("database_url")
DATA_DIR_ENV = env_name("data_dir")
DEFAULT_DB_FILENAME = "rooms.db"
POSTGRES_DRIVER_PREFIX = "postgresql+psycopg://"


def data_dir() -> Path:
    """The app's data folder (created if missing): ``$ROOMS_DATA_DIR`` or the platform default."""
    configured = SETTINGS.data_dir
    folder = configured if configured is not None else Path(platformdirs.user_data_dir(APP_NAME))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def database_url() -> str:
    """The configured database URL: ``$ROOMS_DATABASE_URL`` or ``sqlite:///<data_dir>/rooms.db``
    (normalised, see :func:`normalize_url`)."""
    configured = SETTINGS.database_url
    if configured:
        return normalize_url(configured)
    return f"sqlite:///{data_dir() / DEFAULT_DB_FILENAME}"


def normalize_url(url: str) -> str:
    """``url`` with the PostgreSQL driver made explicit; any other URL is returned unchanged.

    SQLAlchemy reads a bare ``postgresql://`` as psycopg2, which this project does not install;
    the driver it ships is psycopg 3. ``postgres://`` (Heroku-style) is accepted too. A URL that
    names a driver (``postgresql+psycopg2://``) is the caller's explicit choice and kept.
    Raises :class:`~storage.errors.StorageValueError` for text that is not a URL at all.
    """
    text = url.strip()
    for prefix in ("postgresql://", "postgres://"):
        if text.startswith(prefix):
            text = POSTGRES_DRIVER_PREFIX + text[len(prefix) :]
            break
    try:
        make_url(text)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise StorageValueError(
            f"database URL {_masked(text)!r} is not a URL; use sqlite:///path/to/rooms.db or "
            "postgresql://user@host:5432/dbname"
        ) from None
    return text


def display_url(url: str) -> str:
    """The URL with any password masked, safe for logs, errors and the UI."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return _masked(url)


def _masked(text: str) -> str:
    # Not parseable as a URL: hide anything between "://user:" and "@" all the same.
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", text)


__all__ = [
    "APP_NAME",
    "DATABASE_URL_ENV",
    "DATA_DIR_ENV",
    "data_dir",
    "database_url",
    "display_url",
    "normalize_url",
]
