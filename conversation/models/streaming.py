"""``ask_streaming()``: ``ask()`` with the reply handed over as it grows, and a way to stop it.

EDSL 1.0.9 cannot stream (its services send ``"stream": false``), so a streamed call is made beside
EDSL, not through it, and keeps ``ask``'s contract (``models.calls``):

- the same request (``chat_stream``): EDSL's own message and parameter builders
  (``MessageBuilder``, ``OpenAIParameterBuilder``, the model's ``_filter_parameters_for_service``,
  so a self-hosted server gets ``max_tokens``), on the model's own ``openai`` client (``model.async_client()``: the
  no-retry client of ``providers.clients``), with ``stream=True`` and
  ``stream_options={"include_usage": True}``;
- the same checks and limits: the prompt-size check, ``max_output_tokens``, the timeout (for the
  whole reply, as ``ask``'s: ``ModelTimeoutError``, with ``min_backoff`` for a self-hosted server),
  a slot of the provider's limiter while the request runs, provider exceptions unchanged (so
  ``retries.is_transient`` classifies a 429/503 or a dropped connection as it does for ``ask``);
- the same EDSL cache key (``stored_cache.cache_key``) and the same cache: a hit is answered at once
  (one ``on_text`` with the whole text, ``cache_used``, 0 tokens, cost 0.0, no slot taken), a new
  valid answer is stored as the chat completion EDSL would have stored, so a later ``ask`` or
  streamed call with the same inputs hits it;
- usage from the stream when the server sends it; otherwise (llama.cpp's server sends none)
  ``text.tokens`` estimates, and ``ModelReply.usage_estimated`` is true; the stored entry keeps
  what the server sent.

``on_text(text_so_far)`` (a function, or a coroutine function, awaited) is called each time the
shown text changes: the reply so far, leading spaces trimmed and, with ``settings.speakers``, a
copied label stripped as the final text will be (so a partial never shows what the committed
message will not). It runs on the reading task: a slow ``on_text`` slows the reading, so
throttle writes inside it. Its exceptions end the call.

``cancel`` (an ``asyncio.Event``, or anything with ``is_set()``, polled every
``CANCEL_POLL_SECONDS``) stops the call at any point: waiting for a slot, before the first chunk,
or mid-stream. The request is closed (no more chunks are read; the server sees the client go),
``ModelCallCancelled`` (a ``ModelCallError`` with ``code="cancelled"``, never transient) is raised,
and nothing is written to the cache. A reply complete before the stop is returned as usual.

Which models stream (``supports_streaming``): EDSL's OpenAI chat models of the services in
the families with ``chat_completions`` (``providers.families``: OpenAI, OpenAI-compatible servers such as llama.cpp's and vLLM, Ollama),
and the ``OfflineModel``, which hands out the reply ``ask`` would give word by word at its
``stream_rate()``. Every other model is asked with ``ask`` (and a model reachable only through
Expected Parrot's remote jobs too): one ``on_text`` with the whole reply, so callers need no
special case.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import re
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

from edsl.caching import Cache

from conversation.exceptions import ConversationValueError, ModelCallError
from conversation.models.call_rules import (
    ModelTimeoutError,
    check_inputs,
    prepared,
    timeout_error,
)
from conversation.models.calls import ModelReply, ask
from conversation.models.chat_shape import shaped, takes_chat_turns
from conversation.models.chat_stream import final_text, read_stream, usage_of
from conversation.models.limits import call_slot
from conversation.models.offline.model import OfflineModel
from conversation.models.providers.labels import model_label, needs_remote_jobs
from conversation.models.settings import CallSettings
from conversation.models.stored_cache import StoredCache, cache_key
from conversation.text.transcript import strip_echo

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How often a ``cancel`` without an awaitable ``wait()`` (a ``threading.Event``) is checked.
CANCEL_POLL_SECONDS = 0.05

OnText = Callable[[str], "Awaitable[None] | None"]


class CancelSignal(Protocol):
    """What ``cancel`` must offer: ``asyncio.Event`` and ``threading.Event`` both do."""

    def is_set(self) -> bool: ...


class ModelCallCancelled(ModelCallError):
    """The call was stopped through its ``cancel`` signal; nothing was cached."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="cancelled")


def supports_streaming(model: Any) -> bool:
    """True when ``ask_streaming`` streams ``model``'s reply (else it asks with ``ask``)."""
    if needs_remote_jobs(model) or getattr(model, "remote", False) is True:
        return False  # answered through Expected Parrot (a job, or EDSL's remote call)
    if isinstance(model, OfflineModel):
        return True
    return takes_chat_turns(model)


