"""Is a database already at the newest schema? Answered without importing Alembic.

Opening a :class:`~storage.database.Database` checks its schema revision. Importing Alembic for that
costs 0.5-2 s of a server's first page (its DDL dialects, script machinery); when the revision
recorded in ``alembic_version`` is already the head, none of it is needed. The head is read from
the migration files themselves (each declares ``revision`` and ``down_revision``): the one
revision no other file names as its ``down_revision``. Anything unexpected (no table, several
heads, an unreadable file) answers ``False`` and the caller takes the full Alembic path.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

VERSIONS_DIR = Path(__file__).resolve().parent.parent / "migrations" / "versions"
_FIELD = re.compile(r'^(revision|down_revision)\s*(?::[^=]*)?=\s*(?:"([^"]*)"|None)', re.M)


@functools.cache
def file_head() -> str | None:
    """The head revision named by the migration files, or ``None`` when it is not exactly one."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in VERSIONS_DIR.glob("*.py"):
        fields = {m.group(1): m.group(2) for m in _FIELD.finditer(path.read_text("utf-8"))}
        if fields.get("revision"):
            revisions.add(str(fields["revision"]))
        if fields.get("down_revision"):
            parents.add(str(fields["down_revision"]))
    heads = revisions - parents
    return next(iter(heads)) if len(heads) == 1 else None


def at_head(engine: Engine) -> bool:
    """Whether the database's recorded revision is the head (one read, no lock taken)."""
    head = file_head()
    if head is None:
        return False
    try:
        with engine.connect() as conn:
            found = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except Exception:  # no table yet (a blank database), or anything odd: the full path decides
        return False
    return found == [head]


__all__ = ["at_head", "file_head"]
