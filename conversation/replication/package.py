"""A replication package on disk, shaped after the AEA Data Editor's template (DCAS): a README
that says where everything came from and how to re-run it, the data, the code's identity, the
outputs, and a manifest with every file's sha256; a zip of the folder beside it.

``write_package(source, folder)`` writes a :class:`PackageSource` (a study's or an
experiment's, prepared by ``study.package`` or ``experiments``): the rooms of its world
(``worlds.RoomWorld``), the model cache of every call, the people and their answers, the
analysis plan and its results, and the extra tables and documents its maker adds.

Layout::

    README.md                 provenance, the data, the re-run command, the scrub report
    manifest.json             format, kind, rooms (file, mode, condition), files and sha256
    definition/               the definition (or design), the frozen bundle and amendments
    data/                     people.json (the analysis's input), tables as CSV
    rooms/<name>.json         each room's log (Room.export form)
    cache/model_cache.jsonl   every room call's cache entry {key, entry}
    cache/analysis_cache.jsonl  every judge call's
    analysis/plan.json, analysis/results.json
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conversation.exceptions import ConversationValueError
from conversation.replication.analysis import Unit, ask_judges, compute, transcript_of
from conversation.replication.plan import PlanIn
from conversation.replication.scrubbing import Scrubbing
from conversation.replication.worlds import RoomMode, RoomWorld
from conversation.vocabulary import EventKind

PACKAGE_FORMAT = "rooms-replication-package"
PACKAGE_VERSION = 1
MANIFEST = "manifest.json"


@dataclass(slots=True)
class PackageSource:
    """What a package holds, before it is written (see the module doc)."""

    kind: str
    name: str
    identifier: str
    definition: dict[str, Any]
    plan: PlanIn
    rooms: list[RoomWorld]
    people: list[Unit]
    scrubbing: Scrubbing
    provenance: dict[str, Any]
    dates: dict[str, Any]
    command: str
    documents: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Written:
    """A package written: its folder and zip, their sizes, how long it took, what it holds."""

    folder: Path
    zip: Path
    folder_bytes: int
    zip_bytes: int
    seconds: float
    rooms: int
    calls: int
    source_differences: int

    def lines(self) -> list[str]:
        return [
            f"package: {self.folder} ({self.folder_bytes:,} bytes)",
            f"zip: {self.zip} ({self.zip_bytes:,} bytes)",
            f"rooms: {self.rooms}, model calls cached: {self.calls}",
            f"source differences at packaging: {self.source_differences}",
            f"written in {self.seconds:.1f} s",
        ]


def analyse(plan: PlanIn, rooms: Sequence[RoomWorld], people: Sequence[Unit], cache_for: Any) -> dict[str, Any]:  # fmt: skip
    """The plan computed over a world's rooms and people (``cache_for(judge)``: the judge's
    EDSL cache)."""
    transcripts = [transcript_of(r.export) for r in rooms]
    judges = ask_judges(plan, transcripts, cache_for)
    units = [Unit(r.name, r.condition or "", {}, tuple(r.meta.get("people") or ())) for r in rooms]
    return compute(plan, units, people, judges)


class _Folder:
    """A package's folder being written: every file's bytes kept for the manifest's sha256."""

    def __init__(self, root: Path) -> None:
        if root.exists() and any(root.iterdir()):
            raise ConversationValueError(f"--out {str(root)!r} is not empty: give a new folder")
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.files: dict[str, bytes] = {}

    def put(self, name: str, data: bytes) -> None:
        self.files[name] = data
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def digests(self) -> dict[str, str]:
        return {name: hashlib.sha256(data).hexdigest() for name, data in sorted(self.files.items())}


