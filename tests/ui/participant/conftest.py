"""A participant site on 127.0.0.1: the app's participant routes (``ui.participant``) served by
a real uvicorn server in a thread, on the test's database, with a small HTTP client.

The Streamlit part of the app is not started (these tests are about the page's routes, its
stream and the process's watcher); the study's clock is driven by the tests (``study.tick``).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from storage import Database
from tests.app.study_support import launch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Site:
    """The running site: its URL, the ``ParticipantSite`` and a client."""

    url: str
    site: Any
    db: Database
    client: httpx.Client

    def join(self, code: str, **params: str) -> str:
        answer = self.client.post("/study/api/join", json={"study": code, "params": params})
        assert answer.status_code == 200, answer.text
        return str(answer.json()["token"])

    def act(self, path: str, token: str, **body: Any) -> httpx.Response:
        return self.client.post(
            f"/study/api/{path}", json=body, headers={"X-Participant-Token": token}
        )

    def view(self, token: str) -> dict[str, Any]:
        answer = self.client.get("/study/api/view", params={"p": token})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def listen(self, token: str) -> Listener:
        return Listener(self.url, token).start()


@dataclass
class Listener:
    """One open event stream, read in a thread: every event as ``(name, data)``."""

    url: str
    token: str
    events: list[tuple[str, Any]] = field(default_factory=list)
    status: int | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _response: Any = None

    def start(self) -> Listener:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        with httpx.stream(
            "GET", f"{self.url}/study/api/events", params={"p": self.token}, timeout=None
        ) as response:
            self._response = response
            self.status = response.status_code
            with contextlib.suppress(httpx.HTTPError, RuntimeError, AttributeError):
                self._read(response)

    def _read(self, response: Any) -> None:
        name = None
        for line in response.iter_lines():
            if self._stop.is_set():
                return
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and name is not None:
                self.events.append((name, json.loads(line.split(":", 1)[1])))
                name = None

    def wait(self, found: Any, timeout: float = 10.0) -> Any:
        """The first event ``found(name, data)`` accepts, waiting for it up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, data in list(self.events):
                if found(name, data):
                    return data
            time.sleep(0.02)
        raise AssertionError(f"no such event within {timeout} s; got {self.events}")

    def messages(self) -> list[str]:
        return [data["content"] for name, data in self.events if name == "message"]

    def stop(self) -> None:
        self._stop.set()
        if self._response is not None:
            with contextlib.suppress(Exception):
                self._response.close()
        if self._thread is not None:
            self._thread.join(5)


@contextlib.contextmanager
def serving(
    db: Database, *, poll_seconds: float = 0.2, presence_seconds: float = 0.3
) -> Iterator[Site]:
    """The participant routes on a free port of 127.0.0.1 until the block ends."""
    import uvicorn
    from starlette.applications import Starlette

    from ui.participant import ParticipantSite

    participants = ParticipantSite(
        lambda: db, poll_seconds=poll_seconds, presence_seconds=presence_seconds
    )

    @contextlib.asynccontextmanager
    async def nothing(app: Any) -> Any:
        yield

    app = Starlette(routes=participants.routes, lifespan=participants.lifespan(nothing))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=20) as client:
            yield Site(url, participants, db, client)
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def site(db: Database) -> Iterator[Site]:
    with serving(db) as running:
        yield running


def small_study(db: Database, **sections: Any) -> str:
    """The shipped example with a long lobby and room, no pacing, two people per group."""
    merged = {
        "room": {"time_limit_seconds": 600, "words_per_minute": 0},
        "participants": {"cap": 4, "heartbeat_seconds": 1, "dropout_seconds": 600},
        "experiment": {"groups": 1},
        **sections,
    }
    return str(launch(db, **merged).code)


def seated(site: Site, code: str, people: int = 2) -> list[str]:
    """``people`` participants past the consent and the pre-survey, then grouped (the tick)."""
    from conversation import study

    tokens = []
    for n in range(people):
        token = site.join(code, PROLIFIC_PID=f"pid-{n}")
        assert site.act("consent", token, agree=True).status_code == 200
        if site.view(token)["stage"] == "pre_survey":
            answered = site.act("survey", token, answers={"bargained_before": "yes"})
            assert answered.status_code == 200, answered.text
        tokens.append(token)
    study.tick(site.db, code)
    return tokens
