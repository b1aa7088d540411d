"""Streaming: first token to screen, partial-draft writes per second, and what streaming costs.

    python benchmarks/streaming.py [--samples 3] [--rate 8] [--offline]

What it does (temporary database and HOME, 127.0.0.1 only):
1. the model: SmolLM2-135M-Instruct on llama.cpp's server (``tests/support/llm_server.py``) when
   the server package and the model file are here, else the offline model streaming
   ``--rate`` words a second after a 1.5 s wait (a server's time to first token); the output says
   which;
2. starts ``streamlit run app.py`` with its runner off, so this process is the only worker, and
   opens the Room page of a streaming room in Debian's Chromium (Playwright);
3. ``--samples`` times: a message, then one turn taken here (``room.run(max_turns=1)`` in a
   thread; the model is asked once the page shows the claimed turn, and the time held before
   is left out of the turn's). The time of the model's first text (the first ``on_text`` of
   ``models.ask_streaming``) and of the first partial text in the page (a
   ``requestAnimationFrame`` poll of the draft bubble) give FIRST_TOKEN_TO_SCREEN_S; the partial
   draft writes of the turn (``storage.start_draft`` / ``write_draft`` with text), as intervals
   between its first and its last write, give WRITES_PER_TURN_S;
4. the same turn unstreamed, in the same run: a twin room with ``streaming=False`` (same model,
   same prompts, no cache), taken after the streamed one; with the server, a third twin asks the
   same prompt first, untimed, so that both timed calls find it evaluated (llama.cpp reuses the
   previous prompt's prefix). OVERHEAD_PCT is the median over samples of the streamed turn's
   time over its twin's, minus one (replies differ in length from sample to sample, so each
   streamed turn is compared with its own twin; a pair whose texts differ is said). A fourth
   twin streams with no page watching it: the line before the last gives both overheads (on a
   small machine the page's redraws take CPU from a model server on the same cores). With the offline model (which answers
   an unstreamed call after its wait) the unstreamed time is the twin's turn plus the streamed
   reply's words at the rate: the same call from a server that takes as long either way.

The last line: ``FIRST_TOKEN_TO_SCREEN_S=<x> WRITES_PER_TURN_S=<x> OVERHEAD_PCT=<x>`` (medians).
Targets (issue 20): <= 1 s, <= 5 writes a second, <= 10%.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.live_view import CHROMIUM, LAUNCH_ARGS, start_server  # noqa: E402

TURN_SHOWN = """() => [...document.querySelectorAll("[class*='st-key-draft-']")]
    .some(e => e.innerText.includes("answering"))"""
DRAFT_SHOWN = """() => [...document.querySelectorAll("[class*='st-key-draft-']")]
    .some(e => e.innerText.includes("drafting"))"""
OFFLINE_WAIT = 0.5


class Probe:
    """Times of the model's texts and of the partial-draft writes with text, in this process."""

    def __init__(self) -> None:
        self.texts: list[float] = []
        self.writes: list[float] = []
        # The model is asked once the page shows the claimed turn (a loaded machine may take
        # seconds to rerun the page): the measure starts at the model's first text either way.
        self.gate = threading.Event()
        self.entered = self.released = 0.0

    def install(self) -> None:
        import storage
        from conversation import models

        asking, starting, writing = models.ask_streaming, storage.start_draft, storage.write_draft

        async def ask_streaming(*args: Any, on_text: Any = None, **kwargs: Any) -> Any:
            self.entered = time.perf_counter()
            await asyncio.to_thread(self.gate.wait)
            self.released = time.perf_counter()

            def seen(text: str) -> Any:
                self.texts.append(time.time())
                return on_text(text) if on_text is not None else None

            return await asking(*args, on_text=seen, **kwargs)

        def start_draft(db: Any, event_id: int, token: int, text: str = "") -> Any:
            if text:
                self.writes.append(time.time())
            return starting(db, event_id, token, text)

        def write_draft(db: Any, event_id: int, token: int, text: str | None) -> Any:
            if text is not None:
                self.writes.append(time.time())
            return writing(db, event_id, token, text)

        models.ask_streaming = ask_streaming  # type: ignore[assignment]
        storage.start_draft = start_draft  # type: ignore[assignment]
        storage.write_draft = write_draft  # type: ignore[assignment]

    def clear(self) -> None:
        self.texts.clear()
        self.writes.clear()
        self.gate.clear()


