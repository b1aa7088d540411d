"""A study participant's page without a browser: what ``ui/participant/static/page.js`` does,
over HTTP, in asyncio (``httpx``). Used by ``participants_load.py`` and by tests that need many
participants at once.

A :class:`PageClient` joins by the link, acts (consent, surveys, posts, help) through the page's
JSON endpoints, and reads its page's event stream, reconnecting by itself when the stream ends
(the server went away, a proxy closed it), as the page's ``EventSource`` does; on every
(re)connection the server sends the whole view again, so nothing shown before is lost. It keeps
the first time each message's text (and each notice) reached it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from typing import Any

#: How long a lost stream waits before it tries again (the page's first retry is about as soon).
RETRY_SECONDS = 0.5


class PageClient:
    """One participant's page: ``await join(code, params)``, ``listen()``, ``act(...)``."""

    def __init__(self, http: Any, url: str) -> None:
        self.http = http
        self.url = url
        self.token = ""
        self.view: dict[str, Any] = {}
        self.seen: dict[str, float] = {}
        self.reconnects = 0
        self.outages = 0  # how often the server said the database could not be reached
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def stage(self) -> str:
        return str(self.view.get("stage") or "")

    @property
    def seat(self) -> str:
        return str(self.view.get("seat") or "")

    async def join(self, code: str, params: dict[str, str]) -> None:
        answer = await self.http.post(
            f"{self.url}/study/api/join", json={"study": code, "params": params}
        )
        answer.raise_for_status()
        self.token = answer.json()["token"]

    async def act(self, path: str, **body: Any) -> Any:
        """One act of the page (``consent``, ``survey``, ``post``, ``help``): the response."""
        return await self.http.post(
            f"{self.url}/study/api/{path}", json=body, headers={"X-Participant-Token": self.token}
        )

    async def post(self, text: str, request_id: str | None = None) -> Any:
        return await self.act("post", text=text, request_id=request_id or uuid.uuid4().hex)

    def listen(self) -> None:
        """Read the page's event stream in a task until :meth:`close`, reconnecting."""
        if self._task is None:
            self._task = asyncio.create_task(self._listen())

    async def _listen(self) -> None:
        while not self._closed:
            try:
                await self._read()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001, S110 - lost: try again, as the page does
                pass
            if self._closed:
                return
            self.connected.clear()
            self.reconnects += 1
            await asyncio.sleep(RETRY_SECONDS)

    async def _read(self) -> None:
        name = None
        async with self.http.stream(
            "GET", f"{self.url}/study/api/events", params={"p": self.token}
        ) as response:
            if response.status_code != 200:
                await asyncio.sleep(RETRY_SECONDS)
                return
            self.connected.set()
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:") and name is not None:
                    self._event(name, json.loads(line[5:]))
                    name = None

    def _event(self, name: str, data: Any) -> None:
        now = time.time()
        if name == "message":
            self.seen.setdefault(data["content"], now)
        elif name == "outage" and data.get("down"):
            self.outages += 1
        elif name == "view":
            self.view = data
            for text in (data.get("notice"), *(h["text"] for h in data.get("help") or [])):
                if text:
                    self.seen.setdefault(text, now)

    async def wait_for(self, found: Any, timeout: float = 60.0) -> None:
        """Until ``found(self)`` is true (or a text is seen), polling; TimeoutError after."""
        check = found if callable(found) else (lambda me: found in me.seen)
        deadline = time.monotonic() + timeout
        while not check(self):
            if time.monotonic() > deadline:
                raise TimeoutError(f"not within {timeout} s: {found!r}")
            await asyncio.sleep(0.05)

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


__all__ = ["RETRY_SECONDS", "PageClient"]
