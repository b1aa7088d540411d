"""Rooms exported for other tools: the versioned JSON export of each room, and EDSL ``Results``
(one result per finished agent message, with the provenance columns every export shares)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from conversation.vocabulary import AgentTurn, entries_of
from storage import provenance_row


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
    return "".join(stream_edsl_results(db, room_ids))


def stream_edsl_results(
    db: Any, room_ids: Sequence[int], *, progress: Callable[[int, int], None] | None = None
) -> Iterator[str]:
    """:func:`rooms_to_results`'s ``Results.to_dict()`` as JSON text in pieces, one room's
    results at a time: the same document (``Results.from_dict`` reads it), with memory bounded
    by one room, never the whole experiment's ``Results``. ``progress(rooms done, rooms)``."""
    from edsl import Results
    from edsl.caching import Cache

    survey = _survey()
    models: dict[str, Any] = {}
    ids = list(room_ids)
    yield '{"data": ['
    first = True
    for done, rid in enumerate(ids, start=1):
        for result in _room_results(db, rid, survey, models):
            result.scenario.offload(inplace=True)  # what Results.to_dict does first
            yield ("" if first else ", ") + _dumps(result.to_dict(include_cache_info=True))
            first = False
        if progress is not None:
            progress(done, len(ids))
    tail = Results(survey=survey, data=[]).to_dict()  # survey, version, class name, cache
    tail.pop("data")
    tail.setdefault("cache", Cache().to_dict())
    yield "], " + _dumps(tail)[1:]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _survey() -> Any:
    from edsl import QuestionFreeText, Survey

    return Survey(
        [QuestionFreeText(question_text="What do you say next?", question_name="dialogue")]
    )


def rooms_to_results(db: Any, room_ids: Sequence[int]) -> Any:
    """One EDSL ``Result`` per finished agent message: the agent (name, traits), the room as the
    scenario (name, condition, replicate, activity and the provenance columns every export
    shares: ``storage.PROVENANCE_COLUMNS``), the model, the text as the answer to a
    ``dialogue`` free-text question, and the turn's tokens and cost. Text is neutralised the way
    every value entering EDSL is (``safety.neutralize``); the database keeps the original."""
    from edsl import Results

    survey = _survey()
    models: dict[str, Any] = {}
    rows = [r for rid in room_ids for r in _room_results(db, rid, survey, models)]
    return Results(survey=survey, data=rows)


def _room_results(db: Any, room_id: int, survey: Any, models: dict[str, Any]) -> Iterator[Any]:
    """The ``Result`` of each finished agent message of one room (``models``: resolved model
    specs, shared between rooms)."""
    from edsl import Agent, Scenario
    from edsl.results import Result

    from conversation.models import resolve_model
    from conversation.rooms.room import Room
    from conversation.text.safety import neutralize, neutralize_value

    room = Room.open(db, room_id)
    record, config = room.record, room.config
    for entry in entries_of(room.events()):
        if not (isinstance(entry, AgentTurn) and entry.is_message):
            continue  # one result per agent message
        event = entry.row
        spec = config.spec(event.speaker)
        model_spec = dict(spec.model or config.model)
        key = json.dumps(model_spec, sort_keys=True)
        if key not in models:
            models[key] = resolve_model(model_spec)
        yield Result(
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
                        for k, v in provenance_row(entry).items()
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


__all__ = ["export_edsl_results", "export_json", "rooms_to_results", "stream_edsl_results"]
