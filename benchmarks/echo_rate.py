"""Echo rate: what a real small chat model leaves in a room's stored messages, through the app's own
rooms: copies of an earlier message, made-up turns of other speakers, and the prompt's scaffolding.

    python benchmarks/echo_rate.py [--replies 40] [--max-tokens N] [--base-url URL] [--verbose]
        [--keep FOLDER] [--first-room N]
    python benchmarks/echo_rate.py --count FOLDER [--verbose]   # count a kept run again

What it does (SmolLM2-135M-Instruct on llama.cpp's server: started here from the GGUF that
``.ci/install-llm`` fetches, unless ``--base-url`` names a running one):
1. runs mug negotiations (the app's template: a buyer and a seller, the room's default prompt,
   streaming on, the model cache on, round robin, ending on DEAL or after 8 turns; each room its
   own seed) as the app runs them: ``Room.create`` and ``Room.run`` on a temporary SQLite
   database, the same engine, retries, stripping and copy check as the in-app runner and the
   worker, until at least ``--replies`` agent turns are stored;
2. counts every agent turn as stored, read through the typed log (``vocabulary.log``):
   messages, passes (and why the engine passed: copies, echoes), failed turns, turns that took
   more than one try (``retried``); and among the messages, each one that
   - copies an earlier message of its room word for word (``text.copies``: at least
     ``MIN_WORDS`` words, case and punctuation ignored; shorter repeats such as "DEAL" are
     counted apart, as ``short_repeats``); one that holds an earlier message of
     ``NEAR_MIN_WORDS`` words or more with more around it is counted apart (``holds_a_copy``:
     no copy to the engine, reported, no target),
   - keeps a made-up turn of another member or the prompt's scaffolding
     (``text.scaffolding.reply_problems``, what the stripper uses: ``made_up_turns``), and,
     counted with this script's own wider test so that a form the stripper misses is not
     zero by construction, a line opening another member's turn in any common form
     (``loose_made_up_turns``: ``[Seller]:``, ``**The seller**:``, ``Seller's response:``,
     ``Seller - ...``, ``The seller says: "..."``),
   - was flagged a near copy (``data["near_copy"]``);
   and the same for the raw replies the model sent, where stripping changed them;
3. prints the counts and rates (the targets: stored copies and kept made-up turns, by either
   test, each <= 2%), the latency and a few raw examples.

``--keep FOLDER`` keeps the rooms' database; ``--count FOLDER`` counts it again (a run cut short
too: every finished room) with the present counting, running nothing.

The server samples with a seed that advances with each request, so counts move a little between
runs; compare code versions by running this on each (the numbers in docs/benchmarks.md say which
commit).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import storage  # noqa: E402
from conversation import Room  # noqa: E402
from conversation.text.copies import MIN_WORDS, NEAR_MIN_WORDS, copy_words  # noqa: E402
from conversation.text.scaffolding import reply_problems  # noqa: E402
from storage import Database  # noqa: E402
from vocabulary.log import HumanMessage, entries_of  # noqa: E402

AGENTS = [
    {
        "name": "Buyer",
        "traits": {
            "role": "buyer of a coffee mug",
            "private_value": "the mug is worth $10 to you; never reveal this",
            "rule": "say DEAL when you accept a price",
        },
    },
    {
        "name": "Seller",
        "traits": {
            "role": "seller of a coffee mug",
            "private_cost": "the mug cost you $4; never reveal this",
            "rule": "say DEAL when you accept a price",
        },
    },
]
TERMINATION = {
    "kind": "any",
    "parts": [
        {"kind": "text_mention", "text": "DEAL"},
        {"kind": "max_turns", "max_turns": 8},
    ],
}
PLANNER = {"kind": "round_robin", "transitions": None}
OPENER = "The seller asks $8 for the mug. Buyer, what do you say?"
COUNTS = (
    "messages",
    "passes",
    "failed",
    "retried",
    "copies",
    "short_repeats",
    "holds_a_copy",
    "made_up_turns",
    "loose_made_up_turns",
    "scaffolding",
    "near_copies",
    "raw_made_up_turns",
    "raw_scaffolding",
    "passes_for_copies",
    "passes_for_echoes",
)
#: Verbs that open a made-up turn told as a story ("The seller says: ...", "Buyer replied, \"...").
_SAYS = r"(?:says|said|replies|replied|answers|answered|writes|wrote|responds|responded)"


def loose_turn_opener(names: list[str]) -> re.Pattern[str]:
    """The benchmark's own, wider test for a line that opens another member's turn: written
    apart from ``text.scaffolding`` (which the stripper uses), so a form the stripper misses is
    counted instead of passing by construction. After list, number, quote or markdown
    decoration, an optional article, one of ``names`` (bracketed, bold, or possessive and a
    noun: "Seller's response"), then a colon, a parenthesis and a colon, a dash, or a speech verb and a colon or quote."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(
        rf"^[\s>*_#\-\[<(\"']*(?:\d+[.)]\s*)?(?:(?:the|a|an)\s+)?(?:{alternatives})"
        rf"(?:['\u2019]s\s+\w+)?[\]>)*_\"']*(?:\s*\([^()\n]*\))?\s*"
        rf"(?::|\s[-\u2013\u2014]\s|\s{_SAYS}\s*[:,]?\s*[\"\u201c'])",
        re.IGNORECASE,
    )


