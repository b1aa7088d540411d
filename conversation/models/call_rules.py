"""The rules a model call keeps however it is made: ``ask`` (through EDSL, ``models.calls``) and
``ask_streaming`` (beside EDSL, ``models.streaming``) share them here, so the two paths cannot
drift: the argument checks, the prompt-size check, the output limit and timeout on a copy of the
model, the typed timeout error, and how the reply text is read from a raw response."""

from __future__ import annotations

import copy
from typing import Any

from conversation.exceptions import ConversationValueError, ModelCallError
from conversation.models.providers.families import family_of
from conversation.models.settings import CallSettings
from conversation.text.tokens import prompt_tokens

_BOUNDED = "_rooms_bounded_copies"


class ModelTimeoutError(ModelCallError, TimeoutError):
    """No answer within the request timeout. ``min_backoff``: seconds a retry should wait at
    least (a self-hosted server is still working on the abandoned request)."""

    def __init__(self, message: str, *, timeout: float, min_backoff: float = 0.0) -> None:
        super().__init__(message, code="timeout")
        self.timeout = timeout
        self.min_backoff = min_backoff


def check_inputs(user_prompt: Any, system_prompt: Any, iteration: Any, settings: Any) -> None:
    """A call's prompts, iteration and settings, refused with a ``ConversationValueError``
    naming the fix."""
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
    if settings is not None and not isinstance(settings, CallSettings):
        raise ConversationValueError(
            f"settings must be a CallSettings, got {type(settings).__name__}"
        )


def check_model(model: Any) -> None:
    """``model`` must be an EDSL language model."""
    if not hasattr(model, "async_get_response"):
        raise ConversationValueError(
            f"model must be an EDSL language model, got {type(model).__name__}; "
            "build one with conversation.models.resolve_model(...)"
        )


def timeout_error(model: Any, label: str, timeout: float) -> ModelTimeoutError:
    """The typed error of a call that outlived the room's request timeout. A self-hosted server
    keeps working on an abandoned request, so its retry waits at least the timeout."""
    local = family_of(model).keeps_abandoned_calls
    return ModelTimeoutError(
        f"{label} gave no answer within {timeout:g} s (the room's request timeout)"
        + (
            "; a self-hosted server keeps working on an abandoned request, so a retry "
            f"waits at least {timeout:g} s"
            if local
            else ""
        ),
        timeout=timeout,
        min_backoff=timeout if local else 0.0,
    )


def check_fits(label: str, settings: CallSettings, system_prompt: str, user_prompt: str) -> None:
    """A prompt whose estimate exceeds the context window minus the output limit is never
    sent: ``ModelCallError(code="prompt_too_large")``."""
    budget = settings.prompt_budget
    if budget is None:
        return
    needed = prompt_tokens(system_prompt, user_prompt)
    if needed > budget:
        raise ModelCallError(
            f"the prompt for {label} is about {needed} tokens (estimated high), more than its "
            f"context window {settings.context_window} minus the output limit "
            f"{settings.max_output_tokens} allows ({budget}); it was not sent. Shorten the "
            "persona or the message that opened the activity, or raise the room's "
            "context_window if the model takes more",
            code="prompt_too_large",
        )


def bounded(model: Any, settings: CallSettings) -> Any:
    """``model`` asked for at most ``settings.max_output_tokens`` and allowed ``timeout``
    seconds by EDSL: a copy per settings, kept on the model (the original is never changed,
    other rooms share it)."""
    limit = settings.max_output_tokens
    parameters = getattr(model, "parameters", None)
    if not isinstance(parameters, dict) or "max_tokens" not in parameters:
        return model  # the offline and test models: nothing to bound, and state not to split
    if parameters.get("max_tokens") == limit and settings.timeout is None:
        return model
    key = (limit, settings.timeout)
    copies = model.__dict__.setdefault(_BOUNDED, {})
    found = copies.get(key)
    if found is None:
        found = copy.copy(model)
        if limit is not None:
            found.parameters = {**parameters, "max_tokens": limit}
            found.max_tokens = limit
        if settings.timeout is not None:
            # EDSL waits EDSL_API_TIMEOUT (60 s) on its own; this call's limit is ours.
            edsl_limit = settings.timeout + 5.0
            found._compute_timeout = lambda files_list=None: edsl_limit
        copies[key] = found
    return found


def prepared(
    model: Any, label: str, settings: CallSettings | None, prompts: tuple[str, str]
) -> Any:
    """The model to ask with ``settings`` (``prompts``: system, user): the prompt-size check
    passed, the output limit and timeout applied; ``model`` itself without settings."""
    if settings is None:
        return model
    check_fits(label, settings, *prompts)
    return bounded(model, settings)


def reply_text(model: Any, raw: Any, edsl_dict: Any = None) -> str | None:
    """The reply's text, read from the raw response with the model's own key path (else EDSL's
    parse); None when there is no text."""
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


__all__ = [
    "ModelTimeoutError",
    "bounded",
    "check_fits",
    "check_inputs",
    "check_model",
    "prepared",
    "reply_text",
    "timeout_error",
]