async def ask_streaming(
    model: Any,
    *,
    user_prompt: str,
    system_prompt: str,
    cache: Cache | StoredCache | None = None,
    iteration: int = 0,
    settings: CallSettings | None = None,
    on_text: OnText | None = None,
    cancel: CancelSignal | None = None,
) -> ModelReply:
    """``ask()``, streamed (see the module docstring): the same ``ModelReply``, the same cache."""
    if on_text is not None and not callable(on_text):
        raise ConversationValueError(
            f"on_text must be a function of the text so far, got {type(on_text).__name__}"
        )
    if cancel is not None and not callable(getattr(cancel, "is_set", None)):
        raise ConversationValueError(
            f"cancel must be an asyncio.Event or threading.Event, got {type(cancel).__name__}"
        )
    label = model_label(model)
    if not supports_streaming(model):
        call = ask(
            model,
            user_prompt=user_prompt,
            system_prompt=system_prompt,
            cache=cache,
            iteration=iteration,
            settings=settings,
        )
        reply = await _unless_cancelled(call, cancel, label)
        await _show(on_text, reply.text)
        return reply
    check_inputs(user_prompt, system_prompt, iteration, settings)
    if cancel is not None and cancel.is_set():
        raise _cancelled(label)
    offline = isinstance(model, OfflineModel)
    request = _Request(
        model
        if offline
        else shaped(prepared(model, label, settings, (system_prompt, user_prompt)), settings),
        label,
        user_prompt,
        system_prompt,
        cache,
        iteration,
        settings,
        on_text,
        cancel,
    )
    return await (_offline(request) if offline else _openai(request))


@dataclasses.dataclass(frozen=True, slots=True)
class _Request:
    """One streamed call: the model (bounded by the settings), its label and inputs, and the
    caller's ``on_text`` and ``cancel``."""

    model: Any
    label: str
    user_prompt: str
    system_prompt: str
    cache: Cache | StoredCache | None
    iteration: int
    settings: CallSettings | None
    on_text: OnText | None
    cancel: CancelSignal | None

    def key(self) -> str:
        return cache_key(
            self.model,
            user_prompt=self.user_prompt,
            system_prompt=self.system_prompt,
            iteration=self.iteration,
        )


# -- the offline model -------------------------------------------------------------------------


async def _offline(request: _Request) -> ModelReply:
    """``ask``'s reply on a scratch cache, handed out word by word; cached only when complete."""
    model, label, on_text, cache = request.model, request.label, request.on_text, request.cache
    key = request.key()
    scratch = await _scratch(cache, key)
    timeout = request.settings.timeout if request.settings is not None else None
    started = time.perf_counter()

    async def run() -> ModelReply:
        reply = await ask(
            model,
            user_prompt=request.user_prompt,
            system_prompt=request.system_prompt,
            cache=scratch,
            iteration=request.iteration,
            settings=request.settings,
        )
        if reply.cache_used:
            return reply
        rate = model.stream_rate()
        left = None if timeout is None else timeout - (time.perf_counter() - started)
        try:
            async with asyncio.timeout(left):
                for count, shown in enumerate(_word_prefixes(reply.text)):
                    wait = started + reply.latency + count / rate - time.perf_counter()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    await _show(on_text, shown)
        except TimeoutError as exc:
            raise timeout_error(model, label, timeout or 0.0) from exc
        return dataclasses.replace(reply, latency=time.perf_counter() - started)

    reply = await _unless_cancelled(run(), request.cancel, label)
    if reply.cache_used:
        await _show(on_text, reply.text)
        return reply
    await _keep(cache, scratch, key, label)
    return reply


_WORD = re.compile(r"\S+")


def _word_prefixes(text: str) -> list[str]:
    """``text`` cut after each word: the last is ``text`` itself."""
    return [text[: match.end()] for match in _WORD.finditer(text)] or [text]


# -- OpenAI chat completions -------------------------------------------------------------------


async def _openai(request: _Request) -> ModelReply:
    model, label, settings, cache = request.model, request.label, request.settings, request.cache
    user_prompt, system_prompt, iteration = (
        request.user_prompt,
        request.system_prompt,
        request.iteration,
    )
    key = request.key()
    scratch = await _scratch(cache, key)
    entry = scratch.data.get(key)
    if entry is not None:
        return await _from_cache(model, label, key, entry, settings, request.on_text)
    raw, latency = await _generate(request)
    text, raw_text = final_text(model, raw, settings, label)
    if text is None:
        raise ModelCallError(
            f"{label} returned no text (streamed; finish reason "
            f"{raw['choices'][0]['finish_reason']!r}); the turn failed and nothing was recorded",
            code="empty_response",
        )
    input_tokens, output_tokens, cost, estimated = usage_of(model, raw, system_prompt, user_prompt)
    stored_key = scratch.store(
        model=str(model.model),
        parameters=dict(model.parameters),
        system_prompt=system_prompt,
        user_prompt=user_prompt,
        response=raw,
        iteration=iteration,
        service=model._inference_service_,
    )
    if stored_key != key:  # EDSL changed how it keys calls: nothing would ever hit
        log.warning("%s: EDSL's cache key %s is not %s", label, stored_key, key)
    await _keep(cache, scratch, key, label)
    return ModelReply(
        text=text,
        model_name=label,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
        cache_used=False,
        cache_key=key,
        latency=latency,
        raw=raw,
        usage_estimated=estimated,
        raw_text=raw_text,
    )


