"""Echo rate: how often a real small chat model copies the transcript's structure into its reply.

    python benchmarks/echo_rate.py [--rooms 3] [--turns 8] [--max-tokens 64] [--base-url URL]

What it does (SmolLM2-135M-Instruct on llama.cpp's server: started here from the GGUF that
``.ci/install-llm`` fetches, unless ``--base-url`` names a running one):
1. for each transcript shape, ``before`` (one JSON record per message, the prompt this project
   used until now) and ``after`` (``conversation.text.transcript``: a header line per message and
   its text quoted with ``| ``, the current room prompt), runs ``--rooms`` two-agent mug
   negotiations of ``--turns`` turns through ``conversation.models.ask`` with the same personas,
   opener and output limit;
2. counts a reply as an echo when it copies transcript structure (``transcript.echoes``: a JSON
   message record, a ``[seq N] Name:`` header, quoted ``| `` lines, or a line opening with a
   speaker's ``Name:`` label), on the raw reply, before any stripping;
3. prints per shape: the echo rate, the share of replies still echoing after ``strip_echo`` (what a
   room stores), the median and max latency and output tokens per turn, and the largest prompt.

The model is sampled at temperature 0.5 with a fixed seed per request, so rates move a little
between runs; compare shapes within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conversation.dialogue.prompts import persona  # noqa: E402
from conversation.models import ask, resolve_model  # noqa: E402
from conversation.models.settings import CallSettings  # noqa: E402
from conversation.rooms.config import ROOM_PROMPT_VARIABLES  # noqa: E402
from conversation.rooms.prompt import DEFAULT_ROOM_PROMPT  # noqa: E402
from conversation.text.safety import SafeTemplate  # noqa: E402
from conversation.text.tokens import prompt_tokens  # noqa: E402
from conversation.text.transcript import (  # noqa: E402
    echoes,
    render_lines,
    render_record,
    strip_echo,
)

# The prompt and transcript this project used before (kept here to measure against).
BEFORE_PROMPT = """You are {{ speaker_name }}, in a group chat with {{ agent_names | join(", ") }} and the people who write there.
The conversation so far: {{ conversation }}
{% if max_turns %}This is turn {{ current_turn + 1 }} of {{ max_turns }} ({{ turns_left }} left, counting this one).
{% endif %}{% if feedback %}{{ feedback }}
{% endif %}Write your next message as {{ speaker_name }}. To hand over to someone, mention them as @name. If you have nothing to add, reply with the single word PASS."""
BEFORE_HEADER = "(one JSON record per message, in order; only the speaker field says who spoke)"

AGENTS = {
    "Buyer": {"role": "You want to buy a mug. It is worth $10 to you; pay as little as you can."},
    "Seller": {"role": "You sell a mug that cost you $4; get as much as you can for it."},
}
OPENER = "Please negotiate the price of the mug. Say DEAL when you agree."


def _render(shape: str, messages: list[tuple[str, str]]) -> str:
    records = [{"seq": i + 1, "speaker": s, "text": t} for i, (s, t) in enumerate(messages)]
    if shape == "before":
        lines = [json.dumps(r, ensure_ascii=False, separators=(", ", ": ")) for r in records]
        return "\n".join([BEFORE_HEADER, *lines])
    return render_lines([render_record(r) for r in records])


async def run_shape(
    shape: str, model: Any, rooms: int, turns: int, limit: int, verbose: bool = False
) -> dict[str, Any]:
    text = BEFORE_PROMPT if shape == "before" else DEFAULT_ROOM_PROMPT
    template = SafeTemplate(text, allowed=ROOM_PROMPT_VARIABLES, field="prompt_template")
    names = list(AGENTS)
    raw_echo = stored_echo = 0
    latencies: list[float] = []
    outputs: list[int] = []
    largest = 0
    samples: list[str] = []
    for room in range(rooms):
        messages: list[tuple[str, str]] = [("user", OPENER)]
        for turn in range(turns):
            speaker = names[turn % 2]
            system = persona(speaker, AGENTS[speaker], None)
            user = template.render(
                {
                    "speaker_name": speaker,
                    "conversation": _render(shape, messages),
                    "agent_names": names,
                    "current_turn": turn,
                    "max_turns": turns,
                    "turns_left": turns - turn,
                    "feedback": None,
                    "activity_opener": OPENER,
                    "addressee": None,
                }
            ).strip()
            largest = max(largest, prompt_tokens(system, user))
            started = time.perf_counter()
            reply = await ask(
                model,
                user_prompt=user,
                system_prompt=system,
                iteration=room,
                settings=CallSettings(max_output_tokens=limit, timeout=300),
            )
            latencies.append(time.perf_counter() - started)
            outputs.append(reply.output_tokens or 0)
            raw = str(reply.raw["choices"][0]["message"]["content"] or "")
            if verbose:
                print(f"{shape} {room}.{turn} {speaker}: {raw[:150]!r}", file=sys.stderr)
            if echoes(raw, [*names, "user"]):
                raw_echo += 1
                if len(samples) < 3:
                    samples.append(raw[:160])
            kept = strip_echo(raw, [speaker], [*names, "user"]) if shape == "after" else raw.strip()
            if echoes(kept, [*names, "user"]):
                stored_echo += 1
            messages.append((speaker, kept or "PASS"))
    count = rooms * turns
    return {
        "shape": shape,
        "replies": count,
        "echo_rate": raw_echo / count,
        "stored_echo_rate": stored_echo / count,
        "latency_median_s": statistics.median(latencies),
        "latency_max_s": max(latencies),
        "output_tokens_median": statistics.median(outputs),
        "output_tokens_max": max(outputs),
        "largest_prompt_estimate": largest,
        "examples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rooms", type=int, default=3)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--shapes", default="before,after")
    parser.add_argument("--verbose", action="store_true", help="print every raw reply")
    args = parser.parse_args()

    server = None
    base_url = args.base_url
    if base_url is None:
        sys.path.insert(0, str(ROOT / "tests" / "support"))
        from llm_server import LlamaServer, find_gguf, missing_reason

        reason = missing_reason()
        if reason:
            raise SystemExit(reason)
        gguf = find_gguf()
        assert gguf is not None
        server = LlamaServer.start(gguf)
        base_url = server.base_url
    try:
        model = resolve_model(
            {"service": "openai_compatible", "model": "smollm2", "base_url": base_url}
        )
        for shape in args.shapes.split(","):
            result = asyncio.run(
                run_shape(shape, model, args.rooms, args.turns, args.max_tokens, args.verbose)
            )
            print(json.dumps(result, indent=2, ensure_ascii=False))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
