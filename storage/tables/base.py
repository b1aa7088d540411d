"""The schema's metadata: deterministic constraint names, set before any table is declared
(the face, ``storage.tables``, imports this module first).

Migrations name what they alter by these names, and the migrations test compares a blank database
built from them with the tables (``tests/storage/test_migrations.py``).
"""

from __future__ import annotations

from sqlmodel import SQLModel

# Deterministic constraint names, so migrations can name what they alter and compare cleanly.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = SQLModel.metadata

__all__ = ["metadata"]
