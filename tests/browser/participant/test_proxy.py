"""Two app processes on PostgreSQL behind Debian's nginx, configured by docs/deploy.md's recipe
(``benchmarks/proxy.py`` runs it as written but for ports and logs): two participants in Chromium
reach the study through the proxy and each sees a message posted through either process (so at
least one of the two crossed from one process to the other: PostgreSQL's ``NOTIFY``), and a
researcher's Streamlit page works through the same proxy (its websocket upstream is sticky).
Skipped without a PostgreSQL server or nginx, except in CI where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from tests.browser.conftest import AppServer
from tests.browser.participant.conftest import Person, launch, token_of
from tests.support import databases

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class PostgresAppServer(AppServer):
    database_url: str = field(default="")

    @property
    def db_url(self) -> str:
        return self.database_url


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this test must run)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def behind_proxy(
    chromium_path: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[list[PostgresAppServer], str]]:
    server = databases.server()
    if server is None:
        _unavailable(f"set {databases.TEST_DATABASE_ENV} to run two app processes on PostgreSQL")
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        _unavailable("nginx is missing: apt-get install -y nginx")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from proxy import start_nginx

    monkeypatch.setenv("ROOMS_RUNNER_POLL_SECONDS", "0.2")
    url = server.create()
    folder = Path(tempfile.mkdtemp(prefix="rooms-proxy-"))
    from storage import Database

    Database(url).dispose()  # migrated once, before two processes start
    apps = [PostgresAppServer(folder / f"app{n}", database_url=url) for n in range(2)]
    nginx = None
    try:
        for app in apps:
            app.folder.mkdir(parents=True)
            app.start(timeout=90)
        nginx, proxied = start_nginx([app.port for app in apps], folder / "nginx")
        yield apps, proxied
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(timeout=10)
        for app in apps:
            app.stop()
        server.drop(url)
        shutil.rmtree(folder, ignore_errors=True)


def test_two_processes_behind_nginx_serve_one_study(browser: Any, behind_proxy: Any) -> None:
    from conversation import study
    from storage import Database

    apps, proxied = behind_proxy
    db = Database(apps[0].db_url)
    front = SimpleNamespace(url=proxied)  # what Person needs of a server: its address
    try:
        code = launch(db, participants={"cap": 2})
        ana = Person(browser, front, code, "pid-a")
        bo = Person(browser, front, code, "pid-b")
        try:
            for person in (ana, bo):
                person.to_room()
            ana.seat()
            bo.seat()
            # One message posted through each process, straight to it: whichever process holds
            # each stream, one of the two messages came from the other process.
            for n, app in enumerate(apps):
                answer = httpx.post(
                    f"{app.url}/study/api/post",
                    json={"text": f"through process {n}", "request_id": f"p{n}"},
                    headers={"X-Participant-Token": token_of(ana)},
                    timeout=20,
                )
                assert answer.status_code == 200, answer.text
            for person in (ana, bo):
                person.wait_text("through process 0")
                person.wait_text("through process 1")
            # And the page's own box, through the proxy.
            bo.message_box().fill("through the proxy")
            bo.message_box().press("Enter")
            ana.wait_text("through the proxy")
            ana.only_own_host()
            bo.only_own_host()
        finally:
            ana.close()
            bo.close()
        # A researcher's Streamlit page through the same proxy (its websocket passes).
        page = browser.new_page()
        try:
            page.goto(proxied + "/")
            page.get_by_test_id("stSidebarNavLink").first.wait_for(timeout=30_000)
        finally:
            page.close()
        log = (Path(apps[0].folder).parent / "nginx" / "rooms-access.log").read_text()
        assert "/study/api/events" in log and "p=" not in log  # no token in the proxy's log
        assert study.transcripts_table(db, code)
    finally:
        db.dispose()