def model_spec(stack: ExitStack, rate: float, offline: bool) -> tuple[Any, str]:
    """The model every room uses, and what it is (printed)."""
    from tests.support.llm_server import LlamaServer, find_gguf, missing_reason

    reason = "--offline was given: not used" if offline else missing_reason()
    if reason is None:
        server = stack.enter_context(LlamaServer.start(find_gguf()))  # type: ignore[arg-type]
        spec = {
            "service": "openai_compatible",
            "model": "smollm2",
            "base_url": server.base_url,
            "parameters": {"temperature": 0},
        }
        return spec, f"SmolLM2-135M-Instruct on llama.cpp's server ({server.base_url})"
    from conversation import OfflineModel

    os.environ["ROOMS_OFFLINE_WORDS_PER_SECOND"] = str(rate)
    model = OfflineModel(seed=4, max_words=40, mention_probability=0, latency=OFFLINE_WAIT)
    return model, (
        f"the offline model (llama.cpp server: {reason}): {rate:g} words a second after a "
        f"{OFFLINE_WAIT:g} s wait"
    )


def draft_on_screen(page: Any, worker: threading.Thread) -> float | None:
    """When the page first showed the draft's text (epoch seconds), or None when the turn
    committed before that (a short reply can land between two polls of the page)."""
    while worker.is_alive():
        try:
            page.wait_for_function(DRAFT_SHOWN, polling="raf", timeout=1_000)
        except Exception:  # Playwright's TimeoutError: look again while the turn runs
            continue
        return time.time()
    return None


