"""Room helpers for the pages: settings from form values, creating a room (optionally from a
template) and opening it, prompt previews, per-turn details, the Home page's overview. No Streamlit.

The prompt text itself lives in the engine (``conversation.rooms.prompt``): previews call the same
``build_turn_prompt`` a worker uses, so what the page shows is what the agent is (or was) asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from conversation.planning.registry import planner_label
from conversation.termination.conditions import describe_termination
from storage import Event
from storage import repository as repo

from .templates import RoomTemplate

#: The planner kinds the room form offers (the coordinator needs a roster agent chosen as such,
#: set up in code or in a template), with their labels from the one registry.
FORM_PLANNER_KINDS = (
    "round_robin_room",
    "round_robin",
    "focal",
    "random",
    "random_inclusive",
    "addressed",
    "free",
)
PLANNER_LABELS = {kind: planner_label(kind) for kind in FORM_PLANNER_KINDS}


def planner_dict(kind: str, **settings: Any) -> dict[str, Any]:
    """A stored planner from the form (validated by ``planner_from_dict``); only the settings the
    planner kind declares are kept."""
    from conversation.planning.registry import PLANNER_KINDS, planner_from_dict
    from conversation.rooms.config import planner_to_dict

    allowed = PLANNER_KINDS[kind].settings
    data = {"kind": kind} | {k: v for k, v in settings.items() if k in allowed and v is not None}
    return planner_to_dict(planner_from_dict(data))


def termination_dict(
    *, max_turns: int | None = None, stop_text: str | None = None, token_budget: int | None = None
) -> dict[str, Any] | None:
    """Stop conditions from the form, combined with ``|`` (any of them ends the room)."""
    from conversation.termination.conditions import termination_from_dict

    parts: list[dict[str, Any]] = []
    if stop_text and stop_text.strip():
        parts.append({"kind": "text_mention", "text": stop_text.strip()})
    if max_turns:
        parts.append({"kind": "max_turns", "max_turns": int(max_turns)})
    if token_budget:
        parts.append({"kind": "token_budget", "max_tokens": int(token_budget)})
    if not parts:
        return None
    data = parts[0] if len(parts) == 1 else {"kind": "any", "parts": parts}
    return termination_from_dict(data).to_dict()


def context_dict(max_messages: int | None, max_tokens: int | None) -> dict[str, Any] | None:
    from conversation.context.window import context_policy_from_dict

    if not max_messages and not max_tokens:
        return None
    return context_policy_from_dict(
        {"max_messages": max_messages or None, "max_tokens": max_tokens or None}
    ).to_dict()


@dataclass(frozen=True, slots=True)
class RoomDraft:
    """Everything the create-room form collects."""

    name: str
    agents: Sequence[Mapping[str, Any]]
    planner: Mapping[str, Any]
    termination: Mapping[str, Any] | None = None
    model: Mapping[str, Any] | None = None
    moderated: bool = False
    prompt_template: str | None = None
    context: Mapping[str, Any] | None = None
    #: Model request settings (``max_output_tokens``, ``request_timeout``, ``context_window``,
    #: ``use_cache``); missing ones take ``RoomConfig``'s defaults.
    settings: Mapping[str, Any] | None = None

    def config(self) -> Any:
        """The validated ``RoomConfig`` (raises ``ConversationValueError`` naming the field)."""
        from conversation.rooms.config import RoomConfig

        return RoomConfig.build(
            agents=[dict(a) for a in self.agents],
            planner=dict(self.planner),
            model=dict(self.model) if self.model else None,
            termination=dict(self.termination) if self.termination else None,
            prompt_template=self.prompt_template or None,
            context=dict(self.context) if self.context else None,
            moderated=self.moderated,
            **dict(self.settings or {}),
        )


def draft_from_template(
    template: RoomTemplate, name: str | None = None, **changes: Any
) -> RoomDraft:
    values: dict[str, Any] = {
        "name": name or template.title,
        "agents": template.agent_dicts(),
        "planner": dict(template.planner),
        "termination": dict(template.termination) if template.termination else None,
        "moderated": template.moderated,
    }
    values.update(changes)
    if values.get("model") is None and template.offline_parameters:
        from conversation.models import default_model, is_offline

        if is_offline(default_model()):
            values["model"] = {
                "service": "offline",
                "model": "offline",
                "parameters": dict(template.offline_parameters),
            }
    return RoomDraft(**values)


def create_room(
    db: Any,
    draft: RoomDraft,
    *,
    opening: str | None = None,
    speaker: str = "user",
    request_id: str | None = None,
    experiment_id: int | None = None,
    condition: str | None = None,
    replicate: int | None = None,
) -> Any:
    """Store the room and, with an opening message, post it (which starts the room)."""
    from conversation.rooms.config import request_settings
    from conversation.rooms.room import Room

    config = draft.config()
    room = Room.create(
        db,
        name=draft.name,
        agents=[spec.to_dict() for spec in config.roster],
        planner=dict(config.planner),
        model=dict(config.model),
        termination=dict(config.termination) if config.termination else None,
        moderated=config.moderated,
        prompt_template=config.prompt_template,
        context=dict(config.context) if config.context else None,
        experiment_id=experiment_id,
        condition=condition,
        replicate=replicate,
        **request_settings(config.to_dict()),
    )
    if opening and opening.strip():
        room.post(opening.strip(), speaker=speaker, request_id=request_id)
    return room


# --- prompts and turn details ----------------------------------------------------------------


def preview_prompt(config: Any, rows: Sequence[Any], speaker: str) -> Any:
    """The prompt ``speaker`` would be asked next after ``rows`` (a ``TurnPrompt``)."""
    from conversation.rooms.log import log_view
    from conversation.rooms.prompt import build_turn_prompt

    return build_turn_prompt(config, log_view(config.names, rows), speaker)


def sample_rows(opening: str, speaker: str = "user") -> list[Event]:
    """A one-message log for previewing a room that does not exist yet."""
    return [Event(room_id=0, seq=1, kind="human", speaker=speaker, content=opening or "Hello.")]


def turn_prompt(config: Any, rows: Sequence[Any], event: Any) -> Any:
    """The prompt a stored turn was asked: rebuilt from the events before it only (the same
    inputs a resumed turn gets), with the denial feedback it carried."""
    from conversation.rooms.log import log_view
    from conversation.rooms.prompt import build_summary_prompt, build_turn_prompt, denial_feedback

    view = log_view(config.names, rows, before_seq=event.seq)
    if is_summary(event):
        return build_summary_prompt(config, view)
    denials = (event.data or {}).get("denials") or []
    return build_turn_prompt(config, view, event.speaker, feedback=denial_feedback(denials))


def is_summary(event: Any) -> bool:
    """A turn that summarised earlier messages for the context window (not an agent speaking)."""
    return (event.data or {}).get("event") == "summary"


def turn_details(event: Any) -> dict[str, Any]:
    """The per-turn facts the Room page shows on demand."""
    error = event.error or {}
    return {
        "seq": event.seq,
        "speaker": event.speaker,
        "state": event.state,
        "model": event.model,
        "input tokens": event.input_tokens,
        "output tokens": event.output_tokens,
        "cost ($)": event.cost,
        "from the model cache": (event.data or {}).get("cache_hit"),
        "latency (s)": round(event.latency, 3) if event.latency is not None else None,
        "attempts": event.attempts,
        "error": f"{error.get('type')}: {error.get('message')}" if error else None,
        "request id": event.request_id,
        "saw (seqs)": ", ".join(str(s) for s in (event.saw or [])) or "-",
        "chosen because": (event.data or {}).get("chosen_because") or "-",
    }


def export_text(room: Any) -> str:
    """``room.export()`` as indented JSON text (versioned; never a key)."""
    return json.dumps(room.export(), indent=2, ensure_ascii=False, default=str)


# --- overview --------------------------------------------------------------------------------


def overview(db: Any, limit: int = 50) -> pd.DataFrame:
    """Rooms for the Home page: status, activity, messages, cost so far, and the last message."""
    from storage import frames

    rooms = frames.rooms_summary(db, limit=limit)
    if rooms.empty:
        return rooms
    last_messages, activities = [], []
    for row in rooms.itertuples():
        tail = repo.events(db, int(row.room_id), after_seq=max(0, int(row.last_seq) - 5))
        said = [e for e in tail if e.kind == "human" or (e.kind == "agent" and e.state == "done")]
        last = said[-1] if said else None
        last_messages.append(f"{last.speaker}: {last.content[:80]}" if last else "")
        activities.append(tail[-1].activity if tail else 0)
    rooms = rooms.assign(activity=activities, last_message=last_messages)
    return rooms[
        ["room_id", "name", "status", "activity", "messages", "cost", "last_message",
         "stop_reason", "updated_at"]
    ]  # fmt: skip


__all__ = [
    "PLANNER_LABELS",
    "RoomDraft",
    "context_dict",
    "create_room",
    "describe_termination",
    "draft_from_template",
    "export_text",
    "is_summary",
    "overview",
    "planner_dict",
    "preview_prompt",
    "sample_rows",
    "termination_dict",
    "turn_details",
    "turn_prompt",
]