def write_package(
    source: PackageSource, folder: str | Path, *, started: float | None = None
) -> Written:
    """Write ``source`` into ``folder`` (which must not exist, or be empty) and a zip beside
    it; the analysis is computed here (its judges' calls cached into the package).
    ``started``: the ``time.perf_counter()`` the packaging began at (the rooms' runs before
    this call count in ``Written.seconds``; default: now)."""
    started = time.perf_counter() if started is None else started
    out = _Folder(Path(folder))
    out.put("definition/definition.json", _json(source.definition))
    for name, document in source.documents.items():
        out.put(f"definition/{name}.json", _json(document))
    out.put("data/people.json", _json([_unit(u) for u in source.people]))
    for name, rows in source.tables.items():
        out.put(f"data/{name}.csv", _csv(rows))
    report = source.scrubbing.report()
    if report is not None:
        out.put("data/scrub_report.json", _json(report))
    entries: dict[str, Any] = {}
    for room in source.rooms:
        out.put(f"rooms/{room.name}.json", _json(room.export))
        for call in room.calls:
            entries.setdefault(call.key, call.entry)
    out.put("cache/model_cache.jsonl", _cache_lines(entries))
    results, judge_entries = _analysis(source)
    out.put("cache/analysis_cache.jsonl", _cache_lines(judge_entries))
    out.put("analysis/plan.json", _json(source.plan.model_dump(mode="json")))
    out.put("analysis/results.json", _json(results))
    manifest = _manifest(source, out.digests())
    readme = _readme(source, manifest, results, len(entries), len(judge_entries))
    out.put("README.md", readme.encode("utf-8"))
    manifest["files"] = out.digests()
    (out.root / MANIFEST).write_bytes(_json(manifest))
    archive = Path(shutil.make_archive(str(out.root), "zip", root_dir=out.root))
    return Written(
        folder=out.root,
        zip=archive,
        folder_bytes=sum(p.stat().st_size for p in out.root.rglob("*") if p.is_file()),
        zip_bytes=archive.stat().st_size,
        seconds=time.perf_counter() - started,
        rooms=len(source.rooms),
        calls=len(entries),
        source_differences=len(manifest["source_differences"]),
    )


def _analysis(source: PackageSource) -> tuple[dict[str, Any], dict[str, Any]]:
    """The plan's results over the source, and the judges' calls that gave them (each judge
    asked through a fresh cache of its own)."""
    from conversation.models.answering_cache import cache_entries, empty_cache

    caches: dict[str, Any] = {}

    def cache_for(judge: Any) -> Any:
        return caches.setdefault(json.dumps(judge, sort_keys=True), empty_cache())

    results = analyse(source.plan, source.rooms, source.people, cache_for)
    return results, {k: v for cache in caches.values() for k, v in cache_entries(cache).items()}


def _manifest(source: PackageSource, files: dict[str, str]) -> dict[str, Any]:
    return {
        "format": PACKAGE_FORMAT,
        "version": PACKAGE_VERSION,
        "kind": source.kind,
        "name": source.name,
        "identifier": source.identifier,
        "created_at": datetime.now(UTC).isoformat(),
        "scrubbed": source.scrubbing.on,
        "rooms": [
            {
                "name": r.name,
                "file": f"rooms/{r.name}.json",
                "mode": r.mode,
                "condition": r.condition,
                "source_room": r.source_id,
                "reason": r.reason,
                "people": list(r.meta.get("people") or ()),
            }
            for r in source.rooms
        ],
        "provenance": source.provenance,
        "dates": source.dates,
        "source_differences": [
            f"{r.name}: {line}" for r in source.rooms for line in r.source_differences
        ],
        "files": files,
    }


def _cache_lines(entries: Mapping[str, Any]) -> bytes:
    return _jsonl({"key": k, "entry": v} for k, v in sorted(entries.items()))


def transcript_rows(rooms: Sequence[RoomWorld], *meta: str) -> list[dict[str, Any]]:
    """The messages of a package's rooms, one row each (the ``transcripts`` table): room,
    condition, the rooms' ``meta`` values named, seq, kind, speaker, content, when."""
    return [
        {
            "room": room.name,
            "condition": room.condition,
            **{key: room.meta.get(key) for key in meta},
            "seq": event["seq"],
            "kind": event["kind"],
            "speaker": event["speaker"],
            "content": event["content"],
            "at": event.get("created_at"),
        }
        for room in rooms
        for event in room.export["events"]
        if event.get("kind") in (EventKind.HUMAN, EventKind.AGENT)
    ]


def _article(word: str) -> str:
    return "An" if word[:1].lower() in "aeiou" else "A"


def _unit(unit: Unit) -> dict[str, Any]:
    return {
        "name": unit.name,
        "condition": unit.condition,
        "values": dict(unit.values),
        "people": list(unit.people),
    }


def _json(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str) + "\n").encode("utf-8")  # fmt: skip


def _jsonl(rows: Any) -> bytes:
    return "".join(
        json.dumps(r, ensure_ascii=False, sort_keys=True, default=str) + "\n" for r in rows
    ).encode("utf-8")


def _csv(rows: Sequence[Mapping[str, Any]]) -> bytes:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                k: json.dumps(v, ensure_ascii=False, default=str)
                if isinstance(v, dict | list)
                else v
                for k, v in row.items()
            }
        )
    return out.getvalue().encode("utf-8")


