"""An experiment's replication package (``python -m conversation.experiments package ID``):
its design, every room re-run at packaging from the model cache (all its rooms are
agent-only), the model cache of every call, scrubbed transcripts by default, and an analysis
plan's results when one is given (``--plan FILE``: the ``[analysis]`` table of a study
definition, or the plan alone). Replicated by the same ``replicate`` as a study's.
"""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path

import storage
from conversation.boundary import translated
from conversation.exceptions import ConversationValueError
from conversation.replication.package import (
    PackageSource,
    Written,
    transcript_rows,
    write_package,
)
from conversation.replication.plan import PlanIn, plan_place
from conversation.replication.provenance import database, environment, program
from conversation.replication.scrubbing import Scrubbing
from conversation.replication.worlds import RoomSource, build_rooms
from conversation.text.schema import validated


def read_plan(path: str | Path | None) -> PlanIn:
    """An analysis plan from a TOML or JSON file (its ``[analysis]`` table, or the whole file);
    none: an empty plan (transcripts only)."""
    if path is None:
        return PlanIn()
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (OSError, ValueError) as exc:
        raise ConversationValueError(f"cannot read the plan {str(path)!r}: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("analysis"), dict):
        data = data["analysis"]
    return validated(PlanIn, data, place=plan_place)


def package_experiment(
    db: storage.Database,
    experiment_id: int,
    out: str | Path,
    *,
    plan: PlanIn | None = None,
    scrub: bool = True,
) -> Written:
    """Write the experiment's replication package into ``out`` (and ``out.zip``)."""
    started = time.perf_counter()
    with translated():
        experiment = storage.get_experiment(db, experiment_id)
        room_ids = storage.experiment_room_ids(db, experiment_id)
        records = [storage.get_room(db, room_id) for room_id in room_ids]
    scrubbing = Scrubbing.make(scrub)
    rooms = build_rooms(
        db,
        (
            RoomSource(
                f"room-{index:04d}",
                int(record.id or 0),
                record.condition,
                meta={"replicate": record.replicate},
            )
            for index, record in enumerate(records, start=1)
        ),
        scrubbing,
    )
    created = [r.created_at for r in records]
    source = PackageSource(
        kind="experiment",
        name=experiment.name,
        identifier=f"experiment {experiment_id}",
        definition=dict(experiment.config or {}),
        plan=plan or PlanIn(),
        rooms=rooms,
        people=[],
        scrubbing=scrubbing,
        provenance={"program": program(), "environment": environment(), "database": database(db)},
        dates={
            "experiment_created": experiment.created_at.isoformat(),
            "first_room": min(created).isoformat() if created else None,
            "last_room": max(created).isoformat() if created else None,
        },
        command=f"python -m conversation.experiments replicate {Path(out)}",
        tables={"transcripts": transcript_rows(rooms, "replicate")},
    )
    return write_package(source, out, started=started)


__all__ = ["package_experiment", "read_plan"]
