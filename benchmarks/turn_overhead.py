"""Engine overhead per turn, against one EDSL job per turn, and 200 conversations at once.

Prints, from one run on this machine:

1. the median wall time per turn of ``Conversation`` with an instant offline model, and of the
   baseline that runs one EDSL job per turn (what the seed's original implementation did) with the
   same model, agents and prompt; and their ratio (target: >= 100);
2. the wall time of ``ConversationList.run_async()`` and ``run(max_workers=200)`` over 200
   conversations x 10 turns with a model that waits 100 ms per call, against the ideal 1 s
   (target: within 2x).

Run: ``python benchmarks/turn_overhead.py`` (no key needed; a temporary HOME keeps EDSL's files out
of yours).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["HOME"] = tempfile.mkdtemp(prefix="bench-home-")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edsl import Agent, AgentList, Cache, QuestionFreeText, Scenario  # noqa: E402

from conversation import Conversation, ConversationList  # noqa: E402
from conversation.models import OfflineModel  # noqa: E402

ENGINE_TURNS = 300
BASELINE_TURNS = 20


def instant_reply(user_prompt: str, system_prompt: str) -> str:
    return "I see your point; go on."


def instant_model() -> OfflineModel:
    """A model that answers at once and does no work of its own, so only overhead is measured."""
    return OfflineModel(func=instant_reply)


def agent_list() -> AgentList:
    return AgentList(
        [
            Agent(name="Alice", traits={"motivation": "a curious scientist"}),
            Agent(name="Bob", traits={"motivation": "a skeptical philosopher"}),
        ]
    )


def engine_turn_times() -> list[float]:
    stamps: list[float] = []
    c = Conversation(agent_list(), max_turns=ENGINE_TURNS, default_model=instant_model())
    c.on_statement = lambda s: stamps.append(time.perf_counter())
    start = time.perf_counter()
    c.converse()
    previous = [start, *stamps[:-1]]
    return [b - a for a, b in zip(previous, stamps, strict=True)]


def baseline_turn_times() -> list[float]:
    """One EDSL job per turn: the transcript goes in as a Scenario, the job runs locally."""
    agents = agent_list()
    model = instant_model()
    question = QuestionFreeText(
        question_text="You are {{ scenario.speaker_name }}. This is the conversation so far: "
        "{{ scenario.conversation }}\nWhat do you say next?",
        question_name="dialogue",
    )
    cache = Cache()
    transcript: list[dict] = []
    times = []
    for turn in range(BASELINE_TURNS):
        agent = agents[turn % 2]
        started = time.perf_counter()
        results = (
            question.by(Scenario({"speaker_name": agent.name, "conversation": str(transcript)}))
            .by(agent)
            .by(model)
            .run(
                cache=cache,
                disable_remote_inference=True,
                disable_remote_cache=True,
                progress_bar=False,
                print_exceptions=False,
            )
        )
        text = results.select("answer.dialogue").to_list()[0]
        transcript.append({"turn": turn, "speaker": agent.name, "text": text})
        times.append(time.perf_counter() - started)
    return times


def many(turns: int = 10, rooms: int = 200) -> ConversationList:
    return ConversationList(
        [
            Conversation(
                agent_list(),
                max_turns=turns,
                default_model=OfflineModel(func=instant_reply, latency=0.1),
            )
            for _ in range(rooms)
        ]
    )


def main() -> None:
    engine_turn_times()  # warm up imports and the loop
    engine = statistics.median(engine_turn_times())
    baseline = statistics.median(baseline_turn_times())
    print(f"engine: median per turn            {engine * 1000:8.3f} ms  ({ENGINE_TURNS} turns)")
    print(f"baseline (one EDSL job per turn):  {baseline * 1000:8.3f} ms  ({BASELINE_TURNS} turns)")
    print(f"ratio baseline / engine:           {baseline / engine:8.1f} x   (target >= 100)")

    cl = many()
    started = time.perf_counter()
    asyncio.run(cl.run_async())
    wall_async = time.perf_counter() - started
    cl = many()
    started = time.perf_counter()
    cl.run(max_workers=200)
    wall_threads = time.perf_counter() - started
    ideal = 10 * 0.1
    print(
        f"200 x 10 turns, 100 ms model, run_async():          {wall_async:6.2f} s = {wall_async / ideal:4.2f} x ideal (1 s)"
    )
    print(
        f"200 x 10 turns, 100 ms model, run(max_workers=200): {wall_threads:6.2f} s = {wall_threads / ideal:4.2f} x ideal (1 s)"
    )


if __name__ == "__main__":
    main()
