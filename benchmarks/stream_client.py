"""A Streamlit session without a browser: the browser's protocol, spoken over a websocket.

Streamlit's page talks to the server through one websocket at ``/_stcore/stream``: it sends
``BackMsg`` protobufs (``rerun_script`` carries the URL's query string, the page's name and the
widgets' values) and receives ``ForwardMsg`` protobufs (``new_session`` at each full run, one
``delta`` per element drawn, ``auto_rerun`` for a fragment with ``run_every``,
``page_info_changed`` when the script sets ``st.query_params``, ``script_finished``). This client
does what the page does with them, as the frontend's ``App`` and ``WidgetStateManager`` do in
Streamlit 1.67:

- the first ``rerun_script`` names the page (the URL's path) and the query string; later ones
  carry the page's script hash from ``navigation`` (the page ``st.navigation`` resolved the run
  to) and the query string as the server last set it;
- a button click is a ``trigger_value``, a chat message a ``chat_input_value``, each sent once
  (the frontend clears triggers after sending them);
- every ``auto_rerun`` starts a timer that asks for that fragment's rerun (``is_auto_rerun``) at
  its interval, whether a run is in progress or not (as ``setInterval`` does), until
  ``stop_auto_rerun``, a new interval for it, or a full run's ``new_session`` (the run's
  fragments announce themselves again; a fragment that is gone stops being asked for).

What it keeps of the page: the time each text (``st.text``'s body, a caption's or markdown's body)
first arrived, and the ids of the buttons (by label) and of the chat input. It draws nothing, so a
"screen" time here is the time the delta arrived: a browser adds its own layout and paint (a few
to tens of milliseconds), which this measure leaves out on purpose: it measures the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.typing import Subprotocol

#: The element types whose body is text a person reads.
TEXT_ELEMENTS = ("text", "markdown")


class StreamClient:
    """One browser tab's session: ``await open()``, then ``click``, ``chat``, ``wait_for``."""

    def __init__(self, base_url: str, page: str, query: str) -> None:
        self.url = base_url.replace("http://", "ws://", 1).rstrip("/") + "/_stcore/stream"
        self.page = page
        self.query = query
        self.page_hash = ""
        self.seen: dict[str, float] = {}  # text -> time.time() it first arrived
        self.buttons: dict[str, str] = {}  # label -> widget id
        self.chat_id = ""
        self.runs_finished = 0
        self.closed = ""  # why the connection ended, once it has
        self._timers: dict[str, tuple[float, asyncio.Task[None]]] = {}
        self._socket: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    @property
    def polling(self) -> bool:
        """Whether a fragment of the page asks for its reruns now (a ``run_every`` timer)."""
        return bool(self._timers)

    async def open(self) -> None:
        self._socket = await websockets.connect(
            self.url, subprotocols=[Subprotocol("streamlit")], max_size=None, ping_interval=None
        )
        self._reader = asyncio.create_task(self._read())
        await self._rerun()

    async def close(self) -> None:
        for _, timer in self._timers.values():
            timer.cancel()
        if self._reader is not None:
            self._reader.cancel()
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()

    async def click(self, label: str, timeout: float = 300) -> None:
        """Click the button labelled ``label`` (once it has been drawn)."""
        await self.wait_until(lambda: label in self.buttons, timeout, f"button {label!r}")
        await self._rerun([WidgetState(id=self.buttons[label], trigger_value=True)])

    async def chat(self, text: str) -> None:
        """Send ``text`` through the page's chat input (as Enter in the box does)."""
        state = WidgetState(id=self.chat_id)
        state.chat_input_value.data = text
        await self._rerun([state])

    async def wait_for(self, fragment: str, timeout: float = 300) -> str:
        """The first text received that contains ``fragment`` (waiting for it if needed)."""

        def found() -> str | None:
            return next((t for t in self.seen if fragment in t), None)

        await self.wait_until(lambda: found() is not None, timeout, repr(fragment))
        return found() or ""

    async def wait_until(self, ready: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{what} never arrived at {self.query} within {timeout} s")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(left, 1.0))

    async def _rerun(self, triggers: list[WidgetState] = (), fragment: str = "") -> None:  # type: ignore[assignment]
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query
        state.page_script_hash = self.page_hash
        if not self.page_hash:
            state.page_name = self.page
        if fragment:
            state.fragment_id = fragment
            state.is_auto_rerun = True
        state.widget_states.widgets.extend(triggers)
        await self._socket.send(msg.SerializeToString())

    async def _read(self) -> None:
        try:
            async for data in self._socket:
                msg = ForwardMsg()
                msg.ParseFromString(data)
                self._handle(msg, time.time())
                self._changed.set()
        finally:
            # Said by the benchmark: a session the server closed sees nothing more.
            self.closed = f"closed ({getattr(self._socket, 'close_code', None)})"

    def _handle(self, msg: ForwardMsg, now: float) -> None:
        kind = msg.WhichOneof("type")
        if kind == "delta":
            self._element(msg.delta, now)
        elif kind == "new_session" and not msg.metadata.run.fragment_ids:
            for fragment in list(self._timers):  # a full run: its fragments say so again
                self._stop(fragment)
        elif kind == "navigation":  # the page st.navigation resolved the run to
            self.page_hash = msg.navigation.page_script_hash or self.page_hash
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "auto_rerun":
            self._every(msg.auto_rerun.fragment_id, msg.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            for fragment in msg.stop_auto_rerun.fragment_ids:
                self._stop(fragment)
        elif kind == "script_finished":
            self.runs_finished += 1

    def _element(self, delta: Any, now: float) -> None:
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        if kind in TEXT_ELEMENTS:
            self.seen.setdefault(getattr(element, kind).body, now)
        elif kind == "button":
            self.buttons[element.button.label] = element.button.id
        elif kind == "chat_input":
            self.chat_id = element.chat_input.id

    def _every(self, fragment: str, interval: float) -> None:
        if not fragment or self._timers.get(fragment, (None,))[0] == interval:
            return
        self._stop(fragment)

        async def tick() -> None:
            while True:
                await asyncio.sleep(interval)
                await self._rerun(fragment=fragment)

        self._timers[fragment] = (interval, asyncio.create_task(tick()))

    def _stop(self, fragment: str) -> None:
        old = self._timers.pop(fragment, None)
        if old is not None:
            old[1].cancel()


__all__ = ["StreamClient"]
