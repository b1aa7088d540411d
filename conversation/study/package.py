"""A study's replication package (``python -m conversation.study package CODE --out DIR``).

It holds the definition (and, for a preregistered study, the frozen bundle and its
amendments), the consent texts, the assignment log with its seeds, every group's room run
again at packaging (``replication.worlds``) with the model cache of every call, the people's
survey answers and signals, and the analysis plan's results; scrubbed by default (Presidio,
with the study's own recruitment ids), ``scrub=False`` recorded in the README. People who
withdrew are left out, and so are (as rooms that cannot be run again) the rooms they sat in.
No recruitment id, token or consent-free personal field is in it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import storage
from conversation.boundary import translated
from conversation.replication.analysis import Unit, signal_values
from conversation.replication.package import (
    PackageSource,
    Written,
    transcript_rows,
    write_package,
)
from conversation.replication.provenance import database, environment, program
from conversation.replication.scrubbing import Scrubbing
from conversation.replication.worlds import RoomSource, build_rooms
from conversation.study.consent import consent_versions
from conversation.study.record import get_study, study_definition
from conversation.study.researcher.amend import study_preregistration
from conversation.study.researcher.exports import (
    participants_table,
    present,
    study_events_table,
)
from conversation.study.signals.summary import signal_summaries, signals_table

#: Why a room a withdrawn person sat in is not run again.
WITHDREW = "a participant of this room withdrew: their messages are gone, so it cannot be replayed"


def package_study(
    db: storage.Database, code: str, out: str | Path, *, scrub: bool = True
) -> Written:
    """Write the study's replication package into ``out`` (and ``out.zip``)."""
    started = time.perf_counter()
    study = get_study(db, code)
    definition = study_definition(db, study)
    with translated():
        row = storage.get_study(db, study.code)
        everyone = storage.list_participants(db, study.id)
        groups = storage.list_groups(db, study.id)
    people = present(everyone)
    withdrawn = {int(p.id or 0) for p in everyone} - {int(p.id or 0) for p in people}
    # A withdrawn person's group, whether or not they still hold its seat (a person who
    # withdraws mid-room leaves their seat to the dropout rule, but their messages are gone).
    left_groups = {p.group_id for p in everyone if int(p.id or 0) in withdrawn and p.group_id}
    names = {int(p.id or 0): p.pseudonym for p in people}
    scrubbing = Scrubbing.make(
        scrub, known_ids=[p.recruitment_id for p in everyone if p.recruitment_id]
    )
    rooms = build_rooms(db, _room_sources(groups, names, withdrawn, left_groups), scrubbing)
    measures = {s.pseudonym: s.measures for s in signal_summaries(db, code)}
    units = [_person(p, measures.get(p.pseudonym, {}), scrubbing) for p in people]
    record = study_preregistration(db, code)
    documents: dict[str, Any] = {
        "consent_versions": [v.to_dict() for v in consent_versions(db, code)],
        "amendments": [a.to_dict() for a in record.amendments],
    }
    if record.bundle is not None:
        documents["bundle"] = record.bundle
    tables = {
        "participants": [scrubbing.value(r) for r in participants_table(db, code)],
        "signals": signals_table(db, code),
        "study_log": [scrubbing.value(r) for r in study_events_table(db, code)],
        "assignments": [_assignment(g, names) for g in groups],
        "transcripts": transcript_rows(rooms, "group"),
    }
    source = PackageSource(
        kind="study",
        name=study.name,
        identifier=f"study {study.code}",
        definition=definition.to_dict(),
        plan=definition.model.analysis,
        rooms=rooms,
        people=units,
        scrubbing=scrubbing,
        provenance={"program": program(), "environment": environment(), "database": database(db)},
        dates=_dates(row, everyone),
        command=f"python -m conversation.study replicate {Path(out)}",
        documents=documents,
        tables=tables,
        notes=_notes(record, withdrawn),
    )
    return write_package(source, out, started=started)


def _room_sources(
    groups: list[Any], names: dict[int, str], withdrawn: set[int], left_groups: set[Any]
) -> list[RoomSource]:
    """Every group's room; a room a withdrawn person sat in is skipped (:data:`WITHDREW`)."""
    found = []
    for index, group in enumerate(groups, start=1):
        if group.room_id is None:
            continue
        seated = [v for v in (group.seats or {}).values() if isinstance(v, int)]
        gone = group.id in left_groups or bool(set(seated) & withdrawn)
        found.append(
            RoomSource(
                f"room-{index:04d}",
                int(group.room_id),
                group.condition,
                skip=WITHDREW if gone else None,
                meta={"group": group.number, "people": [names[p] for p in seated if p in names]},
            )
        )
    return found


def _person(person: Any, measures: dict[str, Any], scrubbing: Scrubbing) -> Unit:
    values: dict[str, Any] = signal_values(measures)
    for source, answers in (("pre", person.pre_survey), ("post", person.post_survey)):
        for question, answer in (answers or {}).items():
            values[f"{source}.{question}"] = scrubbing.value(answer)
    return Unit(person.pseudonym, person.condition or "", values)


def _assignment(group: Any, names: dict[int, str]) -> dict[str, Any]:
    """A group's recorded draw with its seed, people named by pseudonym (a withdrawn person as
    ``withdrawn``)."""
    seats = {
        seat: (names.get(holder, "withdrawn") if isinstance(holder, int) else holder)
        for seat, holder in (group.seats or {}).items()
    }
    assignment = dict(group.assignment or {})
    for key in ("eligible", "participants", "waiting"):
        if isinstance(assignment.get(key), list):
            assignment[key] = [
                names.get(v, "withdrawn") if isinstance(v, int) else v for v in assignment[key]
            ]
    return {
        "condition": group.condition,
        "group": group.number,
        "seats": seats,
        "assignment": assignment,
        "started_at": group.started_at,
        "ended_at": group.ended_at,
    }


def _dates(row: Any, people: list[Any]) -> dict[str, Any]:
    joined = [p.joined_at for p in people]
    finished = [p.finished_at for p in people if p.finished_at is not None]
    return {
        "study_launched": row.created_at.isoformat(),
        "first_participant": min(joined).isoformat() if joined else None,
        "last_exit": max(finished).isoformat() if finished else None,
    }


def _notes(record: Any, withdrawn: set[int]) -> list[str]:
    notes = []
    if record.bundle is not None:
        notes.append(f"- preregistered: launched from bundle {record.launched_hash}")
        notes.append(f"- bundle in force: {record.bundle_hash}")
        for a in record.amendments:
            notes.append(
                f"- amendment {a.number} ({a.at.isoformat()}, {a.by}): {a.reason} "
                f"[{', '.join(a.changes)}]"
            )
    else:
        notes.append("- not preregistered (launched without a frozen bundle)")
    if withdrawn:
        notes.append(f"- {len(withdrawn)} participant(s) withdrew: left out, with their rooms")
    return notes


__all__ = ["WITHDREW", "package_study"]
