"""A room's streamed turn on a real (weak) model: SmolLM2-135M-Instruct on llama.cpp's server.

The engine streams the turn (the room's default): its partial draft is in storage while the
reply grows, the reply is stored in the model cache under ``ask``'s key, and a twin room (same
config, same seed, same message: the same prompts) is answered from that cache, identical and at
once. What the model says is not judged. Measures are printed (``-s``).
"""

from __future__ import annotations

import threading
import time

import pytest

import storage
from conversation import Room

pytestmark = pytest.mark.llm


def twin(db: storage.Database, smollm2: dict, name: str) -> Room:
    room = Room.create(
        db,
        name=name,
        agents=[{"name": "Ann"}, {"name": "Bob"}],
        model=smollm2,
        seed=11,
        max_output_tokens=32,
        request_timeout=120,
    )
    # addressed to nobody by name ("Bob says: ..." to a room with a Bob invites a PASS)
    room.post("A customer asks: would you sell this coffee mug for $8?")
    return room


@pytest.mark.timeout(900)  # a shared machine under load makes a 135M model slow
def test_a_streamed_room_turn_is_drafted_cached_and_rerun_identically(smollm2, db) -> None:
    room = twin(db, smollm2, "first")
    drafts: list[str] = []
    taken: list = []
    thread = threading.Thread(target=lambda: taken.extend(room.run(max_turns=1)))
    started = time.perf_counter()
    thread.start()
    while thread.is_alive():
        draft = storage.room_draft(db, room.id)
        if draft is not None and (not drafts or drafts[-1] != draft.text):
            drafts.append(draft.text)
        time.sleep(0.02)
    first_s = time.perf_counter() - started
    [turn] = taken
    print(f"\nSTREAMED room turn in {first_s:.2f}s, {len(drafts)} drafts seen: {turn.result!r}")
    assert turn.state == "done" and drafts  # streamed: partial drafts were in storage
    stored = storage.get_event(db, turn.id)
    if stored.kind != "pass":  # a 135M model may say PASS (seen once in CI): nothing to check
        assert turn.result and all(turn.result.startswith(d.strip()[:20]) for d in drafts)
    assert storage.room_draft(db, room.id) is None
    assert stored.data.get("cache_hit") is False
    assert stored.data.get("usage_estimated") is True  # llama.cpp sends no usage in a stream
    assert stored.output_tokens and stored.input_tokens
    assert storage.models.cache_size(db) >= 1  # the answer is in the model cache

    again = twin(db, smollm2, "second")
    started = time.perf_counter()
    [rerun] = again.run(max_turns=1)
    rerun_s = time.perf_counter() - started
    print(f"RERUN from the cache in {rerun_s:.3f}s")
    assert rerun.result == turn.result
    assert storage.get_event(db, rerun.id).data.get("cache_hit") is True
    assert rerun_s < 2.0
