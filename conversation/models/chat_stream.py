"""One OpenAI chat completion read as a stream, beside EDSL (``models.streaming`` drives it).

EDSL 1.0.9 sends ``"stream": false``, so the streamed request is built here with EDSL's own
builders (the same messages and parameters its call would send) and read chunk by chunk with the
model's own ``openai`` client; what comes back is rebuilt as the chat completion EDSL would have
stored, so the cache and the reply read the same as an unstreamed call's:

- ``request_parameters``: the parameters EDSL's OpenAI service sends for a call (a room's shaped
  call sends its chat turns and stop sequences: ``chat_shape``);
- ``read_stream``: stream the completion, handing the text so far to ``show``; ``StreamCut`` when
  the server closed the stream before any text or a finish reason (it went down or came up);
- ``final_text``: the reply's text as ``ask`` keeps it (echo stripped);
- ``usage_of``: tokens and cost from the server's usage, else estimated (``usage_estimated``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from edsl.inference_services.services.message_builder import MessageBuilder
from edsl.inference_services.services.open_ai_service import OpenAIParameterBuilder

from conversation.models.call_rules import reply_text
from conversation.models.calls import known_cost
from conversation.models.chat_shape import chat_request, chat_turns_of, kept_reply
from conversation.models.providers.labels import model_label
from conversation.models.settings import CallSettings
from conversation.text.tokens import estimate_tokens, prompt_tokens


def request_parameters(model: Any, user_prompt: str, system_prompt: str) -> dict[str, Any]:
    """The chat-completion parameters EDSL's OpenAI service sends for this call (no files, no
    response schema), built with EDSL's own builders; ``stream`` is not among them. A model
    shaped for a room's turn (``chat_shape.shaped``) sends the same chat turns and stop
    sequences as its unstreamed call."""
    turns = chat_turns_of(model)
    if turns is not None:
        params = chat_request(model, user_prompt, system_prompt, *turns)
        if params is not None:
            return params
    messages = MessageBuilder(
        model=model.model,
        user_prompt=user_prompt,
        system_prompt=system_prompt,
        omit_system_prompt_if_empty=model.omit_system_prompt_if_empty,
        supports_files_api=False,
    ).get_messages()
    parameters = model.parameters
    params = OpenAIParameterBuilder.build_params(
        model=model.model,
        messages=messages,
        **{
            name: getattr(model, name, parameters.get(name))
            for name in (
                "temperature",
                "max_tokens",
                "top_p",
                "frequency_penalty",
                "presence_penalty",
                "logprobs",
                "top_logprobs",
                "reasoning_effort",
            )
        },
    )
    return dict(model._filter_parameters_for_service(params))


class StreamCut(ConnectionResetError):
    """A stream the server ended before it sent any text or a finish reason: the connection was
    dropped (seen when a request reached llama.cpp's server as it came up after a restart). A
    reset connection, so the engine waits for the server and asks again
    (``retries.is_server_unavailable``); it is not the model's empty answer."""


async def read_stream(
    model: Any, user_prompt: str, system_prompt: str, show: Callable[[str], Awaitable[None]]
) -> dict[str, Any]:
    """Stream one chat completion; the chat completion EDSL would have stored, rebuilt."""
    params = request_parameters(model, user_prompt, system_prompt)
    client = model.async_client()
    stream = await client.chat.completions.create(
        **params, stream=True, stream_options={"include_usage": True}
    )
    parts: list[str] = []
    first: Any = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    try:
        async for chunk in stream:
            first = first or chunk
            if getattr(chunk, "usage", None) is not None:
                usage = chunk.usage.model_dump()
            for choice in chunk.choices or ():
                if choice.index != 0:
                    continue
                finish_reason = choice.finish_reason or finish_reason
                piece = choice.delta.content if choice.delta is not None else None
                if piece:
                    parts.append(piece)
                    await show("".join(parts))
    finally:
        await stream.close()  # also when cancelled or timed out: the server sees the client go
    if finish_reason is None and not parts:
        raise StreamCut(
            f"{model_label(model)} closed the stream before any text or a finish reason (a "
            "model server going down or coming up)"
        )
    return {
        "id": getattr(first, "id", None),
        "object": "chat.completion",
        "created": getattr(first, "created", None),
        "model": getattr(first, "model", None) or model.model,
        "system_fingerprint": getattr(first, "system_fingerprint", None),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(parts)},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": usage,
    }


def final_text(
    model: Any, raw: Any, settings: CallSettings | None, label: str
) -> tuple[str | None, str | None]:
    """The reply's text as ``ask`` keeps it (echo, scaffolding and made-up turns stripped) and
    what the model sent when stripping changed it; ``chat_shape.EchoOnlyReply`` when nothing is
    left, ``chat_shape.CopiedReply`` when it copies an earlier message (the engine retries
    both, then stores a pass), as for an unstreamed reply (``chat_shape.kept_reply``)."""
    raw_text = reply_text(model, raw)
    text = kept_reply(label, raw_text, settings)
    return text, (raw_text if raw_text != text else None)


def usage_of(
    model: Any, raw: dict[str, Any], system_prompt: str, user_prompt: str
) -> tuple[int | None, int | None, float | None, bool]:
    """Tokens in and out, the cost, and whether the counts are estimated (the server sent no
    usage: counted with ``text.tokens``, which errs high, and priced from those counts)."""
    if isinstance(raw.get("usage"), dict):
        spent = model.cost(raw)
        return spent.input_tokens, spent.output_tokens, known_cost(model, spent.total_cost), False
    input_tokens = prompt_tokens(system_prompt, user_prompt)
    output_tokens = estimate_tokens(raw["choices"][0]["message"]["content"])
    # The estimate errs high; the server never writes more than the output limit it was sent.
    limit = model.parameters.get("max_tokens") if isinstance(model.parameters, dict) else None
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        output_tokens = min(output_tokens, limit)
    priced = {**raw, "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens}}
    return input_tokens, output_tokens, known_cost(model, model.cost(priced).total_cost), True


__all__ = ["StreamCut", "final_text", "read_stream", "request_parameters", "usage_of"]
