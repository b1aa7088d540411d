"""Real-browser fixtures: `streamlit run app.py` on a temporary database, driven by Debian's Chromium.

- Every test module here sets ``pytestmark = pytest.mark.browser`` (select them with ``-m browser``,
  leave them out with ``-m "not browser"``).
- When ``/usr/bin/chromium`` (or the Playwright package) is missing the tests are skipped with the
  reason, except when the environment variable ``CI`` is set: there a missing browser is a failure,
  so a CI run can never pass by skipping its browser tests.
- The server runs with its own temporary HOME, data folder and SQLite file, and no provider keys,
  so the offline model answers. Tests seed and inspect the same database through the library
  (``Database(url)``), exactly as another process would.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PROVIDER_KEY_HINTS = ("API_KEY", "OPENAI_COMPATIBLE_BASE_URL")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the browser tests must run)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(f"{CHROMIUM} is missing: install it with `apt-get install -y chromium`")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is missing: pip install -r requirements-dev.txt")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[object]:
    # Module scope, not session: Playwright's sync API keeps an event loop marked as running in
    # the main thread while it is open, which would break every later test that uses asyncio.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(
            executable_path=chromium_path, headless=True, args=LAUNCH_ARGS
        )
        yield launched
        launched.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AppServer:
    """One `streamlit run app.py` process on its own port, database, HOME and data folder."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.folder / 'rooms.db'}"

    @property
    def log_path(self) -> Path:
        return self.folder / "server.log"

    def env(self) -> dict[str, str]:
        home = self.folder / "home"
        env = {k: v for k, v in os.environ.items() if not any(h in k for h in PROVIDER_KEY_HINTS)}
        env.update(
            HOME=str(home),
            XDG_DATA_HOME=str(home / ".local/share"),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_CACHE_HOME=str(home / ".cache"),
            XDG_STATE_HOME=str(home / ".local/state"),
            ROOMS_DATA_DIR=str(self.folder / "data"),
            ROOMS_DATABASE_URL=self.db_url,
            PYTHONUNBUFFERED="1",
        )
        env.pop("PYTEST_CURRENT_TEST", None)
        return env

    def start(self, timeout: float = 30.0) -> AppServer:
        (self.folder / "home").mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app.py",
                "--server.headless",
                "true",
                "--server.port",
                str(self.port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
                "--server.fileWatcherType",
                "none",
            ],
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"streamlit exited early:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=1) as r:
                    if r.read() == b"ok":
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"streamlit was not healthy within {timeout} s:\n{self.log()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def database(self):  # type: ignore[no-untyped-def]
        from storage import Database

        return Database(self.db_url)


@pytest.fixture(scope="session")
def app_server(chromium_path: str) -> Iterator[AppServer]:
    """The server most tests share (each test makes its own rooms and agents)."""
    folder = Path(tempfile.mkdtemp(prefix="rooms-browser-"))
    server = AppServer(folder).start()
    yield server
    server.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fresh_server(chromium_path: str, tmp_path: Path) -> Iterator[AppServer]:
    """A server that no browser has visited yet (its first visitor is the test's)."""
    server = AppServer(tmp_path / "fresh")
    server.folder.mkdir()
    yield server
    server.stop()


@pytest.fixture
def db(app_server: AppServer) -> Iterator[object]:
    database = app_server.database()
    yield database
    database.dispose()


@pytest.fixture
def context(browser):  # type: ignore[no-untyped-def]
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    ctx.set_default_timeout(20_000)
    yield ctx
    ctx.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()
SCREENSHOTS = Path(tempfile.gettempdir()) / "rooms-browser-failures"


@pytest.fixture
def page(context, request):  # type: ignore[no-untyped-def]
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs  # an alert() would land here: tests assert it stays empty
    yield page
    if request.node.stash.get(_FAILED, False):
        SCREENSHOTS.mkdir(exist_ok=True)
        for number, open_page in enumerate(context.pages):
            target = SCREENSHOTS / f"{request.node.name}-{number}.png"
            open_page.screenshot(path=str(target))
            print(f"screenshot of the failed test: {target}")
