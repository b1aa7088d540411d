"""Rooms exported for other tools: the versioned JSON export of each room, and EDSL ``Results``
(one result per finished agent message, with the provenance columns every export shares)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from storage.provenance import provenance_row


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


__all__ = ["export_edsl_results", "export_json", "rooms_to_results"]
