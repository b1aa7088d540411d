"""Opening the database: the URL and data folder, the ``Database`` handle (two engines, the
pragmas, one write lock, an unavailable server as a typed error), the schema check and the
migrations it runs, and PostgreSQL's wake-up channel for workers.

``storage.database.migrate`` (Alembic) is imported only when a schema must change; the statements
every repository module builds the same way are in :mod:`storage.database.statements`.
"""

from __future__ import annotations

from storage.database.config import data_dir, database_url, display_url, normalize_url
from storage.database.connection import DEFAULT_BUSY_TIMEOUT_MS, Database
from storage.database.notify import WorkListener

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_MS",
    "Database",
    "WorkListener",
    "data_dir",
    "database_url",
    "display_url",
    "normalize_url",
]
