"""Schema migrations, run programmatically (Alembic's command API with a Config built in code).

The scripts live inside the package (``storage/migrations``), so upgrades work from any working
directory and after ``pip install``. Policy, applied by :class:`~storage.database.Database` on open:

- blank database -> built from the migrations (never ``create_all``);
- older revision -> upgraded to head, in one write transaction (data kept);
- current revision -> nothing to do (checked on the read engine: no write lock taken);
- unknown (newer) revision, or tables without a revision record -> :class:`UnsupportedDatabaseVersion`,
  and the database is left untouched.

Concurrent openers are serialised: the upgrade runs inside ``BEGIN IMMEDIATE`` on SQLite and under a
transaction-scoped advisory lock on PostgreSQL, and the revision is re-read once the lock is held.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Connection

from storage.database.config import display_url
from storage.errors import UnsupportedDatabaseVersion

if TYPE_CHECKING:
    from storage.database import Database

log = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
# Any constant works; it only has to be the same for every process migrating this database.
_PG_MIGRATION_LOCK = 7_201_356_001


def alembic_config() -> Config:
    """An Alembic ``Config`` pointing at the packaged migrations (no ini file needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


@functools.cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """The newest revision this program knows (e.g. ``"0002"``)."""
    head = _scripts().get_current_head()
    assert head is not None, "storage/migrations has no revisions"
    return head


def known_revisions() -> list[str]:
    """Every revision this program knows, oldest first."""
    return [script.revision for script in reversed(list(_scripts().walk_revisions()))]


def current_revision(connection: Connection) -> str | None:
    """The revision recorded in the database (``None`` for a blank database)."""
    return MigrationContext.configure(connection).get_current_revision()


def database_revision(db: Database) -> str | None:
    """The revision recorded in ``db``, read without taking the write lock."""
    with db.read_engine.connect() as conn:
        return current_revision(conn)


def upgrade_to_head(db: Database) -> None:
    """Bring ``db`` to the newest revision (see the module docstring for the policy)."""
    upgrade(db, head_revision())


def upgrade(db: Database, revision: str) -> None:
    """Upgrade ``db`` to ``revision`` (tests use an older one to build legacy databases)."""
    with db.read_engine.connect() as conn:
        found = current_revision(conn)
    _refuse_unknown(db, found)
    if found == revision:
        return
    with db.write_engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_MIGRATION_LOCK})")
        found = current_revision(conn)  # another process may have upgraded while we waited
        _refuse_unknown(db, found)
        if found == revision:
            return
        if found is None:
            _refuse_unversioned_tables(db, conn)
        config = alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    log.info("database %s upgraded from %s to %s", display_url(db.url), found, revision)


def ensure_at_head(db: Database) -> None:
    """Raise :class:`UnsupportedDatabaseVersion` unless ``db`` is exactly at head (no upgrade)."""
    found = database_revision(db)
    _refuse_unknown(db, found)
    if found != head_revision():
        raise UnsupportedDatabaseVersion(
            f"database {display_url(db.url)} is at schema revision {found!r}, this program needs "
            f"{head_revision()!r}; open it with Database(url, upgrade=True) to upgrade it"
        )


def _refuse_unknown(db: Database, found: str | None) -> None:
    if found is not None and found not in known_revisions():
        raise UnsupportedDatabaseVersion(
            f"database {display_url(db.url)} is at schema revision {found!r}, which this program "
            f"does not know (its newest is {head_revision()!r}): it was written by a newer version "
            "of conversation-rooms. Upgrade the program or open another database; the database "
            "was not changed."
        )


def _refuse_unversioned_tables(db: Database, conn: Connection) -> None:
    tables = set(inspect(conn).get_table_names()) - {"alembic_version"}
    if tables:
        raise UnsupportedDatabaseVersion(
            f"database {display_url(db.url)} has tables ({', '.join(sorted(tables))}) but no schema "
            "revision: it was not created by these migrations. Open an empty file or a database "
            "created by conversation-rooms; the database was not changed."
        )


__all__ = [
    "MIGRATIONS_DIR",
    "alembic_config",
    "current_revision",
    "database_revision",
    "ensure_at_head",
    "head_revision",
    "known_revisions",
    "upgrade",
    "upgrade_to_head",
]
