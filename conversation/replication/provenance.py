"""Where a package came from: the program (name, version, git commit and whether the working
tree had changes), the Python and library versions, and the database (its address without
credentials and its schema revision)."""

from __future__ import annotations

import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import storage

PROGRAM = "conversation-rooms"
#: The libraries whose versions a re-run depends on.
LIBRARIES = (
    "edsl",
    "SQLAlchemy",
    "sqlmodel",
    "alembic",
    "pydantic",
    "pandas",
    "statsmodels",
    "scipy",
    "krippendorff",
    "presidio-analyzer",
    "presidio-anonymizer",
    "spacy",
)
ROOT = Path(__file__).resolve().parents[2]


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _program_version() -> str | None:
    found = _version(PROGRAM)
    if found is not None:
        return found
    try:
        import tomllib

        data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        return str(data["project"]["version"])
    except (OSError, KeyError, ValueError):
        return None


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def program() -> dict[str, Any]:
    """The program's name, version and git commit (with ``dirty`` when the tree had changes)."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "name": PROGRAM,
        "version": _program_version(),
        "git_commit": commit,
        "git_dirty": bool(status) if status is not None else None,
    }


def environment() -> dict[str, Any]:
    """Python's version and each library's."""
    return {
        "python": platform.python_version(),
        "libraries": {name: _version(name) for name in LIBRARIES},
    }


def database(db: storage.Database) -> dict[str, Any]:
    """The database's address (no credentials) and schema revision."""
    return {
        "url": storage.display_url(db.url),
        "dialect": db.write_engine.dialect.name,
        "revision": storage.recorded_revision(db.read_engine),
    }


__all__ = ["LIBRARIES", "PROGRAM", "database", "environment", "program"]
