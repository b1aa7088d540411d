"""Echo rate: how often a real small chat model copies the prompt's scaffolding into its reply, or
writes made-up turns of other speakers, through the rooms' own prompt path.

    python benchmarks/echo_rate.py [--rooms 6] [--turns 8] [--max-tokens N] [--base-url URL]

What it does (SmolLM2-135M-Instruct on llama.cpp's server: started here from the GGUF that
``.ci/install-llm`` fetches, unless ``--base-url`` names a running one):
1. runs ``--rooms`` two-agent mug negotiations (a buyer and a seller; the room's seed differs
   per room) of ``--turns`` turns each, every turn asked exactly as a room asks it: the prompt
   of ``rooms.prompt.build_turn_prompt`` (whatever shape the code under test builds), the room's
   call settings (``RoomConfig.call_settings``: the default output limit, the speaker names),
   and ``models.ask``;
2. classifies each reply with ``text.scaffolding.reply_problems``: ``scaffolding`` (a phrase of
   the prompt's instructions) and ``made_up_turn`` (a line opening another member's turn), on the
   raw reply (what the server sent) and on the stored one (``ModelReply.text``, what the room
   keeps); a reply left empty after stripping (``empty_response``: a room retries it) is stored
   as a pass here;
3. prints the rates, the latency and output tokens per turn, and a few raw examples.

The model samples with a fixed seed per request, so rates move a little between runs; compare
code versions by running this on each (the numbers in docs/models.md say which commit).
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

from conversation.exceptions import ModelCallError  # noqa: E402
from conversation.models import ask, resolve_model  # noqa: E402
from conversation.planning.events import RoomEvent  # noqa: E402
from conversation.rooms.config import RoomConfig  # noqa: E402
from conversation.rooms.prompt import build_turn_prompt, is_pass  # noqa: E402
from conversation.termination.state import RoomState  # noqa: E402
from conversation.text.scaffolding import reply_problems  # noqa: E402

AGENTS = [
    {
        "name": "Buyer",
        "traits": {},
        "instruction": "You want to buy a mug. It is worth $10 to you; pay as little as you can.",
    },
    {
        "name": "Seller",
        "traits": {},
        "instruction": "You sell a mug that cost you $4; get as much as you can for it.",
    },
]
OPENER = "Please negotiate the price of the mug. Say DEAL when you agree."


def _raw_text(reply_raw: Any) -> str:
    try:
        return str(reply_raw["choices"][0]["message"]["content"] or "")
    except (KeyError, IndexError, TypeError):
        return ""


async def run_room(
    config: RoomConfig, model: Any, turns: int, tally: dict[str, Any], verbose: bool
) -> None:
    names = list(config.names)
    roster = [*names, "user"]
    events = [RoomEvent("user", OPENER)]
    for turn in range(turns):
        speaker = names[turn % 2]
        view = RoomState(config.names, events, seqs=range(1, len(events) + 1))
        prompt = build_turn_prompt(config, view, speaker)
        settings = config.call_settings(speaker)
        started = time.perf_counter()
        try:
            reply = await ask(
                model,
                user_prompt=prompt.user_prompt,
                system_prompt=prompt.system_prompt,
                iteration=config.seed,
                settings=settings,
            )
            raw, stored = _raw_text(reply.raw), reply.text
            tally["output_tokens"].append(reply.output_tokens or 0)
        except ModelCallError as exc:
            if exc.code == "timeout":  # counted, and asked as a pass (a room would retry)
                tally["timeouts"] += 1
                raw = stored = ""
            elif exc.code in ("empty_response", "echo_only"):  # nothing left once stripped
                raw, stored = str(getattr(exc, "raw_text", "")), ""
                tally["emptied"] += 1
            else:
                raise
        tally["latency"].append(time.perf_counter() - started)
        for where, text in (("raw", raw), ("stored", stored)):
            for problem in reply_problems(text, [speaker], roster):
                tally[f"{where}_{problem}"] += 1
        if verbose:
            print(f"{config.seed}.{turn} {speaker}: {raw[:200]!r}", file=sys.stderr)
        if reply_problems(raw, [speaker], roster) and len(tally["examples"]) < 4:
            tally["examples"].append(raw[:200])
        passed = not stored or is_pass(stored)
        events.append(RoomEvent(speaker, "" if passed else stored, passed=passed))


async def measure(
    base_url: str, rooms: int, turns: int, verbose: bool, max_tokens: int | None = None
) -> dict[str, Any]:
    spec = {"service": "openai_compatible", "model": "smollm2", "base_url": base_url}
    model = resolve_model(spec)
    tally: dict[str, Any] = {
        "latency": [],
        "output_tokens": [],
        "examples": [],
        "emptied": 0,
        "timeouts": 0,
        **{f"{w}_{p}": 0 for w in ("raw", "stored") for p in ("scaffolding", "made_up_turn")},
    }
    config = None
    for room in range(rooms):
        config = RoomConfig.build(
            agents=AGENTS,
            model=spec,
            termination={"kind": "max_turns", "max_turns": turns},
            seed=1000 + room,
            use_cache=False,
            request_timeout=900,  # a loaded machine is slow; a timeout would count as a pass
            **({"max_output_tokens": max_tokens} if max_tokens else {}),
        )
        await run_room(config, model, turns, tally, verbose)
    count = rooms * turns
    return {
        "replies": count,
        "max_output_tokens": config.max_output_tokens if config else None,
        **{
            f"{w}_{p}_rate": round(tally[f"{w}_{p}"] / count, 3)
            for w in ("raw", "stored")
            for p in ("scaffolding", "made_up_turn")
        },
        "emptied_by_stripping": tally["emptied"],
        "timeouts": tally["timeouts"],
        "latency_median_s": round(statistics.median(tally["latency"]), 2),
        "latency_max_s": round(max(tally["latency"]), 2),
        "output_tokens_median": statistics.median(tally["output_tokens"] or [0]),
        "output_tokens_max": max(tally["output_tokens"] or [0]),
        "examples": tally["examples"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rooms", type=int, default=6)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--base-url", default=None)
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="the output limit (default: the room's)"
    )
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
        result = asyncio.run(
            measure(base_url, args.rooms, args.turns, args.verbose, args.max_tokens)
        )
        print(json.dumps(result, indent=2, ensure_ascii=False))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
