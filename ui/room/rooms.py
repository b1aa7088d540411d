"""Room helpers for the pages: settings from form values, creating a room (optionally from a
template) and opening it, prompt previews, per-turn details, the Home page's overview. No Streamlit.

The prompt text itself lives in the engine (``conversation.rooms.prompt``): previews call the same
``build_turn_prompt`` a worker uses, so what the page shows is what the agent is (or was) asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pandas as pd

from conversation import browse
from conversation.planning.registry import planner_label
from conversation.termination.conditions import describe_termination
from conversation.vocabulary import (
    REOPENED_BY_A_MESSAGE,
    RUNNABLE_ROOM_STATUSES,
    Reading,
    RoomStatus,
    entry_of,
)

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


#: Statuses in which a room takes no turn until a person's message re-opens it: those a message
#: (re)starts (the vocabulary's one set), but for a room already running.
REOPENED_BY_A_POST = REOPENED_BY_A_MESSAGE - RUNNABLE_ROOM_STATUSES


@dataclass(frozen=True)
class NoAnswer:
    """Why no agent would answer a message posted now, as the post form says it."""

    reason: str  # the stop reason the room would end with at once
    can_continue: bool  # a turn limit is reached: "continue for N more turns" would help
    default_turns: int  # the room's original turn limit, else 4

    @property
    def text(self) -> str:
        if self.can_continue:
            return (
                f"This room reached its limit ({self.reason}): the agents will not answer a new "
                "message unless you continue for more turns."
            )
        return (
            f"This room reached its limit ({self.reason}): the agents will not answer a new "
            "message. Raise the limit in the room's settings to go on."
        )


def no_answer(room: Any, status: str) -> NoAnswer | None:
    """What the post form must say before a person sends to ``room`` (a ``Room``) in ``status``:
    None when the agents answer a new message."""
    from conversation.rooms.continuing import continued_termination, turns_taken
    from conversation.rooms.log import max_turns_of

    if status not in REOPENED_BY_A_POST:
        return None
    reason = room.no_answer_reason()
    if reason is None:
        return None
    config, events = room.config, room.events()
    can = continued_termination(config.termination, turns_taken(config, events), 1) is not None
    first = room.config_versions()[0]["config"].get("termination")
    return NoAnswer(reason, can, max_turns_of(first) or 4)


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


def budget_dict(dollars: float | None, tokens: int | None) -> dict[str, Any] | None:
    """A room budget from the form's two fields (0 or empty: no limit of that kind)."""
    if not dollars and not tokens:
        return None
    return {"max_tokens": int(tokens) if tokens else None, "max_dollars": dollars or None}


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
    budget: Mapping[str, Any] | None = None  # {"max_tokens": ..., "max_dollars": ...}

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
            budget=dict(self.budget) if self.budget else None,
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
    actor: Any = None,
) -> Any:
    """Store the room and, with an opening message, post it (which starts the room). ``actor``
    (``conversation.access.Actor``) is checked by the engine and recorded as who posted."""
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
        budget=config.budget,
        experiment_id=experiment_id,
        condition=condition,
        replicate=replicate,
        **request_settings(config.to_dict()),
        actor=actor,
    )
    if opening and opening.strip():
        room.post(opening.strip(), speaker=speaker, request_id=request_id, actor=actor)
    return room


# --- prompts and turn details ----------------------------------------------------------------


def preview_prompt(config: Any, rows: Sequence[Any], speaker: str) -> Any:
    """The prompt ``speaker`` would be asked next after ``rows`` (a ``TurnPrompt``)."""
    from conversation.rooms.log import log_view
    from conversation.rooms.prompt import build_turn_prompt

    return build_turn_prompt(config, log_view(config.names, rows), speaker)


def sample_rows(opening: str, speaker: str = "user") -> list[Any]:
    """A one-message log for previewing a room that does not exist yet."""
    return browse.sample_log(opening, speaker)


def turn_prompt(config: Any, rows: Sequence[Any], event: Any) -> Any:
    """The prompt a stored turn was asked: rebuilt by its kind's handler from the events before
    it only, exactly as a resumed turn is asked again (with the denial feedback it carried)."""
    from conversation.rooms.engine.kinds import handler_of
    from conversation.rooms.log import log_view

    view = log_view(config.names, rows, before_seq=event.seq)
    return handler_of(event).prompt(config, view, event)


def is_summary(event: Any) -> bool:
    """A turn that summarised earlier messages for the context window (not an agent speaking)."""
    entry = entry_of(event)
    return entry.is_turn and entry.reading is Reading.SUMMARY


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
        "saw (seqs)": _seqs(event.saw or []),
        "chosen because": (event.data or {}).get("chosen_because") or "-",
        "why a pass": (event.data or {}).get("pass_reason") or "-",
    }


#: A turn's facts list what it saw seq by seq up to this many messages, then as a count and range.
SAW_LISTED = 20


