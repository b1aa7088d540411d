"""The conversation API: ``ConversationList``: bounded concurrency, failures, results and serialization."""

from __future__ import annotations

import asyncio

import pytest
from edsl import Agent, AgentList

import conversation.models as models_module
from conversation import Conversation, ConversationList, ConversationValueError
from conversation.models import OfflineModel


def make(index: int, turns: int = 2, model: object = None) -> Conversation:
    return Conversation(
        AgentList([Agent(name=f"A{index}"), Agent(name=f"B{index}")]),
        max_turns=turns,
        default_model=model or OfflineModel(seed=index),
    )


class Tracker:
    """A fake ``models.ask`` that counts how many calls are in flight at once."""

    def __init__(self, delay: float = 0.02, fail_on: str | None = None) -> None:
        self.delay = delay
        self.fail_on = fail_on
        self.active = 0
        self.peak = 0
        self.speakers: list[str] = []

    async def __call__(self, model, *, user_prompt, system_prompt, cache=None, iteration=0):  # type: ignore[no-untyped-def]
        speaker = system_prompt.split(".")[0].removeprefix("You are ")
        self.speakers.append(speaker)
        if speaker == self.fail_on:
            raise KeyError(f"{speaker} exploded")
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.active -= 1
        return models_module.ModelReply(
            text=f"{speaker} speaks",
            model_name="tracker",
            input_tokens=1,
            output_tokens=1,
            cost=0.0,
            cache_used=False,
            cache_key=None,
            latency=self.delay,
            raw={},
        )


@pytest.mark.parametrize(
    ("items", "fragment"),
    [
        ([1, 2], "conversations[0] is a int"),
        ("abc", "got a str"),
        (42, "list of Conversation"),
        ((c for c in ()), "got a generator"),
        ({"a": 1}, "got a dict"),
    ],
)
def test_only_conversations_are_accepted(items: object, fragment: str) -> None:
    with pytest.raises(ConversationValueError) as caught:
        ConversationList(items)
    assert fragment in str(caught.value)


def test_the_same_conversation_twice_is_refused() -> None:
    c = make(0)
    with pytest.raises(ConversationValueError, match="appears twice"):
        ConversationList([c, c])


@pytest.mark.parametrize("bound", [0, -1, True, 2.0])
def test_bad_bounds(bound: object) -> None:
    cl = ConversationList([make(0)])
    with pytest.raises(ConversationValueError, match="max_workers"):
        cl.run(max_workers=bound)  # type: ignore[arg-type]
    with pytest.raises(ConversationValueError, match="max_concurrency"):
        asyncio.run(cl.run_async(max_concurrency=bound))  # type: ignore[arg-type]


def test_run_is_bounded_and_completes_every_conversation(monkeypatch: pytest.MonkeyPatch) -> None:
    tracker = Tracker()
    monkeypatch.setattr(models_module, "ask", tracker)
    cl = ConversationList([make(i, turns=3) for i in range(6)])
    cl.run(max_workers=2)
    assert tracker.peak == 2
    assert all(len(c.transcript) == 3 for c in cl)
    assert [c.conversation_index for c in cl] == list(range(6))


def test_run_async_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    tracker = Tracker()
    monkeypatch.setattr(models_module, "ask", tracker)
    cl = ConversationList([make(i) for i in range(5)])
    asyncio.run(cl.run_async(max_concurrency=3))
    assert tracker.peak == 3
    unbounded = Tracker()
    monkeypatch.setattr(models_module, "ask", unbounded)
    asyncio.run(ConversationList([make(i) for i in range(5)]).run_async())
    assert unbounded.peak == 5


def test_a_failure_names_the_conversation_and_cancels_what_has_not_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tracker = Tracker(fail_on="A1")
    monkeypatch.setattr(models_module, "ask", tracker)
    cl = ConversationList([make(i) for i in range(4)])
    with pytest.raises(RuntimeError, match="^Conversation 1 failed$") as caught:
        cl.run(max_workers=1)
    assert isinstance(caught.value.__cause__, KeyError)
    assert "A2" not in tracker.speakers and "A3" not in tracker.speakers
    assert len(cl[0].transcript) == 2
    assert cl[2].transcript == [] and cl[3].transcript == []


def test_empty_list_results_and_summaries() -> None:
    cl = ConversationList([])
    cl.run()
    assert len(cl.to_results()) == 0
    assert len(cl.summarize()) == 0
    assert ConversationList.from_dict(cl.to_dict()).conversations == []


def test_results_summaries_and_round_trip_keep_every_conversation() -> None:
    cl = ConversationList([make(i) for i in range(3)])
    cl.run()
    results = cl.to_results()
    assert len(results) == 6
    assert sorted(set(results.select("scenario.conversation_index").to_list())) == [0, 1, 2]
    summaries = cl.summarize()
    assert [s["conversation_index"] for s in summaries] == [0, 1, 2]
    restored = ConversationList.from_dict(cl.to_dict())
    assert len(restored) == 3
    assert [c.transcript for c in restored] == [c.transcript for c in cl]
    with pytest.raises(ConversationValueError):
        ConversationList.from_dict({"version": 5, "conversations": []})
