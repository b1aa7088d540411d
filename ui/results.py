"""What the Results page needs beyond raw frames: table shaping, chart-click filters, transcripts for
follow-up questions, running and storing an analysis, and exports. No Streamlit here."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

import storage
from storage import ROOM_STATUSES
from storage.provenance import provenance_row

STATUSES = ROOM_STATUSES
QUESTION_TYPES = {
    "Yes / no": "yes_no",
    "Free text": "free_text",
    "Multiple choice": "multiple_choice",
    "Number": "numerical",
}
ANALYSIS_CHUNK = 5
MESSAGE_EVENT_KINDS = ("human", "agent")


def filter_rooms(
    rooms: pd.DataFrame,
    *,
    stop_reasons: Sequence[Any] = (),
    conditions: Sequence[Any] = (),
    text: str = "",
) -> pd.DataFrame:
    """Rooms narrowed by clicked chart values (stop reasons as charted; conditions) and by a text
    that the name or the condition contains (case-insensitive)."""
    out = rooms
    if text.strip():
        needle = text.strip().lower()
        haystack = out["name"].str.lower() + " " + out["condition"].fillna("").str.lower()
        out = out[haystack.str.contains(needle, regex=False)]
    if stop_reasons:
        charted = out["stop_reason"].where(out["stop_reason"].notna(), "(" + out["status"] + ")")
        out = out[charted.isin(list(stop_reasons))]
    if conditions:
        labels = out["condition"].fillna("(none)").astype(str)
        out = out[labels.isin([str(c) for c in conditions])]
    return out


def rooms_table(rooms: pd.DataFrame) -> pd.DataFrame:
    """The rooms table as shown and exported (readable column order)."""
    columns = [
        "room_id", "name", "status", "stop_reason", "experiment_id", "short", "condition",
        "replicate",
        "messages", "human_messages", "agent_messages", "passes", "failed_turns", "words",
        "input_tokens", "output_tokens", "cost", "mean_latency", "created_at", "updated_at",
    ]  # fmt: skip
    return rooms[[c for c in columns if c in rooms]]


def events_table(events: pd.DataFrame) -> pd.DataFrame:
    columns = [
        "room_id", "seq", "activity", "round", "kind", "speaker", "state", "content", "words",
        "model", "input_tokens", "output_tokens", "cost", "latency", "attempts", "error_message",
    ]  # fmt: skip
    return events[[c for c in columns if c in events]]


def room_labels(rooms: pd.DataFrame) -> dict[int, str]:
    shorts = rooms["short"] if "short" in rooms else rooms["condition"]
    return {
        int(rid): f"#{rid} {name}" + (f" [{short}]" if isinstance(short, str) else "")
        for rid, name, short in zip(rooms["room_id"], rooms["name"], shorts, strict=True)
    }


def roster(room: Any) -> list[str]:
    """The agent names of a stored room (from its config)."""
    agents = (room.config or {}).get("roster") or (room.config or {}).get("agents") or []
    names = []
    for agent in agents:
        name = agent.get("name") if isinstance(agent, dict) else agent
        if isinstance(name, str):
            names.append(name)
    return names


def events_by_seq(db: Any, room_id: int, tail: int | None = None) -> dict[int, Any]:
    """A room's events by seq; with ``tail``, only the last ``tail`` of them (what a transcript
    shows: a 2,000-message room is not read whole to draw its last 200)."""
    after = None
    if tail is not None:
        after = max(0, storage.latest_seq(db, room_id) - tail)
    return {e.seq: e for e in storage.events(db, room_id, after_seq=after)}


ALL_ROOMS = "All rooms"


def experiment_choices(
    db: Any, *, show_archived: bool, linked: int | None = None
) -> dict[str, int | None]:
    """The Results experiment picker, ``{label: id}``: ``ALL_ROOMS`` first, then the entries of
    ``ui.experiments.experiment_labels`` (the Experiments page's picker, the same rules)."""
    from ui.experiments import experiment_labels

    labels = experiment_labels(db, show_archived=show_archived, linked=linked)
    return {ALL_ROOMS: None, **{label: experiment_id for experiment_id, label in labels.items()}}


def rooms_archived_filter(
    db: Any, *, show_archived: bool, experiment_id: int | None
) -> bool | None:
    """The ``archived`` filter of the rooms listed: archived rooms are left out unless asked for,
    or unless the experiment picked is itself archived (its rooms were archived with it)."""
    if show_archived:
        return None
    if experiment_id is not None and storage.get_experiment(db, experiment_id).archived_at:
        return None
    return False


def condition_names(db: Any, experiment_id: int | None) -> dict[str, str]:
    """``{condition: short name}`` of an experiment, in design order (empty for "All rooms", or
    a design without conditions): the labels of the Results tables and chart axes."""
    if experiment_id is None:
        return {}
    from conversation.experiments.design import condition_names as names_of

    try:
        return names_of(storage.get_experiment(db, experiment_id).config)
    except (LookupError, KeyError, TypeError, ValueError):
        return {}


def with_short_names(rooms: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """``rooms`` with a ``short`` column beside ``condition`` (the condition's short name)."""
    if "condition" not in rooms or rooms.empty:
        return rooms
    short = rooms["condition"].map(lambda c: names.get(c, c) if isinstance(c, str) else None)
    return rooms.assign(short=short)


def latest_analysis(db: Any, experiment_id: int | None) -> Any | None:
    found = storage.list_analyses(db, experiment_id=experiment_id, status="done", limit=1)
    return found[0] if found else None


# --- follow-up analysis ----------------------------------------------------------------------


def question_spec(label: str, text: str, options: str = "") -> dict[str, Any]:
    """A question spec for :func:`conversation.analysis.questions.question_from_spec` from the form."""
    kind = QUESTION_TYPES.get(label, label)
    spec: dict[str, Any] = {"type": kind, "name": "answer", "text": text}
    if kind == "multiple_choice":
        spec["options"] = [o.strip() for o in options.split(",") if o.strip()]
    from conversation.analysis.questions import question_from_spec

    question_from_spec(spec)  # validates; raises ConversationValueError (a ValueError)
    return spec


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
    progress: Callable[[int, int], None] | None = None,
    actor: Any = None,
) -> int:
    """Ask ``spec`` about every room, store each answer, and return the analysis id.
    ``actor`` needs the researcher role (``PermissionDenied`` before anything is stored).

    Rooms are asked in small batches so progress can be shown. Every valid answer is stored; an
    answer that failed (EDSL's validation refused the reply, or the call failed) is stored as the
    room's error with its reason and the raw reply, so ``retry_failed_answers`` can ask again.
    The analysis ends ``done``, or ``failed`` while some answers are missing.
    """
    from conversation.access import Action, require

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
    progress: Callable[[int, int], None] | None = None,
    actor: Any = None,
) -> int:
    """Ask the analysis's question again for the rooms whose answer failed, with the same model;
    returns how many still fail. Valid answers already stored are not touched."""
    from conversation.access import Action, require

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
    progress: Callable[[int, int], None] | None,
    actor: Any = None,
) -> int:
    from conversation.analysis.questions import analyze, question_from_spec
    from conversation.models import default_model, model_label, resolve_model

    chosen = resolve_model(model) if model else default_model()
    label = model_label(chosen)
    question = question_from_spec(spec)
    name = question.question_name
    failed = 0
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
            failed += len(chunk)
        else:
            for row in outcome.rows:
                if name in row:
                    storage.record_answer(
                        db,
                        analysis_id,
                        int(row["room_id"]),
                        _json_value(row[name]),
                        comment=row.get(f"{name}_comment"),
                        model=label,
                    )
            for failure in outcome.failures:
                rid = int(scenarios[failure.scenario_index]["room_id"])
                storage.record_answer(
                    db, analysis_id, rid, None, model=label, error=failure.to_error()
                )
                failed += 1
        done += len(chunk)
        if progress is not None:
            progress(done, len(room_ids))
    remaining = len(failed_answers(db, analysis_id))
    storage.update_analysis(db, analysis_id, status="failed" if remaining else "done")
    return remaining


