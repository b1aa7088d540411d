"""End to end with a real (weak) model: SmolLM2-135M-Instruct on llama.cpp's server.

What must hold even with a 135M model: the output per turn is bounded by the room's limit (the
server is told ``max_tokens``), every prompt fits the window minus that limit (and the project's
token estimate is never below the server's own count), nothing fails, and an analysis stores an
answer or a recorded failure for every room. What the model says is not judged.
"""

from __future__ import annotations

import json
import time

import pytest
from edsl import Agent, AgentList

import storage
from conversation import Conversation, Room
from conversation.experiments import runs
from conversation.experiments.design import Condition, design
from conversation.models import ask_sync, default_model, model_spec, resolve_model
from conversation.models.settings import SERVER_CONTEXT_WINDOW
from conversation.planning.planner import RoundRobinRoomPlanner
from conversation.rooms.log import log_view
from conversation.rooms.prompt import build_turn_prompt
from conversation.text.tokens import estimate_tokens, prompt_tokens
from storage import Database
from ui.experiments import template_from_room_template
from ui.results import tables
from ui.room.templates import MUG_NEGOTIATION

pytestmark = pytest.mark.llm

LIMIT = 32  # output tokens per turn: a short chat message, quick on two busy cores
AGENTS = AgentList(
    [
        Agent(name="Buyer", traits={"role": "buyer of a coffee mug, worth $10 to you"}),
        Agent(name="Seller", traits={"role": "seller of a coffee mug that cost you $4"}),
    ]
)
MEASURED: list[dict] = []
MEASURED_RERUN: list[dict] = []


@pytest.fixture
def db(db_url: str) -> Database:
    return Database(db_url)


def check_turns(room: Room) -> None:
    """Bounded output, prompts within the window, the estimate above the server's count."""
    config = room.config
    rows = room.events()
    budget = (config.context_window or SERVER_CONTEXT_WINDOW) - config.max_output_tokens
    turns = [e for e in rows if e.kind in ("agent", "pass")]
    assert turns, "no turn was taken"
    for event in turns:
        assert event.state == "done", (event.state, event.error)
        assert event.output_tokens is not None and event.output_tokens <= config.max_output_tokens
        prompt = build_turn_prompt(
            config, log_view(config.names, rows, before_seq=event.seq), event.speaker
        )
        estimate = prompt_tokens(prompt.system_prompt, prompt.user_prompt)
        assert event.input_tokens is not None
        assert event.input_tokens <= estimate <= budget, (event.input_tokens, estimate, budget)
        MEASURED.append(
            {
                "latency": event.latency,
                "input_tokens": event.input_tokens,
                "estimate": estimate,
                "output_tokens": event.output_tokens,
            }
        )


def test_the_token_estimate_is_never_below_the_servers_count(llm_server) -> None:
    samples = [
        "You are Alice, in a group chat with Bob and the people who write there.",
        '{"seq": 2, "speaker": "Alice", "text": "Hello there, I would like 7 dollars."}',
        "1234567890 3.14159 $12.50 2026-12-01 #42 @bob_99",
        "Bonjour, je voudrais acheter cette tasse pour sept euros, s'il vous plaît.",
        "\U0001f600\U0001f600 \u2713 \u2192 \u221e \u4e2d\u6587\u5b57 \u65e5\u672c\u8a9e",
        "def f(x):\n    return {k: v for k, v in x.items() if v}\n",
        "a8f3k2j9x0q1z7w5v4b6n3m2 qzxjkvbwpf",
        "3. Seller (private to Buyer): DEAL at $7?\\nSure.",
    ]
    for text in samples:
        assert llm_server.tokenize(text) <= estimate_tokens(text), text


def test_a_library_conversation(smollm2) -> None:
    model = resolve_model({**smollm2, "parameters": {"max_tokens": LIMIT}})
    conversation = Conversation(AGENTS, max_turns=2, default_model=model)
    conversation.converse(max_retries=1)
    assert [r["speaker"] for r in conversation.transcript] == ["Buyer", "Seller"]
    assert all(r["text"].strip() for r in conversation.transcript)
    restored = Conversation.from_dict(json.loads(json.dumps(conversation.to_dict())))
    assert restored.default_model.base_url == smollm2["base_url"]


def test_a_durable_room_with_the_seed_planner(db, smollm2) -> None:
    room = Room.create(
        db,
        name="mug",
        agents=AGENTS,
        planner=RoundRobinRoomPlanner(max_rounds=1),
        model=smollm2,
        max_output_tokens=LIMIT,
    )
    room.post("The seller asks $8 for the mug. Buyer, what do you say?")
    room.run()
    assert room.status == "settled", room.stop_reason
    check_turns(room)


