"""Hermetic test set-up: a temporary HOME (EDSL writes under the user's data directory), no
provider keys, no remote inference, and a temporary database per test.

Backends: ``db_url`` (and ``blank_db_url``) is a SQLite file. When ``ROOMS_TEST_DATABASE`` names a
PostgreSQL server (``postgresql://postgres@127.0.0.1:5432/postgres``), every test of the folders in
:data:`tests.support.databases.BOTH_BACKENDS` that uses a database runs twice, ``[sqlite]`` and
``[postgresql]`` (a ``backend`` parameter); a test marked ``sqlite_only(reason=...)`` is skipped on
PostgreSQL with its reason. Without the setting everything runs on SQLite; with ``CI`` set the
setting is required (a CI run must never pass by leaving PostgreSQL out).

The environment is fixed at import time, before any test module imports edsl, because EDSL reads
its configuration and its ``.env`` file when first imported.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_SESSION_HOME = Path(tempfile.mkdtemp(prefix="rooms-test-home-"))
for _name in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
    _value = _SESSION_HOME if _name == "HOME" else _SESSION_HOME / _name.lower()
    Path(_value).mkdir(parents=True, exist_ok=True)
    os.environ[_name] = str(_value)

PROVIDER_KEYS = (
    "EXPECTED_PARROT_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "DEEP_INFRA_API_KEY",
    "TOGETHER_API_KEY",
    "XAI_API_KEY",
    "OPENAI_COMPATIBLE_API_KEY",
    "OPENAI_COMPATIBLE_BASE_URL",
)


def _drop_provider_keys() -> None:
    for key in PROVIDER_KEYS:
        os.environ.pop(key, None)


_drop_provider_keys()
# EDSL downloads a price list from Expected Parrot on the first priced call of a real model.
os.environ["EDSL_FETCH_TOKEN_PRICES"] = "False"
os.environ["ROOMS_DATA_DIR"] = str(_SESSION_HOME / "rooms-data")
os.environ.pop("ROOMS_DATABASE_URL", None)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from storage import Database  # noqa: E402
from tests.support import databases  # noqa: E402 - after the environment is fixed


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test: no provider keys (EDSL may have loaded a .env), its own data folder."""
    for key in PROVIDER_KEYS:
        monkeypatch.delenv(key, raising=False)
    data = tmp_path / "rooms-data"
    data.mkdir()
    monkeypatch.setenv("ROOMS_DATA_DIR", str(data))
    monkeypatch.delenv("ROOMS_DATABASE_URL", raising=False)


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CI") and databases.configured_server_url() is None:
        raise pytest.UsageError(
            f"CI is set but {databases.TEST_DATABASE_ENV} is not: the database tests must also run "
            f"on PostgreSQL in CI. Set {databases.TEST_DATABASE_ENV}=postgresql://postgres@127.0.0.1"
            ":PORT/postgres (.ci/run starts such a server)"
        )


def pytest_report_header(config: pytest.Config) -> str:
    url = databases.configured_server_url()
    if url is None:
        return (
            f"database backends: sqlite (set {databases.TEST_DATABASE_ENV}=postgresql://USER@HOST:"
            "PORT/postgres to also run the database tests on PostgreSQL)"
        )
    from storage import display_url

    return f"database backends: sqlite, postgresql ({display_url(url)})"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    databases.close_server()


def _runs_on_both(path: Path) -> bool:
    try:
        relative = path.resolve().relative_to(ROOT / "tests").as_posix()
    except ValueError:  # a test file outside tests/
        return False
    return any(relative.startswith(folder + "/") for folder in databases.BOTH_BACKENDS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    if databases.configured_server_url() is None or not _runs_on_both(metafunc.definition.path):
        return
    metafunc.parametrize("backend", databases.BACKENDS, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """``"sqlite"``, or ``"postgresql"`` in the second run of a test (see the module docstring)."""
    name: str = getattr(request, "param", "sqlite")
    if name == "postgresql":
        marker = request.node.get_closest_marker("sqlite_only")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            if not reason:
                pytest.fail("sqlite_only needs a reason: @pytest.mark.sqlite_only(reason='...')")
            pytest.skip(f"SQLite only: {reason}")
    return name


@pytest.fixture
def db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """An empty database for the test, at the newest schema once opened.

    SQLite: a fresh file (a real file: threads and processes see the same data). PostgreSQL: the
    module's database on the test server, truncated (``tests.support.databases``).
    """
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'rooms.db'}"
    server = databases.server()
    assert server is not None
    return server.module_database(request.module.__name__)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    """A ``Database`` on :func:`db_url`, disposed after the test (folders may override it)."""
    database = Database(db_url)
    yield database
    database.dispose()


@pytest.fixture
def blank_db_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A database with no tables at all (for migration tests): a new file, or a new PostgreSQL
    database dropped after the test."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'blank.db'}"
        return
    server = databases.server()
    assert server is not None
    url = server.create()
    yield url
    server.drop(url)
