"""A turn's model call inside the cluster-wide rate limit (``conversation.models.rate_limit``):
what one turn takes from its provider's bucket (requests and estimated tokens) and what it used."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import storage
from conversation.models.rate_limit import Usage, bucket_for, within_rate
from conversation.rooms.engine.records import Call, Reply
from conversation.text.tokens import prompt_tokens

#: The output a call is assumed to produce when its settings give no output limit.
ASSUMED_OUTPUT_TOKENS = 512


async def ask_within_rate(
    db: storage.Database, call: Call, ask: Callable[[], Awaitable[Reply]]
) -> Reply:
    """``ask()`` (the turn kind's ``ask``) once the turn's provider bucket allows it."""
    if bucket_for(call.model) is None:  # no limit set: no estimate to make (every turn asks)
        return await ask()
    requests, tokens = estimate(call)

    def used(outcome: Reply) -> Usage | None:
        reply = outcome.reply
        if reply.cache_used:
            return Usage(0.0, 0.0)  # answered from the cache: nothing was sent
        if reply.input_tokens is None and reply.output_tokens is None:
            return None
        return Usage(requests, float((reply.input_tokens or 0) + (reply.output_tokens or 0)))

    return await within_rate(db, call.model, ask, requests=requests, tokens=tokens, used=used)


def estimate(call: Call) -> tuple[float, float]:
    """Requests and tokens (prompt estimate + output limit) a turn's call will take."""
    output = getattr(call.settings, "max_output_tokens", None) or ASSUMED_OUTPUT_TOKENS
    if call.drafting is not None:  # one draft per agent, then the coordinator's pick
        prompts = [prompt for _, prompt in call.drafting.prompts]
        extra = 1 if call.drafting.coordinator is not None else 0
        spent = sum(prompt_tokens(p.system_prompt, p.user_prompt) + output for p in prompts)
        return float(len(prompts) + extra), float(spent + extra * output)
    spent = prompt_tokens(call.prompt.system_prompt, call.prompt.user_prompt) + output
    return 1.0, float(spent)


__all__ = ["ask_within_rate", "estimate"]
