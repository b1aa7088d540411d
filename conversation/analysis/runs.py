"""An analysis run: one follow-up question asked about many stored rooms, every answer stored.

``run_analysis`` creates the analysis, asks the rooms in small batches (progress can be shown
between them) and stores each answer, or the room's error with its reason and the raw reply;
``retry_failed_answers`` asks again where an answer failed. The analysis ends ``done``, or
``failed`` while some answers are missing. The pages call these; no page writes an answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import storage
from conversation.access.roles import Action, require

#: Rooms asked per EDSL job (progress is reported between batches).
ANALYSIS_CHUNK = 5
MESSAGE_EVENT_KINDS = ("human", "agent")

Progress = Callable[[int, int], None]


def roster(room: Any) -> list[str]:
    """The agent names of a stored room (from its config)."""
    agents = (room.config or {}).get("roster") or (room.config or {}).get("agents") or []
    names = []
    for agent in agents:
        name = agent.get("name") if isinstance(agent, dict) else agent
        if isinstance(name, str):
            names.append(name)
    return names


def transcript_scenario(db: Any, room_id: int) -> dict[str, Any]:
    """A room's messages as the structured transcript a follow-up question reads."""
    from conversation.text.transcript import render_transcript, transcript_record

    room = storage.get_room(db, room_id)
    names = roster(room)
    records = []
    for event in storage.events(db, room_id, kinds=MESSAGE_EVENT_KINDS):
        if event.kind == "agent" and event.state != "done":
            continue
        index = names.index(event.speaker) if event.speaker in names else None
        records.append(transcript_record(event.seq, event.speaker, index, event.content))
    return {"transcript": render_transcript(records), "room_id": room_id}


def run_analysis(
    db: Any,
    spec: dict[str, Any],
    room_ids: Sequence[int],
    *,
    model: dict[str, Any] | None = None,
    experiment_id: int | None = None,
    progress: Progress | None = None,
    actor: Any = None,
) -> int:
    """Ask ``spec`` about every room, store each answer, and return the analysis id.
    ``actor`` needs the researcher role (``PermissionDenied`` before anything is stored).

    Rooms are asked in small batches so progress can be shown. Every valid answer is stored; an
    answer that failed (EDSL's validation refused the reply, or the call failed) is stored as the
    room's error with its reason and the raw reply, so ``retry_failed_answers`` can ask again.
    The analysis ends ``done``, or ``failed`` while some answers are missing.
    """
    require(actor, Action.RUN_ANALYSIS)
    analysis_id = storage.create_analysis(
        db,
        spec["text"][:200],
        spec,
        model=model,
        experiment_id=experiment_id,
        status="running",
    )
    _ask_rooms(db, analysis_id, spec, list(room_ids), model, progress, actor)
    return analysis_id


def failed_answers(db: Any, analysis_id: int) -> list[int]:
    """The rooms whose answer to the analysis failed (stored with an error), by room id."""
    return [a.room_id for a in storage.answers(db, analysis_id) if a.error is not None]


def retry_failed_answers(
    db: Any,
    analysis_id: int,
    *,
    progress: Progress | None = None,
    actor: Any = None,
) -> int:
    """Ask the analysis's question again for the rooms whose answer failed, with the same model;
    returns how many still fail. Valid answers already stored are not touched."""
    require(actor, Action.RUN_ANALYSIS)
    analysis = storage.get_analysis(db, analysis_id)
    rooms = failed_answers(db, analysis_id)
    if not rooms:
        return 0
    storage.update_analysis(db, analysis_id, status="running")
    return _ask_rooms(
        db, analysis_id, dict(analysis.question), rooms, analysis.model, progress, actor
    )


def _ask_rooms(
    db: Any,
    analysis_id: int,
    spec: dict[str, Any],
    room_ids: list[int],
    model: dict[str, Any] | None,
    progress: Progress | None,
    actor: Any = None,
) -> int:
    from conversation.analysis.questions import analyze, question_from_spec
    from conversation.models import default_model, model_label, resolve_model

    chosen = resolve_model(model) if model else default_model()
    label = model_label(chosen)
    question = question_from_spec(spec)
    done = 0
    for start in range(0, len(room_ids), ANALYSIS_CHUNK):
        chunk = room_ids[start : start + ANALYSIS_CHUNK]
        scenarios = [transcript_scenario(db, rid) for rid in chunk]
        try:
            outcome = analyze([question], scenarios, model=chosen, actor=actor)
        except Exception as exc:  # a failed batch stores its error with each of its rooms
            error = {"type": type(exc).__name__, "code": getattr(exc, "code", None),
                     "message": str(exc)[:500]}  # fmt: skip
            for rid in chunk:
                storage.record_answer(db, analysis_id, rid, None, model=label, error=error)
        else:
            _store_outcome(
                db, analysis_id, question.question_name, outcome, scenarios, label, chosen
            )
        done += len(chunk)
        if progress is not None:
            progress(done, len(room_ids))
    remaining = len(failed_answers(db, analysis_id))
    storage.update_analysis(db, analysis_id, status="failed" if remaining else "done")
    return remaining


def _store_outcome(
    db: Any,
    analysis_id: int,
    name: str,
    outcome: Any,
    scenarios: list[dict[str, Any]],
    label: str,
    model: Any = None,
) -> None:
    """One batch's answers stored: each valid answer with its tokens and cost (``None``: a
    price that is not known, ``calls.known_cost``), and each failure as its room's error."""
    from conversation.models.calls import known_cost

    for row in outcome.rows:
        if name in row:
            usage = row.get(f"{name}_usage") or {}
            storage.record_answer(
                db,
                analysis_id,
                int(row["room_id"]),
                _json_value(row[name]),
                comment=row.get(f"{name}_comment"),
                model=label,
                input_tokens=_count(usage.get("input_tokens")),
                output_tokens=_count(usage.get("output_tokens")),
                cost=known_cost(model, usage.get("cost")) if model is not None else None,
            )
    for failure in outcome.failures:
        rid = int(scenarios[failure.scenario_index]["room_id"])
        storage.record_answer(db, analysis_id, rid, None, model=label, error=failure.to_error())


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _json_value(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


__all__ = [
    "ANALYSIS_CHUNK",
    "failed_answers",
    "retry_failed_answers",
    "roster",
    "run_analysis",
    "transcript_scenario",
]