def timed_turn(room: Any, message: str) -> tuple[float, str]:
    room.post(message)
    started = time.perf_counter()
    [turn] = room.run(max_turns=1)
    assert turn.state == "done", turn
    return time.perf_counter() - started, str(turn.result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--rate", type=float, default=8.0, help="offline words a second")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="the offline model, even when the llama.cpp server is here",
    )
    args = parser.parse_args()
    if not os.access(CHROMIUM, os.X_OK):
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")
    folder = Path(tempfile.mkdtemp(prefix="streaming-bench-"))
    os.environ["HOME"] = str(folder / "home")
    db_url = f"sqlite:///{folder / 'rooms.db'}"

    from playwright.sync_api import sync_playwright

    from conversation import Room
    from storage import Database

    with ExitStack() as stack:
        model, described = model_spec(stack, args.rate, args.offline)
        print(f"model: {described}")
        db = Database(db_url)
        options = {
            "agents": [{"name": "Ann"}, {"name": "Bob"}],
            "model": model,
            "planner": {"kind": "round_robin", "transitions": None},
            "use_cache": False,
            "seed": 11,
            "max_output_tokens": 48,
            "request_timeout": 300,
        }
        streamed = Room.create(db, name="streamed", **options)
        plain = Room.create(db, name="unstreamed", streaming=False, **options)
        # llama.cpp reuses the evaluated prefix of the previous prompt: whichever twin went
        # second would skip the prompt's evaluation. A third twin asks first, untimed, so both
        # timed calls find the same prompt already evaluated.
        warm = Room.create(db, name="warm-up", streaming=False, **options)
        # Streamed with nobody watching: what streaming costs the call itself, apart from what
        # a page redrawing the draft costs a machine whose cores the model server also uses.
        unwatched = Room.create(db, name="streamed, unwatched", **options)
        probe = Probe()
        probe.install()
        server, url = start_server(folder, db_url)
        stack.callback(server.kill)
        print(f"server pid {server.pid} at {url}; database {db_url}")
        pw = stack.enter_context(sync_playwright())
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/room?room={streamed.id}", timeout=120_000)
        page.get_by_test_id("stSidebarNavLink").first.wait_for(timeout=120_000)
        to_screen, rates, streamed_s, plain_s, unwatched_s = [], [], [], [], []
        missed = 0
        texts: list[str] = []
        for sample in range(args.samples):
            # addressed to nobody by name: a small model answering as Bob to "Bob says" passes
            message = f"A customer asks: would you sell this coffee mug for ${8 + sample}?"
            if isinstance(model, dict):
                timed_turn(warm, message)
            probe.clear()
            streamed.post(message)
            result: dict[str, float] = {}

            def run(room: Any = streamed, out: dict[str, float] = result) -> None:
                started = time.perf_counter()
                [turn] = room.run(max_turns=1)
                ended = time.perf_counter()  # the time held at the gate is not the turn's
                out["s"] = (probe.entered - started) + (ended - probe.released)
                out["ok"] = float(turn.state == "done")
                texts.append(str(turn.result))

            worker = threading.Thread(target=run)
            worker.start()
            page.wait_for_function(TURN_SHOWN, polling="raf", timeout=300_000)
            probe.gate.set()
            shown = draft_on_screen(page, worker)
            worker.join(600)
            assert result.get("ok") == 1.0, result
            if shown is None:  # committed before the page drew any of it: nothing to time
                missed += 1
                print(f"sample {sample + 1}: the reply committed before its draft was drawn")
                timed_turn(plain, message)  # the twins keep the same history
                timed_turn(unwatched, message)
                continue
            first, last = probe.texts[0], probe.texts[-1]
            to_screen.append(shown - first)
            span = max(last - first, 1e-6)
            # the rate of the writes themselves: intervals between them (a 0.5 s reply written
            # at 0, 0.25 and 0.5 s is 4 writes a second, not 3 / 0.5)
            written = probe.writes[-1] - probe.writes[0] if len(probe.writes) > 1 else 0.0
            rates.append((len(probe.writes) - 1) / written if written > 0 else 0.0)
            writes = len(probe.writes)  # before the twins' turns add theirs
            streamed_s.append(result["s"])
            unstreamed, twin_text = timed_turn(plain, message)
            if twin_text != texts[-1]:
                print(f"sample {sample + 1}: the twins' replies differ ({len(twin_text)} chars "
                      f"unstreamed, {len(texts[-1])} streamed)")  # fmt: skip
            if not isinstance(model, dict):  # offline: add the words the server would generate
                unstreamed += last - first  # (the twin's model waits OFFLINE_WAIT itself)
            plain_s.append(unstreamed)
            alone, _ = timed_turn(unwatched, message)
            unwatched_s.append(alone)
            print(
                f"sample {sample + 1}: first token -> screen {to_screen[-1]:.3f} s; "
                f"{writes} draft writes over {span:.2f} s ({rates[-1]:.2f}/s); "
                f"turn streamed {streamed_s[-1]:.2f} s (unwatched {unwatched_s[-1]:.2f} s), "
                f"unstreamed {plain_s[-1]:.2f} s"
            )
        if not to_screen:
            raise SystemExit(f"no sample drew a draft before its commit ({missed} tried)")
        if missed:
            print(f"{missed} of {args.samples} samples committed before a draft was drawn")
        first_token = statistics.median(to_screen)
        writes = statistics.median(rates)
        ratios = [s / p for s, p in zip(streamed_s, plain_s, strict=True)]
        overhead = 100 * (statistics.median(ratios) - 1)
        alone = [s / p for s, p in zip(unwatched_s, plain_s, strict=True)]
        print(
            f"overhead: {overhead:.1f}% streamed with the page watching it (the last line), "
            f"{100 * (statistics.median(alone) - 1):.1f}% streamed with nobody watching"
        )
        print(
            f"FIRST_TOKEN_TO_SCREEN_S={first_token:.3f} WRITES_PER_TURN_S={writes:.2f} "
            f"OVERHEAD_PCT={overhead:.1f}"
        )


if __name__ == "__main__":
    main()
