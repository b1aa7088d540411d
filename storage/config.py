"""Where the database lives: configuration from the environment.

- ``ROOMS_DATABASE_URL``: any SQLAlchemy URL (``sqlite:///path/rooms.db``,
  ``postgresql+psycopg://user@host/db``). When unset, the default below is used.
- ``ROOMS_DATA_DIR``: the app's data folder; default ``platformdirs.user_data_dir("conversation-rooms")``.
  The default database is ``<data_dir>/rooms.db``.

Nothing here reads secrets: a password inside ``ROOMS_DATABASE_URL`` stays in the environment and is
masked whenever a URL is shown (see :func:`display_url`).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from sqlalchemy.engine import make_url

APP_NAME = "conversation-rooms"
DATABASE_URL_ENV = "ROOMS_DATABASE_URL"
DATA_DIR_ENV = "ROOMS_DATA_DIR"
DEFAULT_DB_FILENAME = "rooms.db"


def data_dir() -> Path:
    """The app's data folder (created if missing): ``$ROOMS_DATA_DIR`` or the platform default."""
    configured = os.environ.get(DATA_DIR_ENV)
    folder = (
        Path(configured).expanduser() if configured else Path(platformdirs.user_data_dir(APP_NAME))
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def database_url() -> str:
    """The configured database URL: ``$ROOMS_DATABASE_URL`` or ``sqlite:///<data_dir>/rooms.db``."""
    configured = os.environ.get(DATABASE_URL_ENV, "").strip()
    if configured:
        return configured
    return f"sqlite:///{data_dir() / DEFAULT_DB_FILENAME}"


def display_url(url: str) -> str:
    """The URL with any password masked, safe for logs, errors and the UI."""
    return make_url(url).render_as_string(hide_password=True)


__all__ = [
    "APP_NAME",
    "DATABASE_URL_ENV",
    "DATA_DIR_ENV",
    "data_dir",
    "database_url",
    "display_url",
]