def _json_value(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# --- exports -----------------------------------------------------------------------------------


def export_json(db: Any, room_ids: Sequence[int]) -> str:
    """The selected rooms' versioned exports (``Room.export()``), as one JSON document."""
    from conversation.rooms.room import Room

    return json.dumps(
        {"rooms": [Room.open(db, rid).export() for rid in room_ids]},
        indent=2,
        ensure_ascii=False,
        default=str,
    )


def export_edsl_results(db: Any, room_ids: Sequence[int]) -> str:
    """The selected rooms' agent messages as an EDSL ``Results`` (JSON of ``to_dict()``)."""
    return json.dumps(rooms_to_results(db, room_ids).to_dict(), ensure_ascii=False, default=str)


def rooms_to_results(db: Any, room_ids: Sequence[int]) -> Any:
    """One EDSL ``Result`` per finished agent message: the agent (name, traits), the room as the
    scenario (name, condition, replicate, activity and the provenance columns every export
    shares: ``storage.provenance.PROVENANCE_COLUMNS``), the model, the text as the answer to a
    ``dialogue`` free-text question, and the turn's tokens and cost. Text is neutralised the way
    every value entering EDSL is (``safety.neutralize``); the database keeps the original."""
    from edsl import Agent, QuestionFreeText, Results, Scenario, Survey
    from edsl.results import Result

    from conversation.models import resolve_model
    from conversation.rooms.room import Room
    from conversation.text.safety import neutralize, neutralize_value

    survey = Survey(
        [QuestionFreeText(question_text="What do you say next?", question_name="dialogue")]
    )
    rows = []
    models: dict[str, Any] = {}
    for rid in room_ids:
        room = Room.open(db, rid)
        record, config = room.record, room.config
        for event in room.events():
            if event.kind != "agent" or event.state != "done":
                continue
            spec = config.spec(event.speaker)
            model_spec = dict(spec.model or config.model)
            key = json.dumps(model_spec, sort_keys=True)
            if key not in models:
                models[key] = resolve_model(model_spec)
            rows.append(
                Result(
                    agent=Agent(name=spec.name, traits=neutralize_value(dict(spec.traits))),
                    scenario=Scenario(
                        {
                            "room_name": neutralize(record.name),
                            "condition": neutralize(record.condition or ""),
                            "replicate": record.replicate,
                            "activity": event.activity,
                            # The provenance columns every export shares (room_id and seq too).
                            **{
                                k: neutralize(v) if isinstance(v, str) else v
                                for k, v in provenance_row(event).items()
                            },
                        }
                    ),
                    model=models[key],
                    iteration=0,
                    answer={"dialogue": neutralize(event.content)},
                    prompt={},
                    raw_model_response={
                        "dialogue_input_tokens": event.input_tokens,
                        "dialogue_output_tokens": event.output_tokens,
                        "dialogue_cost": event.cost,
                    },
                    survey=survey,
                    generated_tokens={"dialogue_generated_tokens": neutralize(event.content)},
                )
            )
    return Results(survey=survey, data=rows)


__all__ = [
    "QUESTION_TYPES",
    "STATUSES",
    "events_by_seq",
    "events_table",
    "export_edsl_results",
    "export_json",
    "filter_rooms",
    "condition_names",
    "with_short_names",
    "latest_analysis",
    "question_spec",
    "room_labels",
    "rooms_table",
    "roster",
    "failed_answers",
    "retry_failed_answers",
    "run_analysis",
    "transcript_scenario",
]
