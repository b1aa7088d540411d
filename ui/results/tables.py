"""What the Results page needs beyond raw frames: table shaping, chart-click filters, the pickers'
choices, a question spec from the form. No Streamlit here. The analysis run and the exports are
``conversation.analysis``'s (re-exported here under their old names)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from conversation import browse
from conversation.analysis.exports import export_edsl_results, export_json
from conversation.analysis.runs import (
    failed_answers,
    retry_failed_answers,
    roster,
    run_analysis,
    transcript_scenario,
)
from conversation.vocabulary import ROOM_STATUSES, AnalysisStatus

STATUSES = ROOM_STATUSES
#: The key of the rooms table the page shows first (a static table: ui.results.static_table).
ROOMS_TABLE_KEY = "res-rooms-static"
QUESTION_TYPES = {
    "Yes / no": "yes_no",
    "Free text": "free_text",
    "Multiple choice": "multiple_choice",
    "Number": "numerical",
}


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
        from .charts import charted_reasons

        out = out[charted_reasons(out).isin(list(stop_reasons))]
    if conditions:
        labels = out["condition"].fillna("(none)").astype(str)
        out = out[labels.isin([str(c) for c in conditions])]
    return out


def rooms_table(rooms: pd.DataFrame) -> pd.DataFrame:
    """The rooms table as shown and exported (readable column order)."""
    columns = [
        "room_id", "name", "status", "stop_reason", "experiment_id", "short", "condition",
        "replicate",
        "messages", "human_messages", "agent_messages", "passes", "failed_turns", "near_copies",
        "words",
        "input_tokens", "output_tokens", "cost", "mean_latency", "created_at", "updated_at",
    ]  # fmt: skip
    from conversation.rooms.status_words import status_word

    shown = rooms[[c for c in columns if c in rooms]]
    if "status" in shown and not shown.empty:  # in the words every page uses: "ended"
        shown = shown.assign(status=shown["status"].map(status_word))
    return shown


#: The analysis answers table, what a person reads first: the answer and what went wrong, then
#: which room (its condition by short name), then the rest (at 1400 px the answer sat off screen
#: behind the room's id, its long name, the experiment id and the full condition).
ANSWER_COLUMNS = [
    "answer", "state", "error_message", "comment", "short", "room_id", "name", "replicate",
    "condition", "model", "cost", "error_type", "status", "experiment_id",
]  # fmt: skip


def answers_table(answers: pd.DataFrame, names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """An analysis's answers (``browse.analysis_frame``) as shown and downloaded
    (:data:`ANSWER_COLUMNS`; ``short``: the condition's short name)."""
    shown = answers.assign(short=answers["condition"].map(lambda c: (names or {}).get(c, c)))
    return shown[[c for c in ANSWER_COLUMNS if c in shown]]


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


def events_by_seq(db: Any, room_id: int, tail: int | None = None) -> dict[int, Any]:
    """A room's events by seq; with ``tail``, only the last ``tail`` of them (what a transcript
    shows: a 2,000-message room is not read whole to draw its last 200)."""
    after = None
    if tail is not None:
        after = max(0, browse.latest_seq(db, room_id) - tail)
    return {e.seq: e for e in browse.events(db, room_id, after_seq=after)}


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
    if experiment_id is not None and browse.get_experiment(db, experiment_id).archived_at:
        return None
    return False


def condition_names(db: Any, experiment_id: int | None) -> dict[str, str]:
    """``{condition: short name}`` of an experiment, in design order (empty for "All rooms", or
    a design without conditions): the labels of the Results tables and chart axes."""
    if experiment_id is None:
        return {}
    from conversation.experiments.design import condition_names as names_of

    try:
        return names_of(browse.get_experiment(db, experiment_id).config)
    except (LookupError, KeyError, TypeError, ValueError):
        return {}


def with_short_names(rooms: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """``rooms`` with a ``short`` column beside ``condition`` (the condition's short name)."""
    if "condition" not in rooms or rooms.empty:
        return rooms
    short = rooms["condition"].map(lambda c: names.get(c, c) if isinstance(c, str) else None)
    return rooms.assign(short=short)


def latest_analysis(db: Any, experiment_id: int | None) -> Any | None:
    """The experiment's newest analysis that has finished asking (``done``, or ``failed`` with
    some answers missing: the chart shows the answers there are), else None."""
    for found in browse.list_analyses(db, experiment_id=experiment_id, limit=20):
        if found.status in (AnalysisStatus.DONE, AnalysisStatus.FAILED):
            return found
    return None


def planned_by_label(rooms: Any, names: Mapping[str, str] | None) -> dict[str, int]:
    """How many of ``rooms`` (a frame with ``condition``) each condition's short name has: the
    n an analysis chart is planned for."""
    from .condition_charts import condition_labels

    if rooms.empty:
        return {}
    labelled, _ = condition_labels(rooms, names)
    return {str(k): int(v) for k, v in labelled["label"].value_counts().items()}


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


__all__ = [
    "ANSWER_COLUMNS",
    "answers_table",
    "QUESTION_TYPES",
    "ROOMS_TABLE_KEY",
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