def _seqs(saw: list[int]) -> str:
    """The seqs a turn saw, on one line: listed, or counted when a long room's turn saw many."""
    if not saw:
        return "-"
    if len(saw) <= SAW_LISTED:
        return ", ".join(map(str, saw))
    return f"{len(saw):,} messages, from #{min(saw)} to #{max(saw)}"


def export_text(room: Any) -> str:
    """``room.export()`` as indented JSON text (versioned; never a key)."""
    return json.dumps(room.export(), indent=2, ensure_ascii=False, default=str)


# --- overview --------------------------------------------------------------------------------


HOME_PAGE_SIZE = 25


def day_bound(day: date | None, *, next_day: bool = False) -> datetime | None:
    """Midnight UTC at the start of ``day`` (or of the day after it): a date filter's bound."""
    if day is None:
        return None
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start + timedelta(days=1) if next_day else start


OVERVIEW_COLUMNS = [
    "room_id", "name", "status", "experiment_id", "condition", "activity", "messages", "cost",
    "unpriced_calls", "last_message", "stop_reason", "created_at", "updated_at",
]  # fmt: skip


def cost_texts(frame: pd.DataFrame) -> list[str]:
    """Each room's cost as a person reads it (``format_cost``): an unknown price is never $0."""
    from conversation.termination.budget import format_cost

    unpriced = frame["unpriced_calls"] if "unpriced_calls" in frame else [0] * len(frame)
    return [format_cost(c, n) for c, n in zip(frame["cost"], unpriced, strict=True)]


def overview(
    db: Any, limit: int = HOME_PAGE_SIZE, offset: int = 0, **filters: Any
) -> tuple[pd.DataFrame, int]:
    """One page of rooms for the Home page (status, activity, messages, cost so far, the last
    message) and how many rooms match in all. ``filters``: ``sort`` and the keywords of
    :func:`storage.rooms.listing.room_conditions` (search, status, experiment, dates, archived, ...).
    Filtering, ordering, paging and the statistics are SQL (three queries for the page)."""
    total = browse.count_rooms(db, **{k: v for k, v in filters.items() if k != "sort"})
    rooms = browse.rooms_summary(db, limit=limit, offset=offset, **filters)
    if rooms.empty:
        return rooms.reindex(columns=OVERVIEW_COLUMNS), total
    tails = browse.last_messages(db, [int(r) for r in rooms["room_id"]])
    said = [
        f"{speaker}: {str(content)[:80]}" if isinstance(content, str) else ""
        for speaker, content in zip(tails["speaker"], tails["content"], strict=True)
    ]
    rooms = rooms.merge(
        tails[["room_id", "activity"]].assign(last_message=said), on="room_id", how="left"
    )
    return with_status_words(db, rooms[OVERVIEW_COLUMNS]), total


def with_status_words(db: Any, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (``room_id`` and ``status`` columns) with each status in the words every page
    uses (``rooms.status_words``), a running room waiting for its model server said so."""
    from conversation.rooms.status_words import status_words

    if frame.empty:
        return frame
    ids = [int(r) for r in frame["room_id"]]
    running = [i for i, s in zip(ids, frame["status"], strict=True) if s == RoomStatus.RUNNING]
    waiting = browse.waiting_for_server(db, running) if running else {}
    return frame.assign(status=status_words(ids, list(frame["status"]), waiting))


def status_counts(table: pd.DataFrame, by_status: Mapping[str, int]) -> str:
    """``ended: 3 · running: 1 · waiting for the model server: 1``: the rooms per status word
    (from ``table``'s words where it lists every room, else ``by_status`` in words)."""
    from conversation.rooms.status_words import status_word

    if not table.empty and len(table) >= sum(by_status.values()):
        counts = table["status"].value_counts().to_dict()
    else:
        counts = {}
        for status, count in by_status.items():
            word = status_word(status)
            counts[word] = counts.get(word, 0) + count
    return " · ".join(f"{word}: {count}" for word, count in sorted(counts.items()))


def picker_labels(
    db: Any, *, search: str = "", page: int = 1, page_size: int = 100, archived: bool | None = False
) -> tuple[dict[int, str], int]:
    """The Room page's picker: one page of rooms matching ``search`` (name, condition or id), as
    ``{id: "#id name"}``, and how many match in all (every room is reachable by paging)."""
    filters: dict[str, Any] = {"search": search or None, "archived": archived}
    total = browse.count_rooms(db, **filters)
    found = browse.list_rooms(db, limit=page_size, offset=(max(page, 1) - 1) * page_size, **filters)
    return {int(r.id or 0): f"#{r.id} {r.name}" for r in found}, total


__all__ = [
    "PLANNER_LABELS",
    "SAW_LISTED",
    "RoomDraft",
    "budget_dict",
    "context_dict",
    "create_room",
    "day_bound",
    "describe_termination",
    "NoAnswer",
    "no_answer",
    "draft_from_template",
    "export_text",
    "is_summary",
    "overview",
    "picker_labels",
    "planner_dict",
    "preview_prompt",
    "sample_rows",
    "termination_dict",
    "turn_details",
    "turn_prompt",
]