@pytest.mark.timeout(900)  # 12 model calls on two shared cores
def test_a_mug_experiment_and_its_deal_analysis(db, smollm2) -> None:
    template = template_from_room_template(MUG_NEGOTIATION, model=smollm2)
    template["termination"] = {
        "kind": "any",
        "parts": [
            {"kind": "text_mention", "text": "DEAL"},
            {"kind": "max_turns", "max_turns": 1},
        ],
    }
    template["max_output_tokens"] = LIMIT
    conditions = [Condition(label, traits) for label, traits in MUG_NEGOTIATION.conditions.items()]
    experiment_id = runs.create(db, "mugs", design(template, conditions, replicates=2))
    rooms = storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    assert len(rooms) == 6
    for row in rooms:
        room = Room(db, int(row.id or 0))
        room.run()
        assert room.status in ("settled", "terminated"), room.stop_reason
        check_turns(room)
    room_ids = [int(r.id or 0) for r in rooms]
    check_rerun_from_cache(db, experiment_id)
    question = {"type": "yes_no", "name": "answer", "text": "Was a deal reached?"}
    analysis_id = tables.run_analysis(
        db,
        question,
        room_ids,
        model={**smollm2, "parameters": {"max_tokens": 8}},
        experiment_id=experiment_id,
    )
    answers = {a.room_id: a for a in storage.answers(db, analysis_id)}
    assert sorted(answers) == sorted(room_ids)  # every room: an answer or its failure
    for answer in answers.values():
        if answer.error is None:
            assert answer.answer in ("Yes", "No")
        else:
            assert answer.answer is None and answer.error["message"]
    status = storage.get_analysis(db, analysis_id).status
    assert status == ("failed" if tables.failed_answers(db, analysis_id) else "done")


def transcripts(db: Database, experiment_id: int) -> dict[tuple[str, int], list[tuple]]:
    return {
        (row.condition, row.replicate): [
            (e.seq, e.kind, e.speaker, e.content) for e in storage.events(db, int(row.id or 0))
        ]
        for row in storage.list_rooms(db, experiment_id=experiment_id, limit=None)
    }


def model_turns(db: Database, experiment_id: int) -> list:
    """The agents' turns (replies and passes) of every room of the experiment."""
    return [
        e
        for row in storage.list_rooms(db, experiment_id=experiment_id, limit=None)
        for e in storage.events(db, int(row.id or 0))
        if e.kind in ("agent", "pass")
    ]


def check_rerun_from_cache(db: Database, experiment_id: int) -> None:
    """'Re-run from cache' with the real model: every transcript exactly as it was, every turn
    a cache hit, no tokens spent, in a fraction of the original's time."""
    original = transcripts(db, experiment_id)
    first_latency = sum(e.latency or 0.0 for e in model_turns(db, experiment_id))
    again = runs.rerun_experiment(db, experiment_id)
    started = time.perf_counter()
    for row in storage.list_rooms(db, experiment_id=again, limit=None):
        Room(db, int(row.id or 0)).run()
    elapsed = time.perf_counter() - started
    assert transcripts(db, again) == original
    turns = model_turns(db, again)
    assert turns and all(e.data["cache_hit"] is True for e in turns)
    assert sum((e.input_tokens or 0) + (e.output_tokens or 0) for e in turns) == 0
    MEASURED_RERUN.append({"turns": len(turns), "first": first_latency, "rerun": elapsed})


def test_the_readme_settings_pick_the_server(monkeypatch, llm_server) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("ROOMS_MODEL", "openai_compatible/smollm2")
    model = default_model()
    spec = model_spec(model)
    assert spec["service"] == "openai_compatible" and spec["base_url"] == llm_server.base_url
    reply = ask_sync(
        resolve_model({**spec, "parameters": {**spec["parameters"], "max_tokens": 8}}),
        user_prompt="Say hello.",
        system_prompt="You are brief.",
    )
    # The server held the reply to 8 tokens (unbounded, it would run for minutes, until its
    # context is full: the suite's timeout would end it).
    assert reply.text and reply.output_tokens is not None and reply.output_tokens <= 8


def test_report_measurements() -> None:
    """Not a check: prints what the turns above measured (run with -s to see it)."""
    if not MEASURED:
        pytest.skip("no llm turns were measured")
    latencies = sorted(m["latency"] for m in MEASURED)
    ratio = max(m["estimate"] / m["input_tokens"] for m in MEASURED if m["input_tokens"])
    print(
        f"\nllm turns: {len(MEASURED)}, latency median {latencies[len(latencies) // 2]:.1f} s, "
        f"max {latencies[-1]:.1f} s; output tokens max {max(m['output_tokens'] for m in MEASURED)}"
        f"; prompt tokens max {max(m['input_tokens'] for m in MEASURED)}; "
        f"estimate/actual max {ratio:.2f}"
    )
    for rerun in MEASURED_RERUN:
        print(
            f"re-run from cache: {rerun['turns']} turns identical, model time "
            f"{rerun['first']:.1f} s first, re-run {rerun['rerun']:.2f} s in all"
        )


def test_the_echo_rate_benchmark_runs_against_the_real_server(smollm2) -> None:
    """``benchmarks/echo_rate.py`` on one short room: it still runs against the room's current
    prompt path (a variable the prompt gained once broke it unnoticed) and counts sensibly."""
    import asyncio
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "echo_rate.py"
    spec = importlib.util.spec_from_file_location("echo_rate", path)
    assert spec is not None and spec.loader is not None
    echo_rate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(echo_rate)
    result = asyncio.run(
        echo_rate.measure(smollm2["base_url"], rooms=1, turns=2, verbose=False, max_tokens=16)
    )
    assert result["replies"] == 2 and result["timeouts"] == 0
    for problem in ("scaffolding", "made_up_turn"):
        assert 0 <= result[f"stored_{problem}_rate"] <= result[f"raw_{problem}_rate"] <= 1
    assert result["output_tokens_max"] <= 16
