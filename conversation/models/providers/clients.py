"""OpenAI-family EDSL services whose HTTP clients never retry on their own.

The ``openai`` client retries connection errors, 408/409/429 and 5xx twice by default, with its own
backoff, before EDSL sees anything. The project decides retries itself (``conversation.models.retries``:
typed, bounded, with a note on the turn), so a hidden second layer would multiply attempts and
hide failures. ``no_retry_service(OpenAIService subclass)`` returns a subclass whose clients are
built with ``max_retries=0``; the model classes it creates are ordinary EDSL models otherwise.

Self-hosted servers (``families.OWN_SERVER``: ``sends_max_tokens``) also get the output limit as
``max_tokens``:
EDSL 1.0.9 sends only ``max_completion_tokens``, which llama.cpp's server ignores (a reply then
runs until the context is full, minutes on a small machine). Both carry the model's ``max_tokens``
parameter (``CallSettings.max_output_tokens`` in a room).

Async clients are also kept per event loop: EDSL caches one client per (key, URL) for the whole
process, but an ``aiohttp``/``httpx`` client is bound to the loop it first ran on, and this engine
runs models from several loops (``asyncio.run`` per call in ``ask_sync``, one loop per worker
thread, EDSL's own loop for a job). When a loop closes, its clients are closed first, on that
loop: an ``aiohttp`` session left open would otherwise print "Unclosed client session" when it is
garbage-collected (typically at exit).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import weakref
from collections.abc import Iterator, MutableMapping
from typing import Any

from edsl.inference_services.services.open_ai_service import OpenAIService

from conversation.models.providers.families import family_of

log = logging.getLogger(__name__)
_made: dict[type, type] = {}
_made_lock = threading.Lock()


class _PerLoopClients(MutableMapping):
    """A client cache keyed, underneath, by the running event loop."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict] = (
            weakref.WeakKeyDictionary()
        )
        self._no_loop: dict = {}
        self._lock = threading.Lock()

    def _current(self) -> dict:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._no_loop
        with self._lock:
            clients = self._by_loop.get(loop)
            if clients is None:
                clients = self._by_loop[loop] = {}
                _close_before_the_loop(loop, self)
            return clients

    def drop(self, loop: asyncio.AbstractEventLoop) -> list[Any]:
        """Forget ``loop``'s clients and return them (to be closed)."""
        with self._lock:
            return list((self._by_loop.pop(loop, None) or {}).values())

    def __getitem__(self, key: Any) -> Any:
        return self._current()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._current()[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._current()[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._current()))

    def __len__(self) -> int:
        return len(self._current())


async def _close_all(clients: list[Any]) -> None:
    for client in clients:
        close = getattr(client, "close", None)
        if close is None:
            continue
        try:
            result = close()
            if asyncio.iscoroutine(result):
                await result
        except Exception:  # closing is best effort; the loop is going away anyway
            log.debug("closing a model client failed", exc_info=True)


def _close_before_the_loop(loop: asyncio.AbstractEventLoop, owner: _PerLoopClients) -> None:
    """Make ``loop.close()`` close ``owner``'s clients of that loop first (on the loop)."""
    original = loop.close

    def close() -> None:
        clients = owner.drop(loop)
        if clients and not loop.is_closed() and not loop.is_running():
            try:
                loop.run_until_complete(_close_all(clients))
            except Exception:
                log.debug("closing model clients before the loop failed", exc_info=True)
        original()

    loop.close = close  # type: ignore[method-assign]


def _kept_clients(meta: type) -> type:
    """A metaclass whose classes' ``_async_client_instances`` is always their per-loop cache.

    EDSL assigns that attribute a plain dict in ``OpenAIService.__init_subclass__`` and again
    after every job (``Jobs._cleanup_async_clients`` walks every OpenAI service class): a plain
    dict would hand one loop's client to another loop ("attached to a different loop"). Those
    assignments are ignored; the clients are closed per loop instead (``_PerLoopClients``)."""

    def get(cls: Any) -> Any:
        return cls._rooms_async_clients_

    def ignore(cls: Any, value: Any) -> None:
        return None

    return type(
        f"KeptClients{meta.__name__}",
        (meta,),
        {"__module__": __name__, "_async_client_instances": property(get, ignore)},
    )


def no_retry_service(service: type[OpenAIService]) -> type[OpenAIService]:
    """A subclass of ``service`` whose sync and async clients use ``max_retries=0``."""
    if not (isinstance(service, type) and issubclass(service, OpenAIService)):
        raise TypeError(f"{service!r} is not an OpenAI-family EDSL service")
    if getattr(service, "_rooms_no_retry_", False):
        return service
    with _made_lock:
        if service in _made:
            return _made[service]
        import openai

        made = _kept_clients(type(service))(
            f"NoRetry{service.__name__}",
            (service,),
            {
                "__module__": __name__,
                "__doc__": f"{service.__name__} with max_retries=0 clients, cached per loop.",
                "_rooms_no_retry_": True,
                "_sync_client_": functools.partial(openai.OpenAI, max_retries=0),
                "_async_client_": functools.partial(openai.AsyncOpenAI, max_retries=0),
                "create_model": classmethod(_create_model),
                "_rooms_async_clients_": _PerLoopClients(),
            },
        )
        _made[service] = made
        return made


def _create_model(cls: Any, model_name: str, model_class_name: str | None = None) -> Any:
    """EDSL's model class for ``model_name``, sending ``max_tokens`` beside
    ``max_completion_tokens`` when the service is a self-hosted server."""
    base = super(cls, cls).create_model(model_name, model_class_name)  # type: ignore[misc]
    if not family_of(cls._inference_service_).sends_max_tokens:
        return base

    def _filter_parameters_for_service(self: Any, params: dict) -> dict:
        params = base._filter_parameters_for_service(self, params)
        limit = params.get("max_completion_tokens")
        if limit is not None:
            params["max_tokens"] = limit  # what llama.cpp and older servers read
        return params

    bounded = type(
        base.__name__,
        (base,),
        {
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
            "_filter_parameters_for_service": _filter_parameters_for_service,
        },
    )
    return bounded


__all__ = ["no_retry_service"]
