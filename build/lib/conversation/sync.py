"""Running the async engine from synchronous code.

Every synchronous entry point (``Conversation.converse``, ``ConversationList.run``) runs its
coroutine on one long-lived event loop owned by a daemon thread. One loop for the whole process
matters because EDSL's provider clients (httpx/openai/aiohttp) bind to the loop that first used
them: a fresh ``asyncio.run`` per call would leave them tied to a closed loop. It also makes a
synchronous call safe from inside a notebook, whose own loop is already running.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from conversation.exceptions import ConversationStateError

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _engine_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed() or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            thread = threading.Thread(target=serve, name="conversation-engine-loop", daemon=True)
            thread.start()
            ready.wait()
            _loop, _thread = loop, thread
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the engine's loop and wait for its result (exceptions propagate).

    If the waiting thread is interrupted (KeyboardInterrupt), the coroutine is cancelled, so a turn
    in flight is not appended.
    """
    loop = _engine_loop()
    if threading.current_thread() is _thread:
        coro.close()
        raise ConversationStateError(
            "a synchronous conversation call was made from inside the engine's own loop "
            "(for example from a stopping_function); use the async API there"
        )
    future = asyncio.run_coroutine_threadsafe(_boxed(coro), loop)
    try:
        ok, value = future.result()
    except BaseException:
        future.cancel()
        raise
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


async def _boxed(coro: Coroutine[Any, Any, T]) -> tuple[bool, Any]:
    """Carry the coroutine's own exception object across threads: asyncio would replace a
    ``TimeoutError`` with a new one, losing its notes and traceback."""
    try:
        return True, await coro
    except Exception as exc:
        return False, exc


__all__ = ["run_sync"]
