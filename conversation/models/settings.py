"""Per-call settings of a model request, and what is known about a model's context window.

``CallSettings`` travel with one ``ask()``: the output limit (``max_output_tokens``, sent the way
the service understands it: see ``providers.clients``), the request timeout in seconds, the context window
the prompt must fit in (with the output limit), the speaker names whose copied labels are
stripped from a reply, the room's other names (a reply is cut where it makes up their turn), and
what the reply must not copy (``repeats``). A room builds them from its config
(``RoomConfig.call_settings``; the engine adds ``repeats`` per turn).

``context_window(spec)``, first found wins: the room's ``context_window``; for a known hosted model
its window (by name); for a self-hosted server (OpenAI-compatible, Ollama) the window the server
reports (llama.cpp's ``/props``, vLLM's ``max_model_len``: ``server_window``), else the
``ROOMS_CONTEXT_WINDOW`` environment setting, else ``SERVER_CONTEXT_WINDOW`` (llama.cpp's own
default is smaller than most models allow; start the server with ``--n_ctx`` at least this large,
or set the window); for an unknown hosted model the setting, else no bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.models.providers.families import family_of
from conversation.models.server_window import reported_context_window
from conversation.text.copies import RepeatGuard
from settings import SETTINGS, env_name

#: A conversational default: a chat message, not an essay (a person's reply is rarely over 150
#: words); SmolLM2 at 512 generated for up to 40 s and was cut mid-sentence anyway (issue 24).
DEFAULT_MAX_OUTPUT_TOKENS = 200
#: The default of stored room configs written before it changed (they keep their answers cached
#: under the same parameters).
STORED_DEFAULT_MAX_OUTPUT_TOKENS = 512
DEFAULT_TIMEOUT_SECONDS = 120.0
SERVER_CONTEXT_WINDOW = 4096
OFFLINE_CONTEXT_WINDOW = 32_768
#: The environment setting for the context window of servers and unknown models (tokens).
CONTEXT_WINDOW_ENV = env_name("context_window")

# Context windows (tokens) of known model families, by name prefix; the longest prefix wins.
KNOWN_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "chatgpt-4o": 128_000,
    "claude-": 200_000,
    "gemini-": 1_048_576,
    "mistral-small": 32_000,
    "mistral-medium": 128_000,
    "mistral-large": 128_000,
    "open-mistral": 32_000,
    "codestral": 256_000,
    "llama-3.1": 128_000,
    "llama-3.2": 128_000,
    "llama-3.3": 128_000,
    "llama3": 8_192,
    "deepseek-": 64_000,
    "grok-": 131_072,
    "smollm2": 8_192,
    "qwen2.5": 32_768,
}


def _positive(value: Any, field: str, fix: str, *, real: bool = False) -> None:
    kinds = (int, float) if real else (int,)
    if (
        not isinstance(value, kinds)
        or isinstance(value, bool)
        or (real and not math.isfinite(value))
        or value <= 0
    ):
        raise ConversationValueError(f"{field} must be a positive number, got {value!r}; {fix}")


@dataclass(frozen=True, slots=True)
class CallSettings:
    """What one request may take: output tokens, seconds, and the window the prompt must fit."""

    max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS
    timeout: float | None = DEFAULT_TIMEOUT_SECONDS
    context_window: int | None = None
    speakers: tuple[str, ...] = ()
    roster: tuple[str, ...] = ()
    #: What the reply must not copy (a room's earlier messages, the turn's denied drafts): a
    #: reply that does raises ``chat_shape.CopiedReply`` before it is cached (``text.copies``).
    repeats: RepeatGuard | None = None

    def __post_init__(self) -> None:
        if self.max_output_tokens is not None:
            _positive(self.max_output_tokens, "max_output_tokens", "e.g. 512")
        if self.timeout is not None:
            _positive(self.timeout, "timeout", "seconds, e.g. 120", real=True)
        if self.context_window is not None:
            _positive(self.context_window, "context_window", "tokens, e.g. 8192")
        if (
            self.context_window is not None
            and self.max_output_tokens is not None
            and self.max_output_tokens >= self.context_window
        ):
            raise ConversationValueError(
                f"max_output_tokens ({self.max_output_tokens}) must be below the context "
                f"window ({self.context_window}); lower it or raise the window"
            )

    @property
    def prompt_budget(self) -> int | None:
        """Tokens a prompt may take: the window minus the output limit (None: no limit)."""
        if self.context_window is None:
            return None
        return self.context_window - (self.max_output_tokens or 0)


def _known_prefixes(model: str) -> list[str]:
    """The ``KNOWN_WINDOWS`` prefixes a model name starts with (its last path part)."""
    name = model.lower().rsplit("/", 1)[-1]
    return [prefix for prefix in KNOWN_WINDOWS if name.startswith(prefix)]


def _fixed_window(spec: Mapping[str, Any], configured: int | None) -> tuple[bool, int | None]:
    """``(True, window)`` when the window follows from the spec and ``configured`` alone;
    ``(False, None)`` when it depends on what a server reports or on a setting."""
    if configured is not None:
        return True, configured
    family = family_of(str(spec.get("service") or ""))
    if family.in_process:
        return True, OFFLINE_CONTEXT_WINDOW
    matches = _known_prefixes(str(spec.get("model") or ""))
    if matches and not family.window_reported:
        return True, KNOWN_WINDOWS[max(matches, key=len)]
    return False, None


def context_window(spec: Mapping[str, Any] | None, configured: int | None = None) -> int | None:
    """The context window for a model spec: ``configured`` when given, else a known model's
    window, what a self-hosted server reports, the ``ROOMS_CONTEXT_WINDOW`` setting,
    ``SERVER_CONTEXT_WINDOW`` for a self-hosted server, ``OFFLINE_CONTEXT_WINDOW`` for the offline
    and test models, or None when the model is unknown and nothing is set (no bound then)."""
    spec = spec or {}
    fixed, window = _fixed_window(spec, configured)
    if fixed:
        return window
    if family_of(str(spec.get("service") or "")).window_reported:
        model = str(spec.get("model") or "")
        reported = reported_context_window(spec.get("base_url"), model)
        if reported is not None:
            return reported
        setting = configured_window()
        if setting is not None:
            return setting
        # a server's window is how it was started, not what the model could take: the smaller
        return min([SERVER_CONTEXT_WINDOW, *(KNOWN_WINDOWS[m] for m in _known_prefixes(model))])
    return configured_window()


def window_is_fixed(spec: Mapping[str, Any] | None, configured: int | None = None) -> bool:
    """Whether ``context_window(spec, configured)`` depends on its arguments alone (not on what
    a server reports or on ``ROOMS_CONTEXT_WINDOW``, which may change while a room runs)."""
    return _fixed_window(spec or {}, configured)[0]


def configured_window() -> int | None:
    """``ROOMS_CONTEXT_WINDOW`` (tokens: the ``--n_ctx`` a server was started with), or None
    when it is not set."""
    return SETTINGS.context_window


__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "STORED_DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_TIMEOUT_SECONDS",
    "KNOWN_WINDOWS",
    "OFFLINE_CONTEXT_WINDOW",
    "SERVER_CONTEXT_WINDOW",
    "CONTEXT_WINDOW_ENV",
    "CallSettings",
    "configured_window",
    "context_window",
    "window_is_fixed",
]
