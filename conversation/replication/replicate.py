"""``replicate(folder)``: a replication package run again, offline, and compared.

Every agent-only room is re-run from its opening, every room with people replayed turn by turn
from its stored messages, each call answered from the package's model cache only (a call not
in it is a difference, never a model call); the analysis plan is computed again over the
re-run transcripts, its judges answered from the package's judge cache. Every file is checked
against the manifest's sha256 first. The report lists every difference; its last line is
``REPLICATED rooms=<n> identical=<n> stats_identical=<0|1>``.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import storage
from conversation.exceptions import ConversationValueError
from conversation.replication.analysis import Unit, ask_judges, compute, transcript_of
from conversation.replication.caches import PackageCache
from conversation.replication.package import MANIFEST, PACKAGE_FORMAT
from conversation.replication.plan import PlanIn
from conversation.replication.rooms import done_turns, replay_turn, rerun_room
from conversation.replication.worlds import RoomMode, rerun_differences, turn_difference
from conversation.vocabulary import TurnState


@dataclass(slots=True)
class Replication:
    """What ``replicate`` found: per room its differences, the skipped rooms and why, the
    analysis's differences, the files that changed."""

    rooms: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    stats: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def identical(self) -> int:
        return sum(1 for lines in self.rooms.values() if not lines)

    @property
    def stats_identical(self) -> bool:
        return not self.stats

    def last_line(self) -> str:
        return (
            f"REPLICATED rooms={len(self.rooms)} identical={self.identical} "
            f"stats_identical={int(self.stats_identical)}"
        )

    def lines(self) -> list[str]:
        out = [f"file changed since packaging: {f}" for f in self.files]
        for name, differences in self.rooms.items():
            if differences:
                out += [f"{name}: {d}" for d in differences]
            else:
                out.append(f"{name}: identical")
        out += [f"{name}: skipped ({why})" for name, why in self.skipped.items()]
        out += [f"analysis: {d}" for d in self.stats] or ["analysis: identical"]
        return [*out, self.last_line()]


def _read_jsonl(path: Path) -> dict[str, Any]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            found[row["key"]] = row["entry"]
    return found


def _manifest(root: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConversationValueError(
            f"{str(root)!r} is not a replication package (no readable {MANIFEST}: {exc})"
        ) from None
    if manifest.get("format") != PACKAGE_FORMAT:
        raise ConversationValueError(f"{str(root)!r} is not a replication package")
    return dict(manifest)


def replicate(folder: str | Path) -> Replication:
    """Run the package in ``folder`` again and compare (see the module doc)."""
    root = Path(folder)
    manifest = _manifest(root)
    report = Replication()
    for name, digest in sorted((manifest.get("files") or {}).items()):
        path = root / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            report.files.append(name)
    room_cache = _read_jsonl(root / "cache" / "model_cache.jsonl")
    judge_cache = _read_jsonl(root / "cache" / "analysis_cache.jsonl")
    exports: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="replicate-") as scratch_dir:
        scratch = storage.Database(f"sqlite:///{scratch_dir}/replica.db")
        try:
            for room in manifest["rooms"]:
                export = json.loads((root / room["file"]).read_text(encoding="utf-8"))
                if room["mode"] == RoomMode.SKIPPED:
                    report.skipped[room["name"]] = room.get("reason") or "not re-run"
                    exports[room["name"]] = export
                    continue
                if room["mode"] == RoomMode.RERUN:
                    events, status = rerun_room(scratch, export, PackageCache(room_cache))
                    report.rooms[room["name"]] = rerun_differences(export, events, status)
                    exports[room["name"]] = {**export, "events": events}
                else:
                    differences, replayed = _replay(scratch, export, room_cache)
                    report.rooms[room["name"]] = differences
                    exports[room["name"]] = replayed
        finally:
            scratch.dispose()
    plan = PlanIn.model_validate(json.loads((root / "analysis/plan.json").read_text("utf-8")))
    people = [
        Unit(p["name"], p["condition"], p["values"], tuple(p.get("people") or ()))
        for p in json.loads((root / "data/people.json").read_text(encoding="utf-8"))
    ]
    rooms = [
        Unit(r["name"], r.get("condition") or "", {}, tuple(r.get("people") or ()))
        for r in manifest["rooms"]
    ]
    transcripts = [transcript_of(exports[r["name"]]) for r in manifest["rooms"]]
    judge = PackageCache(judge_cache)
    try:
        answers = ask_judges(plan, transcripts, lambda _: judge)
        results = compute(plan, rooms, people, answers)
    except Exception as exc:  # noqa: BLE001 - a judge call missing from the cache, say: reported
        report.stats.append(f"could not be computed again: {type(exc).__name__}: {exc}")
        return report
    stored = json.loads((root / "analysis/results.json").read_text(encoding="utf-8"))
    report.stats = differences_between(stored, results)
    return report


def _replay(
    db: storage.Database, export: Mapping[str, Any], entries: Mapping[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """Each finished turn asked again after the package's events before it; the differences
    and the export with the replies as they came back."""
    differences = []
    events = [dict(e) for e in export["events"]]
    finished = {e["seq"] for e in done_turns(export)}
    for index, event in enumerate(events):
        if event["seq"] not in finished:
            continue
        cache = PackageCache(entries)
        answered = replay_turn(db, export, export["events"][:index], event, cache)
        line = turn_difference(event, answered, cache.misses)
        if line:
            differences.append(line)
        if answered is not None:
            events[index] = {**event, "content": answered["content"], "state": TurnState.DONE}
    return differences, {**export, "events": events}


def differences_between(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Every place two JSON documents differ, as ``path: expected -> actual``."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        lines = []
        for key in sorted(set(expected) | set(actual), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in actual:
                lines.append(f"{where}: missing in the re-run")
            elif key not in expected:
                lines.append(f"{where}: new in the re-run")
            else:
                lines += differences_between(expected[key], actual[key], where)
        return lines
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        lines = []
        for index, (a, b) in enumerate(zip(expected, actual, strict=True)):
            lines += differences_between(a, b, f"{path}[{index}]")
        return lines
    if expected != actual:
        return [f"{path}: {_short(expected)} -> {_short(actual)}"]
    return []


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["Replication", "differences_between", "replicate"]
