"""``ask()``: the engine's only way to reach a model.

One call is ``model.async_get_response(user_prompt, system_prompt, cache, iteration=...,
question_type="free_text")``: EDSL's cache and usage accounting, but no job, no survey and no Jinja
rendering, so both strings reach the model literally and the reply comes back literally (braces
included; surrounding whitespace is trimmed). The reply text is read from the raw response with the
model's own key path rather than from EDSL's parsed answer, which turns a missing answer into the
string ``"None"`` and an unreadable one into ``"[ERROR: ...]"``.

Contract:
- a provider exception propagates unchanged (``conversation.models.retries`` classifies it by type and
  HTTP status);
- an empty or missing answer raises ``ModelCallError(code="empty_response")``;
- a model that EDSL can reach only through Expected Parrot's remote jobs (an Expected Parrot key,
  no provider key; see ``providers``) is asked through a one-question job instead (slower, and its
  prompts' Jinja delimiters are neutralised because a job renders them);
- without a cache, a fresh in-memory ``edsl.Cache`` is used: nothing is written to disk; with a
  ``StoredCache`` (``models.stored_cache``) the entry of this call's key is loaded from the
  database first and a new answer written back (only once its text is valid);
- a cache hit (``cache_used``) was not paid for: ``cost`` 0.0 and 0 tokens;
- ``cost`` is US dollars from EDSL's price table (``edsl``'s ``PriceManager``, fetched from
  Expected Parrot and cached on disk) when the table lists the model; ``None`` when it does not
  (self-hosted servers, models missing from the table, no table available: EDSL would otherwise
  invent a price from a fallback rate); ``0.0`` for the offline and EDSL test models;
- the request holds a slot of its provider's limiter while it runs (``models.limits``: calls in
  flight per provider, shared by the whole process); waiting for a slot is not part of the
  timeout or the latency.

With ``settings`` (``CallSettings``):
- the model is asked for at most ``max_output_tokens`` (its ``max_tokens`` parameter, on a copy of
  the model kept for those settings; OpenAI-compatible servers get it as ``max_tokens`` too);
- a prompt whose estimate (``text.tokens.prompt_tokens``, which errs high) exceeds the context
  window minus the output limit is never sent: ``ModelCallError(code="prompt_too_large")``;
- no answer within ``timeout`` seconds raises ``ModelTimeoutError`` (a ``TimeoutError``, so
  transient); for a self-hosted server it asks any retry to wait at least as long again
  (``min_backoff``): the server keeps working on an abandoned request, and a retry sent at once
  would queue behind it (EDSL's own 60 s limit is lifted to this timeout);
- a room's turn of a chat model (``settings.speakers``; the user prompt a bare transcript) is
  sent as chat turns, not one user message (``models.chat_shape``; same cache key);
- a reply that starts by repeating a transcript header or a ``Name:`` label of one of the
  ``speakers`` has it removed, and so do copied instructions and made-up turns of others
  (``text.transcript.strip_echo``; ``raw_text`` keeps what the model sent); a reply with
  nothing left raises ``chat_shape.EchoOnlyReply`` (``code="echo_only"``);
- a reply that copies what ``settings.repeats`` guards (an earlier message of the room, word for
  word; a stopped or denied draft of the same turn) raises ``chat_shape.CopiedReply``
  (``code="copied_reply"``), before anything is cached (``chat_shape.kept_reply``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from edsl.caching import Cache

from conversation.exceptions import ConversationStateError, ModelCallError
from conversation.models.call_rules import (
    ModelTimeoutError,
    check_inputs,
    check_model,
    prepared,
    reply_text,
    timeout_error,
)
from conversation.models.chat_shape import kept_reply, shaped
from conversation.models.limits import call_slot
from conversation.models.providers.families import family_of
from conversation.models.providers.labels import model_label, needs_remote_jobs
from conversation.models.settings import CallSettings
from conversation.models.stored_cache import StoredCache, cache_key

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One model answer and what it cost."""

    text: str
    model_name: str
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    cache_used: bool
    cache_key: str | None
    latency: float
    raw: Any = field(repr=False, compare=False)
    #: True when the server reported no usage and the token counts are ``text.tokens`` estimates
    #: (a streamed reply from llama.cpp's server: ``models.streaming``).
    usage_estimated: bool = False
    #: The reply as the model sent it, when stripping changed it (``text`` is what is kept).
    raw_text: str | None = None

    def usage(self) -> dict[str, Any]:
        """The ``usage`` record stored with a turn (no raw response); ``usage_estimated`` is
        added only when true, so records of measured usage keep their shape."""
        record = {
            "model": self.model_name,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "cache_used": self.cache_used,
            "latency": self.latency,
        }
        if self.usage_estimated:
            record["usage_estimated"] = True
        return record


