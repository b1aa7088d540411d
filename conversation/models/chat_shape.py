"""Chat turns for chat models: the conversation sent as messages, not as one long transcript.

EDSL 1.0.9 sends every call as two messages: the system prompt and one user message. A room's
default prompt for a chat-capable model (``rooms.prompt``) puts the instructions and the persona in
the system prompt and the visible transcript (``text.transcript``, one numbered line per message)
as the user prompt, nothing else. For models whose call is EDSL's OpenAI chat completion (OpenAI,
OpenAI-compatible servers such as llama.cpp's and vLLM, Ollama) that transcript is sent as chat
turns instead (``chat_messages``):

- the speaker's own messages are ``assistant`` turns (a pass is the word ``PASS``);
- every other message is a ``user`` turn that names its speaker (``Bob: I offer $5``; a private
  message says to whom, a summary and a notice say what they are);
- when the speaker spoke last, or nothing was said yet, a short ``user`` turn ``(your turn)``
  ends the list (a chat model answers a user turn).

So a small model continues a chat it recognises, as itself, instead of a document of
instructions it parrots (``benchmarks/echo_rate.py`` measures it). The prompt strings are
unchanged, so EDSL's cache key (model, parameters, both prompts, iteration) is the same whether
the call is shaped or not: cached answers and re-runs keep working; the turn's details show
both strings as before.

A self-hosted server (``families.OWN_SERVER``: ``stop_sequences``) also gets stop sequences
(``stop_sequences``): a line opening another member's turn (``\\nBob:``) ends the reply, so a
reply ends where a person's would. Hosted OpenAI models get none (its reasoning models refuse
``stop``); ``text.transcript.strip_echo`` cuts what a stop sequence did not.

A user prompt that is not a bare transcript (a room's own template, a coordinator's or a
summary's prompt) is sent as EDSL sends it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from conversation.exceptions import ModelCallError
from conversation.models.providers.families import family_of
from conversation.models.settings import CallSettings
from conversation.text.transcript import (
    EMPTY_TRANSCRIPT,
    TRANSCRIPT_HEADER,
    message_spans,
    strip_echo,
)

#: The user turn that ends a chat the speaker spoke last in (or an empty one).
YOUR_TURN = "(your turn)"
#: At most this many stop sequences (OpenAI's own limit; most servers take more).
MAX_STOP_SEQUENCES = 4
_SHAPED = "_rooms_chat_shaped_copies"
_TURNS = "_rooms_chat_turns"  # on a shaped copy: the speaker and roster it sends turns for


class EchoOnlyReply(ModelCallError):
    """A reply that was nothing but copied scaffolding or other speakers' made-up turns: empty
    once stripped (``text.transcript.strip_echo``). A room retries it (a try counted), then
    stores a pass with the reason; ``raw_text`` is what the model sent."""

    def __init__(self, label: str, raw_text: str) -> None:
        super().__init__(
            f"{label} replied only with the prompt's instructions or other speakers' made-up "
            f"turns (nothing of its own was left once they were removed): {raw_text[:200]!r}",
            code="echo_only",
        )
        self.raw_text = raw_text


class CopiedReply(EchoOnlyReply):
    """A reply that copies an earlier message of the room word for word, or repeats a draft of
    the same turn that a person stopped or denied (``text.copies``). Handled like an echo: a
    room retries it (a try counted; the copy was never cached), then stores a pass with the
    reason; ``raw_text`` is what the model sent, ``copied`` what it repeats."""

    def __init__(self, label: str, raw_text: str, copied: str) -> None:
        ModelCallError.__init__(
            self,
            f"{label} replied with a copy of {copied} ({raw_text[:200]!r}), not a new message",
            code="copied_reply",
        )
        self.raw_text = raw_text
        self.copied = copied


def kept_reply(label: str, text: str | None, settings: CallSettings | None) -> str | None:
    """A reply's text as a room keeps it: what a model copied of its prompt or made up of
    others' turns stripped (``text.transcript.strip_echo``), refused when nothing is left
    (``EchoOnlyReply``) or when it copies what ``settings.repeats`` guards (``CopiedReply``).
    Both raise before the answer is cached. ``text`` None (no answer) stays None."""
    if text is None or settings is None:
        return text
    kept: str | None = text
    if settings.speakers:
        kept = strip_echo(text, settings.speakers, settings.roster) or None
        if kept is None:
            raise EchoOnlyReply(label, text)
    if settings.repeats is not None and kept is not None:
        copied = settings.repeats.copied(kept)
        if copied is not None:
            raise CopiedReply(label, text, copied)
    return kept


def checks_copies(model: Any) -> bool:
    """Whether ``model``'s replies are checked for copies of earlier messages: every model's but
    a stand-in's answering in its own words (the offline model's voice, EDSL's canned test
    model), which repeat by design and are no author; a scripted offline model stands for a
    real one and is checked."""
    if not family_of(model).in_process:
        return True
    return bool(getattr(model, "answers_a_script", False))


def takes_chat_turns(model: Any) -> bool:
    """True when ``model``'s call is EDSL's OpenAI chat completion (see the module docstring)."""
    from edsl.inference_services.services.open_ai_service import OpenAIService

    if not family_of(model).chat_completions:
        return False
    if getattr(model, "remote", False) is True:
        return False
    call = getattr(type(model), "async_execute_model_call", None)
    return getattr(call, "__module__", None) == OpenAIService.__module__ and callable(
        getattr(model, "async_client", None)
    )


def transcript_records(user_prompt: str) -> list[dict[str, Any]] | None:
    """The message records of a user prompt that is a bare transcript (``render_lines``' output:
    the header line and one line per message, or ``EMPTY_TRANSCRIPT``), else None."""
    text = user_prompt.strip()
    if text == EMPTY_TRANSCRIPT:
        return []
    lines = text.splitlines()
    if not lines or lines[0] != TRANSCRIPT_HEADER:
        return None
    body = "\n".join(lines[1:])
    spans = message_spans(body)
    if len(spans) != len(lines) - 1:
        return None  # some line is not a message line: not a bare transcript
    return [record for _, _, record in spans]


def _user_turn(record: dict[str, Any]) -> str:
    speaker = str(record.get("speaker", ""))
    if "summary" in record:
        return f"(summary of earlier messages) {record['summary']}"
    if "notice" in record:
        return f"(notice) {record['notice']}"
    private = record.get("private_to")
    label = f"{speaker} (privately to {', '.join(private)})" if private else speaker
    if record.get("passed"):
        return f"{label} passed."
    return f"{label}: {record.get('text', '')}"


def chat_messages(
    system_prompt: str, user_prompt: str, speaker: str
) -> list[dict[str, str]] | None:
    """The chat turns of one call (see the module docstring), or None when ``user_prompt`` is
    not a bare transcript (then the call is sent as EDSL sends it)."""
    records = transcript_records(user_prompt)
    if records is None or not speaker:
        return None
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    mine = speaker.casefold()
    for record in records:
        own = str(record.get("speaker", "")).casefold() == mine
        if own and "summary" not in record and "notice" not in record:
            text = "PASS" if record.get("passed") else str(record.get("text", ""))
            messages.append({"role": "assistant", "content": text or "PASS"})
        else:
            messages.append({"role": "user", "content": _user_turn(record)})
    if len(messages) == (1 if system_prompt else 0) or messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": YOUR_TURN})
    return messages


def stop_sequences(model: Any, speaker: str, roster: Sequence[str]) -> list[str]:
    """``\\nName:`` for the other members (people last), for a self-hosted server; none
    otherwise."""
    if not family_of(model).stop_sequences:
        return []
    others = [n for n in roster if n.casefold() != speaker.casefold()]
    return [f"\n{name}:" for name in others][:MAX_STOP_SEQUENCES]


def chat_request(
    model: Any, user_prompt: str, system_prompt: str, speaker: str, roster: Sequence[str]
) -> dict[str, Any] | None:
    """The chat-completion parameters of a shaped call (EDSL's own parameter builder, the
    model's filter, the stop sequences), or None when the call is not shaped."""
    from edsl.inference_services.services.open_ai_service import OpenAIParameterBuilder

    messages = chat_messages(system_prompt, user_prompt, speaker)
    if messages is None or not takes_chat_turns(model):
        return None
    names = (
        *("temperature", "max_tokens", "top_p", "frequency_penalty", "presence_penalty"),
        *("logprobs", "top_logprobs", "reasoning_effort"),
    )
    parameters = model.parameters
    params = OpenAIParameterBuilder.build_params(
        model=model.model,
        messages=messages,
        **{name: getattr(model, name, parameters.get(name)) for name in names},
    )
    params = dict(model._filter_parameters_for_service(params))
    stop = stop_sequences(model, speaker, roster)
    if stop:
        params["stop"] = stop
    return params


def chat_turns_of(model: Any) -> tuple[str, tuple[str, ...]] | None:
    """``(speaker, roster)`` of a model made by :func:`shaped`, else None: how a streamed call
    (``models.streaming``) sends the same chat turns as the unstreamed one."""
    return getattr(model, "__dict__", {}).get(_TURNS)


def shaped(model: Any, settings: CallSettings | None) -> Any:
    """``model``, or a copy of it whose calls send chat turns for ``settings.speakers[0]`` (kept
    on the model per speaker and roster; the original is never changed, other rooms share it)."""
    if settings is None or not settings.speakers or not takes_chat_turns(model):
        return model
    speaker, roster = settings.speakers[0], tuple(settings.roster)
    copies = model.__dict__.setdefault(_SHAPED, {})
    found = copies.get((speaker, roster))
    if found is not None:
        return found
    shaped_model = copy.copy(model)
    shaped_model.__dict__.pop(_SHAPED, None)
    original = shaped_model.async_execute_model_call

    async def execute(user_prompt: str, system_prompt: str = "", **kwargs: Any) -> Any:
        params = None
        if not kwargs.get("files_list") and kwargs.get("response_schema") is None:
            params = chat_request(shaped_model, user_prompt, system_prompt, speaker, roster)
        if params is None:
            return await original(user_prompt, system_prompt, **kwargs)
        response = await shaped_model.async_client().chat.completions.create(**params)
        return response.model_dump()

    shaped_model.async_execute_model_call = execute
    shaped_model.__dict__[_TURNS] = (speaker, roster)
    copies[(speaker, roster)] = shaped_model
    return shaped_model


__all__ = [
    "CopiedReply",
    "checks_copies",
    "EchoOnlyReply",
    "kept_reply",
    "MAX_STOP_SEQUENCES",
    "YOUR_TURN",
    "chat_messages",
    "chat_request",
    "shaped",
    "stop_sequences",
    "takes_chat_turns",
    "transcript_records",
]
