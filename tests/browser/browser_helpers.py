"""Small helpers for the browser tests (kept out of conftest so tests import them explicitly)."""

from __future__ import annotations

import time
from typing import Any

DEFAULT_TIMEOUT_MS = 20_000


def open_page(page: Any, server: Any, path: str) -> None:
    """Go to ``path`` and wait until the app has drawn its navigation."""
    page.goto(server.url + path)
    page.get_by_test_id("stSidebarNavLink").first.wait_for(timeout=DEFAULT_TIMEOUT_MS)


def wait_text(page: Any, text: str, timeout: int = DEFAULT_TIMEOUT_MS) -> None:
    """Wait until ``text`` is part of the page's visible text (no reload)."""
    page.wait_for_function(
        "t => document.body.innerText.includes(t)", arg=text, timeout=timeout, polling=100
    )


def wait_count(page: Any, test_id: str, at_least: int, timeout: int = DEFAULT_TIMEOUT_MS) -> int:
    """Wait until at least ``at_least`` elements with ``data-testid=test_id`` exist; return count."""
    page.wait_for_function(
        "([id, n]) => document.querySelectorAll(`[data-testid='${id}']`).length >= n",
        arg=[test_id, at_least],
        timeout=timeout,
        polling=100,
    )
    return page.get_by_test_id(test_id).count()


def wait_query(page: Any, fragment: str, timeout: int = DEFAULT_TIMEOUT_MS) -> None:
    """Wait until the URL's query string holds ``fragment`` (Streamlit updates it in place)."""
    page.wait_for_function(
        "f => location.search.includes(f)", arg=fragment, timeout=timeout, polling=100
    )


def idle(page: Any, timeout: int = DEFAULT_TIMEOUT_MS) -> None:
    """Wait until no script run is in progress (not usable while a fragment polls quickly)."""
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
        timeout=timeout
    )


def fill(page: Any, label: str, value: str, scope: Any = None) -> None:
    """Type into a text input or area by its label and commit it (Tab), as a person would."""
    box = (scope or page).get_by_label(label, exact=True)
    box.fill(value)
    box.press("Tab")


def choose(page: Any, label: str, option: str, scope: Any = None) -> None:
    """Pick ``option`` in a selectbox or multiselect by its label (options open in a popover)."""
    (scope or page).get_by_label(label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()


def post(page: Any, text: str) -> None:
    """Send a human message through the chat box."""
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(text)
    box.press("Enter")


def until(predicate: Any, timeout: float = 20.0, interval: float = 0.1) -> Any:
    """Poll ``predicate`` (e.g. a database check) until it is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


class RerunRecorder:
    """The rerun requests a page sends to the server (Streamlit's messages on its websocket):
    which fragment each asked for (``""``: the whole page) and whether it was automatic."""

    def __init__(self, page: Any) -> None:
        self.frames: list[bytes] = []
        page.on(
            "websocket",
            lambda ws: ws.on(
                "framesent",
                lambda payload: self.frames.append(payload) if isinstance(payload, bytes) else None,
            ),
        )

    def reruns(self, since: int = 0) -> list[tuple[str, bool]]:
        """(fragment id, automatic?) of each rerun request sent after the first ``since`` frames."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        found = []
        for payload in self.frames[since:]:
            message = BackMsg.FromString(payload)
            if message.WhichOneof("type") == "rerun_script":
                state = message.rerun_script
                found.append((state.fragment_id, state.is_auto_rerun))
        return found

    def asked_after(
        self, action: Any, *, tries: int = 3, timeout: float = 10
    ) -> list[tuple[str, bool]]:
        """The reruns a person's ``action`` asked for (automatic ones left out). A live view may
        redraw the page meanwhile and close a list just opened: the action is tried again (up
        to ``tries`` times) until a rerun is sent."""
        for _ in range(tries):
            before = len(self.frames)
            action()
            if until(lambda b=before: any(not a for _, a in self.reruns(b)), timeout=timeout):
                return [r for r in self.reruns(before) if not r[1]]
        return []
