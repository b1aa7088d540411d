"""Alembic migrations: the only way the schema is created or changed.

``env.py`` runs on a connection handed over by :mod:`storage.database.migrate` (programmatic upgrades), or,
for developers, from the command line:
``alembic -c storage/alembic.ini revision --autogenerate -m "..."`` (URL from ``ROOMS_DATABASE_URL``).
Applied revisions are never edited; a change is a new revision.
"""
