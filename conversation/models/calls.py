"""``ask()``: the engine's only way to reach a model.

One call is ``model.async_get_response(user_prompt, system_prompt, cache, iteration=...,
question_type="free_text")``: EDSL's cache and usage accounting, but no job, no survey and no Jinja
rendering, so both strings reach the model literally and the reply comes back literally (braces
included; surrounding whitespace is trimmed). The reply text is read from the raw response with the
model's own key path rather than from EDSL's parsed answer, which turns a missing answer into the
string ``"None"`` and an unreadable one into ``"[ERROR: ...]"``.

Contract:
- a provider exception propagates unchanged (``conversation.retries`` classifies it by type and
  HTTP status);
- an empty or missing answer raises ``ModelCallError(code="empty_response")``;
- a model that can only run through Expected Parrot's remote jobs (see ``providers``) raises
  ``ModelCallError(code="remote_inference_only")`` before any call;
- without a cache, a fresh in-memory ``edsl.Cache`` is used: nothing is written to disk;
- ``cost`` is EDSL's price in USD, ``None`` when unknown (self-hosted servers, whose "price" EDSL
  would otherwise invent from a fallback rate).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from edsl.caching import Cache

from ..exceptions import ConversationStateError, ConversationValueError, ModelCallError
from .labels import model_label, needs_remote_jobs

_SELF_HOSTED = frozenset({"openai_compatible", "ollama"})


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

    def usage(self) -> dict[str, Any]:
        """The ``usage`` record stored with a turn (no raw response)."""
        return {
            "model": self.model_name,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "cache_used": self.cache_used,
            "latency": self.latency,
        }


async def ask(
    model: Any,
    *,
    user_prompt: str,
    system_prompt: str,
    cache: Cache | None = None,
    iteration: int = 0,
) -> ModelReply:
    """Send two prompt strings to ``model`` and return its reply (see the module docstring)."""
    for name, value in (("user_prompt", user_prompt), ("system_prompt", system_prompt)):
        if not isinstance(value, str):
            raise ConversationValueError(
                f"{name} must be a string, got {type(value).__name__}; pass the prompt text"
            )
    if not isinstance(iteration, int) or isinstance(iteration, bool) or iteration < 0:
        raise ConversationValueError(
            f"iteration must be a non-negative integer, got {iteration!r}; use 0 unless you "
            "want a second, separately cached answer to the same prompts"
        )
    if not hasattr(model, "async_get_response"):
        raise ConversationValueError(
            f"model must be an EDSL language model, got {type(model).__name__}; "
            "build one with conversation.models.resolve_model(...)"
        )
    label = model_label(model)
    if needs_remote_jobs(model):
        raise ModelCallError(
            f"{label} has no provider key here and EDSL can reach it only through Expected "
            "Parrot's remote jobs, not one call at a time; set the provider's API key "
            "(e.g. OPENAI_API_KEY) or choose another model",
            code="remote_inference_only",
        )
    if cache is None:
        cache = Cache(data={})
    started = time.perf_counter()
    response = await model.async_get_response(
        user_prompt, system_prompt, cache, iteration=iteration, question_type="free_text"
    )
    latency = time.perf_counter() - started
    outputs = response.model_outputs
    text = _reply_text(model, outputs.response, response.edsl_dict)
    if text is None:
        raise ModelCallError(
            f"{label} returned no text (raw response: {_short(outputs.response)}); "
            "the turn failed and nothing was recorded",
            code="empty_response",
        )
    cost = outputs.total_cost
    if getattr(model, "_inference_service_", None) in _SELF_HOSTED:
        cost = None  # EDSL prices unknown models at a made-up fallback rate; a local server's is unknown
    return ModelReply(
        text=text,
        model_name=label,
        input_tokens=outputs.input_tokens,
        output_tokens=outputs.output_tokens,
        cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
        cache_used=bool(outputs.cache_used),
        cache_key=outputs.cache_key,
        latency=latency,
        raw=outputs.response,
    )


def ask_sync(
    model: Any,
    *,
    user_prompt: str,
    system_prompt: str,
    cache: Cache | None = None,
    iteration: int = 0,
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
            )
        )
    raise ConversationStateError(
        "ask_sync() cannot run inside a running event loop; use `await ask(...)` instead"
    )


def _reply_text(model: Any, raw: Any, edsl_dict: Any) -> str | None:
    found: Any = raw
    try:
        for key in model.key_sequence:
            found = found[key]
    except (KeyError, IndexError, TypeError):
        found = _parsed_text(edsl_dict)
    if not isinstance(found, str) or not found.strip():
        return None
    return found.strip()


def _parsed_text(edsl_dict: Any) -> str | None:
    """EDSL's own reading, for response shapes the key path does not fit."""
    text = getattr(edsl_dict, "generated_tokens", None)
    if not isinstance(text, str) or text.startswith("[ERROR:") or text == "None":
        return None
    return text


def _short(raw: Any, limit: int = 300) -> str:
    text = repr(raw)
    return text if len(text) <= limit else text[:limit] + "..."


__all__ = ["ModelReply", "ask", "ask_sync"]
