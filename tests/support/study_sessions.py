"""Study participants as Streamlit sessions without a browser, that reconnect by themselves.

Each :class:`Participant` is one browser tab of the participant page, spoken through Streamlit's
websocket protocol (``benchmarks/stream_client.py``'s ``StreamClient``: the page's reruns, its
fragments' timers, its chat box). When the server goes away (``kill -9``), the session does what
Streamlit's page does: it tries again every half second and, once the server answers, opens a new
session with the URL it had (its query string carries the participant's token, ``&p=...``), so
the person is back in their place. What it drew is kept: a text seen before the outage stays
seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _stream_client() -> Any:
    name = "stream_client"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, ROOT / "benchmarks" / "stream_client.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].StreamClient


class Participant:
    """One participant's tab: ``await open()``, ``click``, ``chat``, ``wait_for``; it
    reconnects by itself (``reconnects`` counts how often)."""

    def __init__(self, base_url: str, code: str, pid: str) -> None:
        self.client = _stream_client()(base_url, "participate", f"study={code}&PROLIFIC_PID={pid}")
        drawn = self.client._element  # noqa: SLF001 - also keep the alerts' texts (the notices)

        def element(delta: Any, now: float) -> None:
            drawn(delta, now)
            new = delta.WhichOneof("type") == "new_element"
            if new and delta.new_element.WhichOneof("type") == "alert":
                self.client.seen.setdefault(delta.new_element.alert.body, now)

        self.client._element = element  # noqa: SLF001
        self.pid = pid
        self.reconnects = 0
        self._keeper: asyncio.Task[None] | None = None

    @property
    def seen(self) -> dict[str, float]:
        return self.client.seen  # type: ignore[no-any-return]

    @property
    def token(self) -> str:
        query = dict(part.split("=", 1) for part in self.client.query.split("&") if "=" in part)
        return query.get("p", "")

    async def open(self) -> None:
        await self.client.open()
        self._keeper = asyncio.create_task(self._keep_connected())

    async def close(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
        await self.client.close()

    async def click(self, label: str, timeout: float = 300) -> None:
        await self.client.click(label, timeout)

    async def chat(self, text: str) -> None:
        await self.client.wait_until(lambda: self.client.chat_id, 300, "the chat box")
        await self.client.chat(text)

    async def wait_for(self, fragment: str, timeout: float = 300) -> str:
        return await self.client.wait_for(fragment, timeout)  # type: ignore[no-any-return]

    async def _keep_connected(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            if not self.client.closed:
                continue
            client = self.client
            for _, timer in list(client._timers.values()):  # noqa: SLF001 - the page's timers
                timer.cancel()
            client._timers.clear()  # noqa: SLF001
            client.chat_id = ""
            with contextlib.suppress(OSError, asyncio.TimeoutError, Exception):
                client.closed = ""
                await client.open()
                self.reconnects += 1
                continue
            client.closed = "reconnecting"


__all__ = ["Participant"]
