"""What the participant page's browser tests share (fixtures and helpers): a server of their own
(its runner drives the agents and the study's clock), a study, and a person in a browser context
of their own who records every host their pages ask.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.app.study_support import definition_data
from tests.browser.conftest import AppServer

TIMEOUT_MS = 30_000
REDIRECT = "https://app.prolific.com/submissions/complete?cc={code}"
SIZES = ({"width": 1400, "height": 1000}, {"width": 390, "height": 844})


@pytest.fixture
def site_server(
    chromium_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AppServer]:
    monkeypatch.setenv("ROOMS_RUNNER_POLL_SECONDS", "0.2")
    server = AppServer(tmp_path / "site")
    server.folder.mkdir()
    server.start(timeout=90)
    yield server
    server.stop()


@pytest.fixture
def site_db(site_server: AppServer) -> Iterator[Any]:
    database = site_server.database()
    yield database
    database.dispose()


def launch(db: Any, **sections: Any) -> str:
    from conversation import study

    data = definition_data(
        **{
            "room": {"time_limit_seconds": 600, "words_per_minute": 0},
            "participants": {"cap": 4, "heartbeat_seconds": 1, "dropout_seconds": 600},
            "experiment": {"groups": 1},
            **sections,
        }
    )
    data["exit"]["redirect"] = REDIRECT
    definition = study.load_definition(json.dumps(data), fmt="json")
    return str(study.launch_study(db, definition).code)


class Person:
    """One participant's own browser context on the join link, recording every host it asks."""

    def __init__(self, browser: Any, server: AppServer, code: str, pid: str, **options: Any):
        self.hosts: set[str] = set()
        self.requests: list[str] = []
        options.setdefault("viewport", SIZES[0])
        self.context = browser.new_context(**options)
        self.context.set_default_timeout(TIMEOUT_MS)
        self.context.route(
            "https://app.prolific.com/**",
            lambda route: route.fulfill(status=200, body="Prolific stand-in"),
        )
        self.context.on("request", self._record)  # every page of this person: tabs too
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(f"{server.url}/participate?study={code}&PROLIFIC_PID={pid}")
        self.server = server

    def _record(self, request: Any) -> None:
        self.requests.append(request.url)
        host = urlsplit(request.url).netloc
        if host != "app.prolific.com":  # the redirect at the very end, answered above
            self.hosts.add(host)

    def only_own_host(self) -> None:
        assert self.hosts == {urlsplit(self.server.url).netloc}, self.hosts
        assert not self.errors, self.errors

    def wait_text(self, text: str, timeout: int = TIMEOUT_MS) -> None:
        self.page.wait_for_function(
            "t => document.body.innerText.includes(t)", arg=text, timeout=timeout, polling=50
        )

    def message_box(self) -> Any:
        return self.page.get_by_label("Your message", exact=True)

    def to_room(self) -> None:
        self.page.get_by_role("button", name="I agree").click()
        self.page.get_by_text("yes", exact=True).click()
        self.page.get_by_role("button", name="Continue").click()

    def seat(self) -> str:
        heading = self.page.get_by_role("heading", name="You are")
        heading.wait_for(timeout=TIMEOUT_MS)
        return str(heading.inner_text()).removeprefix("You are ").strip()

    def close(self) -> None:
        self.context.close()


def token_of(person: Person) -> str:
    return parse_qs(urlsplit(person.page.url).query)["p"][0]


def end_rooms(db: Any, code: str) -> None:
    from conversation import study

    study.tick(db, code, now=datetime.now(UTC) + timedelta(seconds=601))


def serious(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']]}"
        for v in found
        if v.get("impact") in ("serious", "critical")
    ]


def check_axe(person: Person, stage: str, report: dict[str, list[str]]) -> None:
    for size in SIZES:
        person.page.set_viewport_size(size)
        person.page.wait_for_timeout(100)
        report[f"{stage} at {size['width']}x{size['height']}"] = serious(person.page)
    person.page.set_viewport_size(SIZES[0])
