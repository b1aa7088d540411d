"""Study participants without a browser, that reconnect by themselves: each :class:`Participant`
is one tab of the participant's page, spoken over HTTP as its script does
(``benchmarks/participant_client.py``): it joins by the link, acts through the page's JSON
endpoints and reads its event stream, which it opens again when it ends (``kill -9`` of the app);
a message sent while the server is out of reach is sent again, with the same request id, until
it is taken (the page keeps it in its box and the person presses Send again). What it was shown
is kept: a text seen before the outage stays seen.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _page_client() -> Any:
    name = "participant_client"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, ROOT / "benchmarks" / "participant_client.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].PageClient


class Participant:
    """One participant's tab: ``await open()``, ``click``, ``chat``, ``wait_for``; it reconnects
    by itself (``reconnects`` counts how often)."""

    def __init__(self, base_url: str, code: str, pid: str) -> None:
        self.base_url, self.code, self.pid = base_url, code, pid
        self._http: Any = None
        self.client: Any = None

    @property
    def seen(self) -> dict[str, float]:
        return self.client.seen  # type: ignore[no-any-return]

    @property
    def reconnects(self) -> int:
        return int(self.client.reconnects)

    @property
    def saw_outage(self) -> bool:
        """Whether the page was told the database could not be reached (it said the words)."""
        return bool(self.client.outages)

    @property
    def token(self) -> str:
        return str(self.client.token)

    async def open(self) -> None:
        import httpx

        self._http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
        self.client = _page_client()(self._http, self.base_url)
        await self.client.join(self.code, {"PROLIFIC_PID": self.pid})
        self.client.listen()

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
        if self._http is not None:
            await self._http.aclose()

    async def click(self, label: str, timeout: float = 300) -> None:
        if label not in ("I agree", "I do not agree"):
            raise ValueError(f"no button {label!r} on this stage")
        answer = await self.client.act("consent", agree=label == "I agree")
        answer.raise_for_status()

    async def chat(self, text: str, timeout: float = 300) -> None:
        """Send ``text``; while the server is out of reach, send it again (one request id)."""
        request_id = uuid.uuid4().hex
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                answer = await self.client.post(text, request_id)
                if answer.status_code == 200:
                    return
            except Exception:  # noqa: BLE001, S110 - the server is away: again, as a person would
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"{text!r} was never taken")
            await asyncio.sleep(0.5)

    async def wait_seated(self, timeout: float = 300) -> None:
        await self.client.wait_for(lambda me: me.stage == "room", timeout)

    async def wait_reconnected(self, timeout: float = 120) -> None:
        await self.client.wait_for(lambda me: me.reconnects > 0 and me.connected.is_set(), timeout)

    async def wait_for(self, fragment: str, timeout: float = 300) -> str:
        """The first text seen that holds ``fragment`` (TimeoutError after ``timeout``)."""
        await self.client.wait_for(lambda me: any(fragment in t for t in me.seen), timeout)
        return next(t for t in self.seen if fragment in t)


__all__ = ["Participant"]
