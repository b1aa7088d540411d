"""A speaking turn whose reply streams: the partial draft written as it grows, a stop honoured.

``ask_streamed(call)`` asks ``models.ask_streaming`` (the same request, limits, timeout and cache
as ``ask``) and, while the reply grows, writes the text so far as the running turn's partial draft
(``storage.start_draft`` / ``storage.write_draft``: never a message, so never in a prompt or an
export), throttled to the room's ``partial_writes_per_second`` (the first text is written at once,
then at most one write per interval). Each write, and a check at the same rate while no text
arrives, also reads whether a person asked to stop the draft (``storage.request_stop``, written by
the app from another process): the call is then cancelled (its request closed, no more tokens
read) and the reply comes back with ``stopped_by`` and the draft so far, for the handler's
commit ("stopped while drafting", denied by that person). A write that no longer applies (the
lease was lost, a person stopped the turn) cancels the call too: the turn is no longer ours.

Which calls stream (``streams``): the room's ``streaming`` setting is on, the turn's model
streams (``models.supports_streaming``) and the call has the database to write to. The offline
model streams only when it is given a rate (``words_per_second``, or
``ROOMS_OFFLINE_WORDS_PER_SECOND``): by default it answers at once, as tests and benchmarks of
everything else expect.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import storage
from conversation import models
from conversation.exceptions import ModelCallError
from conversation.models.offline import OfflineModel
from conversation.rooms.engine.records import Call, Reply
from conversation.rooms.prompt import STOPPED_WHILE_DRAFTING
from conversation.text.tokens import estimate_tokens, prompt_tokens
from conversation.vocabulary import TurnState
from settings import SETTINGS


class TurnNoLongerOurs(ModelCallError):
    """A partial-draft write was refused: the lease was lost or the turn stopped meanwhile."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="turn_no_longer_ours")


def streams(call: Call) -> bool:
    """Whether ``call``'s reply streams (see the module docstring)."""
    if call.db is None or not call.config.streaming:
        return False
    model = call.model
    if isinstance(model, OfflineModel):
        return model.words_per_second is not None or SETTINGS.offline_words_per_second is not None
    return models.supports_streaming(model)


@dataclass
class _Draft:
    """What the writer knows: the text so far, what was written, and why it stopped."""

    text: str = ""
    written: str = ""
    writes: int = 0
    stop_by: str | None = None
    lost: bool = False
    #: The call is over: the writer ends at its next step even if its cancellation was lost.
    finished: bool = False


async def ask_streamed(call: Call) -> Reply:
    """``call``'s reply, streamed with its partial draft written (see the module docstring)."""
    db, event_id, token = call.db, call.turn.id, call.held.token
    assert db is not None and event_id is not None
    draft = _Draft()
    waiting = storage.stop_requested(db, event_id)  # asked while no process streamed it
    if waiting is not None:
        return Reply(_stopped_reply(call, "", 0.0), 0, stopped_by=waiting)
    changed = asyncio.Event()
    cancel = asyncio.Event()

    def on_text(text: str) -> None:
        draft.text = text
        changed.set()

    writer = asyncio.ensure_future(
        _write_while_streaming(db, event_id, token, call, draft, changed, cancel)
    )
    started = time.perf_counter()
    try:
        reply = await models.ask_streaming(
            call.model,
            user_prompt=call.prompt.user_prompt,
            system_prompt=call.prompt.system_prompt,
            cache=call.cache,
            iteration=call.iteration,
            settings=call.settings,
            on_text=on_text,
            cancel=cancel,
        )
    except models.ModelCallCancelled:
        if draft.lost or draft.stop_by is None:
            raise TurnNoLongerOurs(
                f"turn {event_id} is no longer this worker's (lease lost or the turn was "
                "stopped) while its reply streamed"
            ) from None
        stopped = _stopped_reply(call, draft.text, time.perf_counter() - started)
        return Reply(stopped, 0, stopped_by=draft.stop_by)
    finally:
        draft.finished = True
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)
    return Reply(reply, 0)


async def _write_while_streaming(
    db: storage.Database,
    event_id: int,
    token: int,
    call: Call,
    draft: _Draft,
    changed: asyncio.Event,
    cancel: asyncio.Event,
) -> None:
    """Write the draft as it grows, at most ``partial_writes_per_second``; a check at the same
    rate while nothing new arrives; set ``cancel`` on a stop request or a refused write. The
    writes run in a thread: a busy database never holds up the reading of the reply."""
    interval = 1.0 / call.config.partial_writes_per_second
    first = True
    last = -interval
    while not draft.finished:
        wait = last + interval - time.perf_counter()
        if wait > 0:
            await asyncio.sleep(wait)
        if draft.text == draft.written:
            # asyncio.wait, not wait_for: Python 3.11's wait_for can swallow a cancellation that
            # arrives with its timeout, and the call's end would then wait for this task forever.
            waiter = asyncio.ensure_future(changed.wait())
            try:
                await asyncio.wait({waiter}, timeout=interval)
            finally:
                waiter.cancel()
        if draft.finished:
            return
        changed.clear()
        text = draft.text if draft.text != draft.written else None
        last = time.perf_counter()
        if first:  # not counted against the rate: the first text is written at once
            result = await asyncio.to_thread(storage.start_draft, db, event_id, token, text or "")
            first = False
            last = -interval if text is None else last
        else:
            result = await asyncio.to_thread(storage.write_draft, db, event_id, token, text)
        if text is not None:
            draft.written = text
            draft.writes += 1
        if not result.applied or result.stop_by is not None:
            draft.lost = not result.applied
            draft.stop_by = result.stop_by
            cancel.set()
            return


def _stopped_reply(call: Call, text: str, latency: float) -> models.ModelReply:
    """The reply of a call stopped mid-stream: the draft so far, its usage estimated (what the
    server counted is unknown: the stream was closed before its usage came)."""
    prompt = call.prompt
    return models.ModelReply(
        text=text,
        model_name=models.model_label(call.model),
        input_tokens=prompt_tokens(prompt.system_prompt, prompt.user_prompt),
        output_tokens=estimate_tokens(text) if text else 0,
        cost=None,
        cache_used=False,
        cache_key=None,
        latency=latency,
        raw=None,
        usage_estimated=True,
    )


def stopped_commit(call: Call, outcome: Reply, base: dict[str, Any]) -> storage.TurnCommit:
    """The commit of a reply stopped while it streamed: a denial of the draft so far, by the
    person who stopped it, with the reason ``STOPPED_WHILE_DRAFTING``. The turn stays
    ``running`` (the agent is told why and tries again, as after any denial) or, past the room's
    ``max_denials``, ends ``stopped`` (it counts as a pass)."""
    denials = [
        *(call.turn.data or {}).get("denials", []),
        {"draft": outcome.reply.text, "reason": STOPPED_WHILE_DRAFTING, "by": outcome.stopped_by},
    ]
    over = len(denials) > call.config.max_denials
    return storage.TurnCommit(
        **base,
        state=TurnState.STOPPED if over else TurnState.RUNNING,
        content="",
        data={"denials": denials},
    )


__all__ = [
    "STOPPED_WHILE_DRAFTING",
    "TurnNoLongerOurs",
    "ask_streamed",
    "stopped_commit",
    "streams",
]