async def ask(
    model: Any,
    *,
    user_prompt: str,
    system_prompt: str,
    cache: Cache | StoredCache | None = None,
    iteration: int = 0,
    settings: CallSettings | None = None,
) -> ModelReply:
    """Send two prompt strings to ``model`` and return its reply (see the module docstring)."""
    check_inputs(user_prompt, system_prompt, iteration, settings)
    check_model(model)
    label = model_label(model)
    model = shaped(prepared(model, label, settings, (system_prompt, user_prompt)), settings)
    if needs_remote_jobs(model):
        job_cache = None if isinstance(cache, StoredCache) else cache  # a job keys its own prompts
        async with call_slot(model):
            return await _ask_through_a_job(model, label, user_prompt, system_prompt, job_cache)
    stored = cache if isinstance(cache, StoredCache) else None
    key = None
    if stored is not None:
        key = cache_key(
            model, user_prompt=user_prompt, system_prompt=system_prompt, iteration=iteration
        )
        cache = await stored.cache_for(key)
    if cache is None:
        cache = Cache(data={})
    timeout = settings.timeout if settings is not None else None
    async with call_slot(model):
        started = time.perf_counter()
        call = model.async_get_response(
            user_prompt, system_prompt, cache, iteration=iteration, question_type="free_text"
        )
        try:
            # asyncio.timeout, not wait_for: the call runs in this task instead of a new one
            # per turn (and 3.11's wait_for can swallow a cancellation).
            async with asyncio.timeout(timeout):
                response = await call
        except TimeoutError as exc:
            if timeout is None or isinstance(exc, ModelTimeoutError):
                raise
            raise timeout_error(model, label, timeout) from exc
        latency = time.perf_counter() - started
    reply = _reply(model, label, response.model_outputs, response.edsl_dict, settings, latency)
    if stored is not None and not reply.cache_used:
        if reply.cache_key != key:  # EDSL changed how it keys calls: nothing would ever hit
            log.warning("%s: EDSL's cache key %s is not %s", label, reply.cache_key, key)
        await stored.save(cache)  # type: ignore[arg-type]
    return reply


def _reply(
    model: Any,
    label: str,
    outputs: Any,
    edsl_dict: Any,
    settings: CallSettings | None,
    latency: float,
) -> ModelReply:
    """The ``ModelReply`` of EDSL's ``outputs`` (echo stripped; a cache hit costs nothing), or
    a ``ModelCallError`` when the model returned no text."""
    raw_text = reply_text(model, outputs.response, edsl_dict)
    text = kept_reply(label, raw_text, settings)
    if text is None:
        raise ModelCallError(
            f"{label} returned no text (raw response: {_short(outputs.response)}); "
            "the turn failed and nothing was recorded",
            code="empty_response",
        )
    hit = bool(outputs.cache_used)
    return ModelReply(
        text=text,
        model_name=label,
        input_tokens=0 if hit else outputs.input_tokens,
        output_tokens=0 if hit else outputs.output_tokens,
        cost=0.0 if hit else known_cost(model, outputs.total_cost),
        cache_used=hit,
        cache_key=outputs.cache_key,
        latency=latency,
        raw=outputs.response,
        raw_text=raw_text if raw_text != text else None,
    )