async def _generate(request: _Request) -> tuple[dict[str, Any], float]:
    """Stream the reply (holding the provider's slot, within the timeout, until ``cancel``),
    handing the text to ``on_text`` as it grows; the raw response as EDSL would store it, and
    the latency."""
    model, label, settings = request.model, request.label, request.settings
    timeout = settings.timeout if settings is not None else None
    speakers = settings.speakers if settings is not None else ()
    roster = settings.roster if settings is not None else ()
    shown = ""

    async def show(so_far: str) -> None:
        nonlocal shown
        text = so_far.lstrip()
        if text and speakers:
            text = strip_echo(text, speakers, roster)
        if text and text != shown:
            shown = text
            await _show(request.on_text, text)

    async def run() -> tuple[dict[str, Any], float]:
        async with call_slot(model):
            started = time.perf_counter()
            try:
                async with asyncio.timeout(timeout):
                    raw = await read_stream(model, request.user_prompt, request.system_prompt, show)
            except TimeoutError as exc:
                if timeout is None or isinstance(exc, ModelTimeoutError):
                    raise
                raise timeout_error(model, label, timeout) from exc
            return raw, time.perf_counter() - started

    return await _unless_cancelled(run(), request.cancel, label)


async def _from_cache(
    model: Any,
    label: str,
    key: str,
    entry: Any,
    settings: CallSettings | None,
    on_text: OnText | None,
) -> ModelReply:
    """A cache hit, as ``ask`` reports one: at once, free, the text read the same way."""
    import json

    started = time.perf_counter()
    raw = json.loads(entry.output)
    text, raw_text = final_text(model, raw, settings, label)
    if text is None:
        raise ModelCallError(
            f"{label} returned no text (a cached answer: {str(entry.output)[:300]}); the turn "
            "failed and nothing was recorded",
            code="empty_response",
        )
    await _show(on_text, text)
    return ModelReply(
        text=text,
        model_name=label,
        input_tokens=0,
        output_tokens=0,
        cost=0.0,
        cache_used=True,
        cache_key=key,
        latency=time.perf_counter() - started,
        raw=raw,
        raw_text=raw_text,
    )


# -- shared pieces -----------------------------------------------------------------------------


async def _scratch(cache: Cache | StoredCache | None, key: str) -> Cache:
    """An in-memory cache holding the stored entry of ``key`` (if any): written to only here, and
    kept (``_keep``) only once the call completed."""
    if isinstance(cache, StoredCache):
        return await cache.cache_for(key)
    if isinstance(cache, Cache) and key in cache.data:
        return Cache(data={key: cache.data[key]})
    return Cache(data={})


async def _keep(cache: Cache | StoredCache | None, scratch: Cache, key: str, label: str) -> None:
    """Write the completed call's new entry to the caller's cache (none on a hit)."""
    if isinstance(cache, StoredCache):
        await cache.save(scratch)
    elif isinstance(cache, Cache):
        entry = scratch.new_entries.get(key)
        if entry is not None and key not in cache.data:
            cache.data[key] = entry
            cache.new_entries[key] = entry


async def _show(on_text: OnText | None, text: str) -> None:
    if on_text is None:
        return
    result = on_text(text)
    if inspect.isawaitable(result):
        await result


async def _unless_cancelled(
    call: Coroutine[Any, Any, T], cancel: CancelSignal | None, label: str
) -> T:
    """Run ``call``; when ``cancel`` is set first, cancel it (closing its request) and raise
    ``ModelCallCancelled``. Cancelling the caller cancels ``call`` too."""
    if cancel is None:
        return await call
    task = asyncio.ensure_future(call)
    stop = asyncio.ensure_future(_wait_until_set(cancel))
    stopped = False
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():
            stopped = True
            task.cancel()
            # the request is closed before this returns (the stream's own ``finally``)
            await asyncio.gather(task, return_exceptions=True)
    if stopped:
        raise _cancelled(label)
    return task.result()


async def _wait_until_set(cancel: CancelSignal) -> None:
    if isinstance(cancel, asyncio.Event):
        await cancel.wait()
        return
    while not cancel.is_set():
        await asyncio.sleep(CANCEL_POLL_SECONDS)


def _cancelled(label: str) -> ModelCallCancelled:
    return ModelCallCancelled(
        f"the call to {label} was stopped before its reply was complete; nothing was recorded"
    )


__all__ = [
    "CANCEL_POLL_SECONDS",
    "CancelSignal",
    "ModelCallCancelled",
    "OnText",
    "ask_streaming",
    "supports_streaming",
]