def holds_a_copy(words: tuple[str, ...], earlier: list[tuple[str, ...]]) -> bool:
    """True when ``words`` contain an earlier message of at least ``NEAR_MIN_WORDS`` words, word
    for word, with more around it (not a copy to the engine: reported, not a target)."""
    for before in earlier:
        size = len(before)
        if size < NEAR_MIN_WORDS or size >= len(words):
            continue
        if any(words[i : i + size] == before for i in range(len(words) - size + 1)):
            return True
    return False


def tally_room(db: Database, room_id: int, tally: dict[str, Any], verbose: bool) -> None:
    """Count one finished room's agent turns into ``tally``, read through the typed log
    (``vocabulary.log``)."""
    roster = [a["name"] for a in AGENTS] + ["user"]
    earlier: list[tuple[str, ...]] = []
    for entry in entries_of(storage.events(db, room_id)):
        if isinstance(entry, HumanMessage):
            earlier.append(copy_words(entry.content))
            continue
        if not entry.is_turn or entry.is_open:
            continue
        data, row = entry.data, entry.row
        if row.latency is not None:
            tally["latency"].append(row.latency)
        tally["retried"] += (row.attempts or 0) > 1
        if entry.failed:
            tally["failed"] += 1
            continue
        if entry.passed:
            tally["passes"] += 1
            reason = str(data.get("pass_reason") or "")
            tally["passes_for_copies"] += "copied an earlier message" in reason
            tally["passes_for_echoes"] += "instructions" in reason
            if verbose:
                print(
                    f"room {room_id} #{entry.seq} {entry.speaker} PASS: "
                    f"{reason or repr(str(data.get('raw_reply') or '')[:120])}",
                    file=sys.stderr,
                )
            continue
        tally["messages"] += 1
        text, raw = entry.content, str(data.get("raw_reply") or entry.content)
        words = copy_words(text)
        if words in earlier:
            key = "copies" if len(words) >= MIN_WORDS else "short_repeats"
            tally[key] += 1
            if len(tally["examples"]) < 8:
                tally["examples"].append(f"{key[:-1]}: {text[:160]}")
        elif holds_a_copy(words, earlier):
            tally["holds_a_copy"] += 1
        earlier.append(words)
        others = loose_turn_opener([n for n in roster if n != entry.speaker])
        problems = reply_problems(text, [entry.speaker], roster)
        tally["made_up_turns"] += "made_up_turn" in problems
        loose = any(others.match(line) for line in text.splitlines())
        tally["loose_made_up_turns"] += loose
        tally["scaffolding"] += "scaffolding" in problems
        raw_problems = reply_problems(raw, [entry.speaker], roster)
        tally["raw_made_up_turns"] += "made_up_turn" in raw_problems
        tally["raw_scaffolding"] += "scaffolding" in raw_problems
        if loose and len(tally["examples"]) < 8:
            tally["examples"].append(f"made-up turn kept: {text[:160]}")
        tally["near_copies"] += "near_copy" in data
        if verbose:
            print(f"room {room_id} #{entry.seq} {entry.speaker}: {raw[:300]!r}", file=sys.stderr)
            if raw != text:
                print(f"    stored: {text[:300]!r}", file=sys.stderr)