async def _ask_through_a_job(
    model: Any, label: str, user_prompt: str, system_prompt: str, cache: Cache | None
) -> ModelReply:
    """One turn as a one-question EDSL job, for a model EDSL reaches only through Expected
    Parrot's remote inference (a key for Expected Parrot, none for the provider).

    Slower than a direct call (a job per turn), and the prompts go through EDSL's templating, so
    their Jinja delimiters are neutralised first (the text reads the same). The persona becomes
    the agent's instruction, the turn's prompt the question.
    """
    from edsl import Agent, QuestionFreeText

    from conversation.text.safety import neutralize

    question = QuestionFreeText(question_text=neutralize(user_prompt), question_name="turn")
    agent = Agent(traits={}, instruction=neutralize(system_prompt) or "Answer as asked.")
    local = family_of(model).in_process
    started = time.perf_counter()
    results = (
        await question.by(agent)
        .by(model)
        .run_async(
            cache=Cache(data={}) if cache is None else cache,
            disable_remote_inference=local,
            disable_remote_cache=local,
            progress_bar=False,
            print_exceptions=False,
            stop_on_exception=False,
        )
    )
    latency = time.perf_counter() - started
    answers = results.select("answer.turn").to_list() if results is not None else []
    text = answers[0] if answers else None
    if (
        results is None
        or results.has_unfixed_exceptions
        or not isinstance(text, str)
        or not text.strip()
    ):
        raise ModelCallError(
            f"{label} (through a remote job) returned no text; the turn failed and nothing was "
            "recorded",
            code="empty_response",
        )
    result = results[0]
    raw = dict(result.get("raw_model_response") or {})
    cache_used = bool((result.get("cache_used_dict") or {}).get("turn"))
    return ModelReply(
        text=text.strip(),
        model_name=label,
        input_tokens=raw.get("turn_input_tokens"),
        output_tokens=raw.get("turn_output_tokens"),
        cost=0.0 if cache_used else known_cost(model, raw.get("turn_cost")),
        cache_used=cache_used,
        cache_key=None,
        latency=latency,
        raw=raw,
    )


def known_cost(model: Any, total_cost: Any) -> float | None:
    """EDSL's cost of a call in US dollars when its price table lists the model, else None (see
    the module docstring); 0.0 for the offline and EDSL test models."""
    from edsl.language_models.price_manager import PriceManager

    family = family_of(model)
    if family.in_process:
        return 0.0
    if not family.priced or isinstance(total_cost, bool):
        return None
    if not isinstance(total_cost, int | float):
        return None  # EDSL puts its error message here when it could not price the call
    service = getattr(model, "_inference_service_", None)
    if (service, getattr(model, "model", None)) not in PriceManager.get_instance().get_all_prices():
        return None  # EDSL priced it at a fallback rate: not a real price
    return float(total_cost)


def ask_sync(
    model: Any,
    *,
    user_prompt: str,
    system_prompt: str,
    cache: Cache | StoredCache | None = None,
    iteration: int = 0,
    settings: CallSettings | None = None,
) -> ModelReply:
    """``ask()`` for code without an event loop; inside a running loop, ``await ask(...)``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(
            ask(
                model,
                user_prompt=user_prompt,
                system_prompt=system_prompt,
                cache=cache,
                iteration=iteration,
                settings=settings,
            )
        )
    raise ConversationStateError(
        "ask_sync() cannot run inside a running event loop; use `await ask(...)` instead"
    )


def _dollars(cost: Any) -> float | None:
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def _short(raw: Any, limit: int = 300) -> str:
    text = repr(raw)
    return text if len(text) <= limit else text[:limit] + "..."


__all__ = ["ModelReply", "ModelTimeoutError", "ask", "ask_sync", "known_cost"]