def _readme(
    source: PackageSource,
    manifest: Mapping[str, Any],
    results: Mapping[str, Any],
    calls: int,
    judge_calls: int,
) -> str:
    modes = {m: sum(r.mode == m for r in source.rooms) for m in (RoomMode.RERUN, RoomMode.REPLAY, RoomMode.SKIPPED)}  # fmt: skip
    lines = [
        f"# Replication package: {source.name}",
        "",
        f"{_article(source.kind)} {source.kind} ({source.identifier}) of the conversation-rooms lab, packaged "
        f"{manifest['created_at']}. Shaped after the AEA Data Editor's replication package "
        "template: what was run, with what, on which data, and how to run it again.",
        "",
        "## Re-run it",
        "",
        "```bash",
        f"{source.command}",
        "```",
        "",
        "Offline: every model call is answered from `cache/`, none is sent. It re-runs every "
        f"agent-only room ({modes[RoomMode.RERUN]}), replays every room with people from its "
        f"stored messages ({modes[RoomMode.REPLAY]}), computes the analysis again, lists every "
        "difference, and ends with `REPLICATED rooms=<n> identical=<n> stats_identical=<0|1>`.",
        "",
        "## Provenance",
        "",
        *_provenance_lines(source),
        "",
        "## Personal data",
        "",
        *_personal_data_lines(source),
        "",
        "## Contents",
        "",
        f"- `definition/`: the {source.kind}'s definition"
        + (", the frozen bundle and its amendments" if "bundle" in source.documents else ""),
        f"- `rooms/`: {len(source.rooms)} rooms (each room's log)",
        f"- `cache/`: {calls} room model calls, {judge_calls} judge calls",
        f"- `data/`: {len(source.people)} people"
        + (f"; tables: {', '.join(sorted(source.tables))}" if source.tables else ""),
        "- `analysis/`: the plan and its results (with and without exclusions)",
        "- `manifest.json`: every file's sha256",
        "",
        "## Results",
        "",
        *_results_lines(source.plan, results),
    ]
    if manifest["source_differences"]:
        lines += ["", "## Differences found while packaging", ""]
        lines += [f"- {d}" for d in manifest["source_differences"]]
    return "\n".join(lines) + "\n"


def _provenance_lines(source: PackageSource) -> list[str]:
    program = source.provenance.get("program", {})
    env = source.provenance.get("environment", {})
    db = source.provenance.get("database", {})
    return [
        f"- program: {program.get('name')} {program.get('version')}, git commit "
        f"{program.get('git_commit') or 'unknown'}"
        + (" (with uncommitted changes)" if program.get("git_dirty") else ""),
        f"- Python {env.get('python')}; libraries: "
        + ", ".join(f"{k} {v}" for k, v in (env.get("libraries") or {}).items() if v),
        f"- database: {db.get('dialect')} {db.get('url')}, schema revision {db.get('revision')}",
        *(f"- {k.replace('_', ' ')}: {v}" for k, v in source.dates.items()),
        *source.notes,
    ]


def _personal_data_lines(source: PackageSource) -> list[str]:
    if not source.scrubbing.on:
        return [
            "**Not scrubbed** (`--no-scrub` was given): transcripts, answers and the model "
            "cache hold what people wrote, as they wrote it. Share it only where that is allowed."
        ]
    return [
        "Transcripts, survey answers and the model cache are scrubbed (Microsoft Presidio): "
        "personal data replaced by typed placeholders (`<EMAIL>`, `<PHONE>`, ...).",
        "",
        *(f"- {line}" for line in source.scrubbing.lines()),
    ]


def _results_lines(plan: PlanIn, results: Mapping[str, Any]) -> list[str]:
    lines = []
    if not plan.questions and not plan.statistics:
        lines.append("No analysis plan was given: the package holds the transcripts only.")
    for statistic in results.get("statistics", []):
        lines.append(f"- {statistic['name']} ({statistic['statistic']} of {statistic['measure']}):")
        for which in ("all", "with_exclusions"):
            parts = [
                f"{c} {v['estimate']} [{v['low']}, {v['high']}] n={v['n']}"
                for c, v in statistic[which].items()
            ]
            lines.append(f"  - {which.replace('_', ' ')}: " + "; ".join(parts))
    excluded = results.get("exclusions", {}).get("excluded") or []
    return [*lines, "", f"Excluded by the preregistered rules: {len(excluded)} people."]


__all__ = [
    "MANIFEST",
    "PACKAGE_FORMAT",
    "PackageSource",
    "Written",
    "analyse",
    "transcript_rows",
    "write_package",
]