def measure(
    base_url: str,
    replies: int,
    verbose: bool = False,
    max_tokens: int | None = None,
    folder: Path | None = None,
    first_room: int = 1,
) -> dict[str, Any]:
    """Run rooms until ``replies`` agent turns are stored; the counts (see the module doc).
    ``first_room``: the number (and seed) of the first room, to go on from a run cut short."""
    spec = {"service": "openai_compatible", "model": "smollm2", "base_url": base_url}
    tally = new_tally()
    with tempfile.TemporaryDirectory() as scratch:
        db = Database(f"sqlite:///{Path(folder or scratch) / 'echo_rate.db'}")
        rooms = turns = 0
        started = time.perf_counter()
        while turns < replies:
            room = Room.create(
                db,
                name=f"mug {first_room + rooms}",
                agents=AGENTS,
                model=spec,
                planner=PLANNER,
                termination=TERMINATION,
                seed=999 + first_room + rooms,
                request_timeout=900,  # a loaded machine is slow; a timeout would fail the turn
                **({"max_output_tokens": max_tokens} if max_tokens else {}),
            )
            room.post(OPENER)
            taken = room.run()
            rooms += 1
            turns += len(taken)
            tally_room(db, room.id, tally, verbose)
        elapsed = time.perf_counter() - started
        db.dispose()
    return summary(tally, rooms, elapsed)


def new_tally() -> dict[str, Any]:
    """Zero counts, no latencies, no examples."""
    return {"latency": [], "examples": [], **{k: 0 for k in COUNTS}}


def summary(tally: dict[str, Any], rooms: int, elapsed: float | None) -> dict[str, Any]:
    """The printed result of a tally (counts, the target rates, latency, examples)."""
    messages = max(tally["messages"], 1)
    return {
        "rooms": rooms,
        "agent_turns": tally["messages"] + tally["passes"] + tally["failed"],
        **{k: tally[k] for k in COUNTS},
        "copies_rate": round(tally["copies"] / messages, 3),
        "made_up_turns_rate": round(tally["made_up_turns"] / messages, 3),
        "loose_made_up_turns_rate": round(tally["loose_made_up_turns"] / messages, 3),
        "latency_median_s": round(statistics.median(tally["latency"] or [0.0]), 2),
        "latency_max_s": round(max(tally["latency"] or [0.0]), 2),
        "seconds": None if elapsed is None else round(elapsed, 1),
        "examples": tally["examples"],
    }


def count_kept(folder: Path, verbose: bool = False) -> dict[str, Any]:
    """The counts of every room in a database kept by ``--keep`` (counted again, with this
    version of the counting; nothing is run)."""
    db = Database(f"sqlite:///{folder / 'echo_rate.db'}")
    try:
        tally = new_tally()
        ids = storage.room_ids(db)
        for room_id in ids:
            tally_room(db, room_id, tally, verbose)
        return summary(tally, len(ids), None)
    finally:
        db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replies", type=int, default=40, help="at least this many agent turns")
    parser.add_argument("--base-url", default=None)
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="the output limit (default: the room's)"
    )
    parser.add_argument("--verbose", action="store_true", help="print every raw reply")
    parser.add_argument(
        "--keep", type=Path, default=None, help="keep the rooms' database in this folder"
    )
    parser.add_argument(
        "--first-room", type=int, default=1, help="start at this room (and its seed)"
    )
    parser.add_argument(
        "--count", type=Path, default=None, help="count a --keep folder again; run nothing"
    )
    args = parser.parse_args()
    if args.count is not None:
        print(json.dumps(count_kept(args.count, args.verbose), indent=2, ensure_ascii=False))
        return

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
        result = measure(
            base_url, args.replies, args.verbose, args.max_tokens, args.keep, args.first_room
        )
        print(json.dumps(result, indent=2, ensure_ascii=False))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
