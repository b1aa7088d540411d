"""Schema only through migrations: blank build == models, upgrade on open, newer refused."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

import storage
from storage import Database, normalize_url
from storage.database import migrate
from storage.errors import UnsupportedDatabaseVersion
from storage.tables import metadata


def _diffs(engine: sa.Engine, target: sa.MetaData = metadata) -> list:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, target)


def _build_at(url: str, revision: str) -> None:
    """A database at an older revision, built with Alembic directly (no Database involved)."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        config = migrate.alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    engine.dispose()


def _revision(url: str) -> str | None:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        found = migrate.current_revision(conn)
    engine.dispose()
    return found


def test_revisions_are_linear_and_numbered() -> None:
    revisions = ["0001", "0002", "0003", "0005", "0007", "0008", "0009"]
    revisions += ["0010", "0011", "0012", "0013", "0014", "0015", "0016"]
    assert migrate.known_revisions() == revisions
    assert migrate.head_revision() == "0016"


def test_blank_database_built_from_migrations_matches_the_models(blank_db_url: str) -> None:
    with Database(blank_db_url) as db:
        assert _diffs(db.write_engine) == []
        assert migrate.database_revision(db) == migrate.head_revision()


def test_comparison_detects_a_drift(blank_db_url: str) -> None:
    """Negative control: the comparison above would notice a missing index or column."""
    with Database(blank_db_url) as db:
        drifted = sa.MetaData()
        for table in metadata.sorted_tables:
            table.to_metadata(drifted)
        drifted.tables["rooms"].append_column(sa.Column("extra", sa.Integer(), nullable=True))
        sa.Index("ix_extra_events_kind", drifted.tables["events"].c.kind)
        kinds = {diff[0] for diff in _diffs(db.write_engine, drifted)}
        assert {"add_column", "add_index"} <= kinds


def test_older_database_is_upgraded_on_open_and_keeps_its_data(blank_db_url: str) -> None:
    _build_at(blank_db_url, "0001")
    engine = sa.create_engine(blank_db_url)
    with engine.begin() as conn:
        assert "analyses" not in sa.inspect(conn).get_table_names()
        conn.execute(
            sa.text(
                "INSERT INTO rooms (name, status, config, created_at, updated_at) "
                "VALUES ('old room', 'idle', '{}', '2024-01-01 00:00:00', '2024-01-01 00:00:00')"
            )
        )
    engine.dispose()
    assert _revision(blank_db_url) == "0001"
    with Database(blank_db_url) as db:
        assert migrate.database_revision(db) == migrate.head_revision()
        assert _diffs(db.write_engine) == []
        (room,) = storage.list_rooms(db)
        assert room.name == "old room"
        assert room.created_at.year == 2024 and room.created_at.utcoffset().total_seconds() == 0
        analysis = storage.create_analysis(db, "deal?", {"text": "Was a deal reached?"})
        storage.record_answer(db, analysis, room.id, "yes")


def test_answers_stored_before_0015_get_their_state(blank_db_url: str) -> None:
    """Revision 0015: an answer stored before it is ``answered``, or ``failed`` with an error."""
    _build_at(blank_db_url, "0014")
    stamp = "'2024-01-01 00:00:00'"
    engine = sa.create_engine(blank_db_url)
    with engine.begin() as conn:
        for name in ("a", "b"):
            conn.execute(
                sa.text(
                    "INSERT INTO rooms (name, status, config, created_at, updated_at, edits) "
                    f"VALUES ('{name}', 'idle', '{{}}', {stamp}, {stamp}, 0)"
                )
            )
        conn.execute(
            sa.text(
                "INSERT INTO analyses (name, question, status, created_at, updated_at) "
                f"VALUES ('deal?', '{{\"text\": \"?\"}}', 'failed', {stamp}, {stamp})"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO analysis_answers (analysis_id, room_id, answer, error, created_at, "
                f"updated_at) VALUES (1, 1, '\"yes\"', NULL, {stamp}, {stamp}), "
                f'(1, 2, NULL, \'{{"type": "E"}}\', {stamp}, {stamp})'
            )
        )
    engine.dispose()
    with Database(blank_db_url) as db:
        assert migrate.database_revision(db) == migrate.head_revision()
        found = {a.room_id: (a.state, a.answer) for a in storage.answers(db, 1)}
        assert found == {1: ("answered", "yes"), 2: ("failed", None)}
        assert storage.open_analyses(db) == []


def test_upgrade_false_refuses_an_older_database(blank_db_url: str) -> None:
    _build_at(blank_db_url, "0001")
    with pytest.raises(UnsupportedDatabaseVersion, match="upgrade=True"):
        Database(blank_db_url, upgrade=False)
    assert _revision(blank_db_url) == "0001"


def test_newer_unknown_revision_is_refused_and_left_untouched(blank_db_url: str) -> None:
    Database(blank_db_url).dispose()
    engine = sa.create_engine(blank_db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    with pytest.raises(UnsupportedDatabaseVersion, match="newer version") as caught:
        Database(blank_db_url)
    assert "'0099'" in str(caught.value) and f"'{migrate.head_revision()}'" in str(caught.value)
    assert _revision(blank_db_url) == "0099"


def test_tables_without_a_revision_are_refused(blank_db_url: str) -> None:
    engine = sa.create_engine(blank_db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE rooms (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    with pytest.raises(UnsupportedDatabaseVersion, match="no schema revision"):
        Database(blank_db_url)
    assert _revision(blank_db_url) is None


def test_downgrade_to_base_and_back(blank_db_url: str) -> None:
    Database(blank_db_url).dispose()
    engine = sa.create_engine(blank_db_url)
    with engine.begin() as conn:
        config = migrate.alembic_config()
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    with engine.connect() as conn:
        assert set(sa.inspect(conn).get_table_names()) <= {"alembic_version"}
    engine.dispose()
    with Database(blank_db_url) as db:
        assert _diffs(db.write_engine) == []


def test_concurrent_openers_of_a_blank_database_all_succeed(blank_db_url: str) -> None:
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            Database(blank_db_url).dispose()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert _revision(blank_db_url) == migrate.head_revision()


def test_migrations_work_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with Database(f"sqlite:///{tmp_path / 'cwd.db'}") as db:
        assert migrate.database_revision(db) == migrate.head_revision()
    assert migrate.MIGRATIONS_DIR.is_absolute()
    assert os.getcwd() == str(elsewhere)


def test_the_fast_head_check_agrees_with_alembic(blank_db_url: str) -> None:
    """Opening a database at head skips Alembic; the files name the same head Alembic knows."""
    from storage.database import schema_head

    assert schema_head.file_head() == migrate.head_revision()
    with Database(blank_db_url) as db:
        assert schema_head.at_head(db.read_engine)
    if not blank_db_url.startswith("sqlite"):
        # A server database: the recorded revision moved back and forth by hand.
        engine = sa.create_engine(normalize_url(blank_db_url))
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
        assert not schema_head.at_head(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql(
                f"UPDATE alembic_version SET version_num = '{migrate.head_revision()}'"
            )
        assert schema_head.at_head(engine)
        engine.dispose()
        return
    _build_at_older = blank_db_url.replace("blank.db", "older.db")
    _build_at(_build_at_older, "0001")
    engine = sa.create_engine(_build_at_older)
    assert not schema_head.at_head(engine)  # older: the full path upgrades it
    engine.dispose()
    with Database(_build_at_older) as db:
        assert migrate.database_revision(db) == migrate.head_revision()
