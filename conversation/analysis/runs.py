"""An analysis run: one follow-up question asked about many stored rooms, every answer stored.

``start_analysis`` stores the analysis with its planned rooms (one ``planned`` answer each) and
returns at once; a runner (the app's background runner, ``conversation.worker.analyses``, or any
caller of ``ask_next``) claims a chunk of the answers still to ask, asks them in one EDSL job and
stores each answer, or the room's error with its reason and the raw reply. ``run_analysis`` does
both in the caller's thread (``wait=True``, for library callers); ``retry_failed_answers`` plans
the failed answers again. The analysis is ``running`` while answers are to come, then ``done``,
or ``failed`` while some answers failed (a successful retry makes it ``done``). What is missing
is always known from storage: ``progress_of`` counts it. The pages call these; no page writes
an answer.

Guarantees (``storage.research.analysis_runs``): two runners never ask the same room at once; a runner
that dies mid-chunk leaves its rooms to be asked again by the next one (at once when its process
is gone from this host, else when its claim expires); rooms already answered are never asked
again by a resumed run.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import storage
from conversation.access.roles import Action, require
from conversation.boundary import storage_errors, translated
from conversation.exceptions import ConversationValueError, NotFoundError
from conversation.vocabulary import ANSWER_STATES, MESSAGE_EVENT_KINDS, AnswerState, entries_of

log = logging.getLogger(__name__)

#: Rooms asked per EDSL job, and claimed at once by a runner (progress is shown between them).
ANALYSIS_CHUNK = 5
#: Seconds a runner's claim on the rooms it asks lasts; renewed every third of it while the job
#: runs, so the rooms of a runner that died are asked again within this time.
ANSWER_CLAIM_SECONDS = 60.0

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
    for event in entries_of(storage.events(db, room_id, kinds=MESSAGE_EVENT_KINDS)):
        if not event.is_message:
            continue
        index = names.index(event.speaker) if event.speaker in names else None
        records.append(transcript_record(event.seq, event.speaker, index, event.content))
    return {"transcript": render_transcript(records), "room_id": room_id}


def start_analysis(
    db: Any,
    spec: dict[str, Any],
    room_ids: Sequence[int],
    *,
    model: dict[str, Any] | None = None,
    experiment_id: int | None = None,
    actor: Any = None,
) -> int:
    """Store the analysis of ``spec`` with every room of ``room_ids`` planned, and return its id
    at once (a runner asks them). ``actor`` needs the researcher role (``PermissionDenied``
    before anything is stored); the question is validated first (``ConversationValueError``)."""
    from conversation.analysis.questions import question_from_spec

    require(actor, Action.RUN_ANALYSIS)
    question_from_spec(spec)
    rooms = list(dict.fromkeys(int(r) for r in room_ids))
    if not rooms:
        raise ConversationValueError("room_ids is empty; pass the rooms to ask about")
    return int(
        storage.create_analysis(
            db,
            spec["text"][:200],
            spec,
            model=model,
            experiment_id=experiment_id,
            status="running",
            room_ids=rooms,
        )
    )


def run_analysis(
    db: Any,
    spec: dict[str, Any],
    room_ids: Sequence[int],
    *,
    model: dict[str, Any] | None = None,
    experiment_id: int | None = None,
    progress: Progress | None = None,
    actor: Any = None,
    wait: bool = True,
) -> int:
    """Ask ``spec`` about every room, store each answer, and return the analysis id.
    ``actor`` needs the researcher role (``PermissionDenied`` before anything is stored).

    With ``wait`` (the default) the rooms are asked here, in chunks of ``ANALYSIS_CHUNK``
    (``progress(done, total)`` after each), and the analysis ends ``done``, or ``failed`` while
    some answers failed; ``wait=False`` is :func:`start_analysis` (a runner asks them). Every
    valid answer is stored; an answer that failed (EDSL's validation refused the reply, or the
    call failed) is stored as the room's error with its reason and the raw reply, so
    ``retry_failed_answers`` can ask again.
    """
    analysis_id = start_analysis(
        db, spec, room_ids, model=model, experiment_id=experiment_id, actor=actor
    )
    if wait:
        finish_analysis(db, analysis_id, progress=progress)
    return analysis_id


def failed_answers(db: Any, analysis_id: int) -> list[int]:
    """The rooms whose answer to the analysis failed (stored with an error), by room id."""
    return [a.room_id for a in storage.answers(db, analysis_id) if a.state == AnswerState.FAILED]


def retry_failed_answers(
    db: Any,
    analysis_id: int,
    *,
    progress: Progress | None = None,
    actor: Any = None,
    wait: bool = True,
) -> int:
    """Ask the analysis's question again for the rooms whose answer failed, with the same model;
    returns how many still fail (``wait=False``: how many were planned again, for a runner to
    ask). Valid answers already stored are not touched."""
    require(actor, Action.RUN_ANALYSIS)
    storage.get_analysis(db, analysis_id)  # AnalysisNotFound, before anything changes
    planned = storage.plan_answers_again(db, analysis_id)
    if not planned:
        return 0
    if not wait:
        return len(planned)
    return finish_analysis(db, analysis_id, progress=progress)


def finish_analysis(
    db: Any, analysis_id: int, *, progress: Progress | None = None, poll: float = 0.5
) -> int:
    """Ask, in this thread, every answer of the analysis still to ask, and wait for those
    another runner is asking; returns how many failed."""
    owner = _owner("analysis")
    total = progress_of(db, analysis_id).to_come
    done = 0
    while True:
        asked = ask_next(db, owner, analysis_id=analysis_id)
        if asked:
            done += asked
            if progress is not None:
                progress(min(done, total), total)
        elif progress_of(db, analysis_id).to_come:
            time.sleep(poll)  # another runner holds the rest: its answers (or its claim's end)
        else:
            break
    storage.settle_analysis(db, analysis_id)
    return len(failed_answers(db, analysis_id))


def ask_next(
    db: Any,
    owner: str | None = None,
    *,
    analysis_id: int | None = None,
    limit: int = ANALYSIS_CHUNK,
    claim_seconds: float = ANSWER_CLAIM_SECONDS,
) -> int:
    """Claim up to ``limit`` answers still to ask (of ``analysis_id``, else of the oldest
    analysis with some), ask them in one EDSL job and store each; how many were asked (0:
    nothing to ask now). The claim is renewed while the job runs; the analysis's status is
    settled after the chunk."""
    owner = owner or _owner("analysis")
    candidates = [analysis_id] if analysis_id is not None else storage.open_analyses(db)
    for candidate in candidates:
        rooms = storage.claim_answers(db, candidate, owner, limit=limit, ttl_seconds=claim_seconds)
        if not rooms:
            continue  # another runner took them first
        with _Heartbeat(db, candidate, owner, rooms, claim_seconds):
            _ask_claimed(db, candidate, rooms, owner)
        storage.settle_analysis(db, candidate)
        return len(rooms)
    return 0


@dataclass(frozen=True)
class AnalysisProgress:
    """How far an analysis is, counted from its stored answers."""

    answered: int = 0
    failed: int = 0
    planned: int = 0  # not asked yet
    asking: int = 0  # being asked now

    @property
    def total(self) -> int:
        return self.answered + self.failed + self.planned + self.asking

    @property
    def to_come(self) -> int:
        """Answers still to come (planned or being asked)."""
        return self.planned + self.asking

    @property
    def state(self) -> str:
        """``running`` while answers are to come, ``done with N failed``, or ``done``."""
        if self.to_come:
            return "running"
        return f"done with {self.failed} failed" if self.failed else "done"

    def summary(self) -> str:
        """E.g. "12 of 16 answered, 2 failed, 2 still being asked"."""
        parts = [f"{self.answered} of {self.total} answered"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.to_come:
            parts.append(f"{self.to_come} still being asked")
        return ", ".join(parts)


def progress_of(db: Any, analysis_id: int) -> AnalysisProgress:
    """The analysis's answers counted by state (see :class:`AnalysisProgress`)."""
    return progress_of_many(db, [analysis_id])[analysis_id]


def progress_of_many(db: Any, analysis_ids: Sequence[int]) -> dict[int, AnalysisProgress]:
    """:func:`progress_of` for several analyses in one read."""
    return {
        aid: AnalysisProgress(**{state: n for state, n in counts.items() if state in ANSWER_STATES})
        for aid, counts in storage.answer_counts(db, analysis_ids).items()
    }


def _ask_claimed(db: Any, analysis_id: int, room_ids: list[int], owner: str) -> None:
    """Ask the claimed rooms in one EDSL job and store each answer (fenced by the claim). A
    failure of the whole job (the model cannot be had, the call failed) is each room's error."""
    from conversation.analysis.questions import analyze, question_from_spec
    from conversation.models import default_model, model_label, resolve_model

    analysis = storage.get_analysis(db, analysis_id)
    spec, model = dict(analysis.question), analysis.model
    label = str((model or {}).get("model") or "default")
    try:
        chosen = resolve_model(model) if model else default_model()
        label = model_label(chosen)
        question = question_from_spec(spec)
        scenarios = _scenarios(db, room_ids)
        if not scenarios:
            return  # every room was deleted meanwhile (their answers with them)
        outcome = analyze([question], scenarios, model=chosen)
    except Exception as exc:  # a failed batch stores its error with each of its rooms
        error = {"type": type(exc).__name__, "code": getattr(exc, "code", None),
                 "message": str(exc)[:500]}  # fmt: skip
        before = {a.room_id: a.error for a in storage.answers(db, analysis_id, room_ids=room_ids)}
        for rid in room_ids:
            failed = again(before.get(rid), error)
            _record(db, analysis_id, rid, None, model=label, error=failed, claimed_by=owner)
    else:
        _store_outcome(
            db, analysis_id, question.question_name, outcome, scenarios, label, chosen, owner
        )


def _scenarios(db: Any, room_ids: list[int]) -> list[dict[str, Any]]:
    """The rooms' transcripts; a room deleted since it was planned is left out."""
    found = []
    for rid in room_ids:
        try:
            with translated():
                found.append(transcript_scenario(db, rid))
        except NotFoundError:
            log.info("analysis: room %s was deleted before it was asked", rid)
    return found


def _record(db: Any, analysis_id: int, room_id: int, answer: Any, **fields: Any) -> None:
    """Store one answer; a room (or the analysis) deleted meanwhile took its answer with it."""
    try:
        storage_errors(storage.record_answer, db, analysis_id, room_id, answer, **fields)
    except NotFoundError:
        log.info("analysis %s: room %s was deleted while asked", analysis_id, room_id)


def _owner(role: str) -> str:
    from conversation.rooms.engine.records import owner_id

    return owner_id(role)


class _Heartbeat:
    """Renews a runner's claim every third of its time while the (blocking) job runs."""

    def __init__(self, db: Any, analysis_id: int, owner: str, rooms: list[int], ttl: float):
        self._args = (db, analysis_id, owner, rooms, ttl)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="analysis-claims", daemon=True)

    def _beat(self) -> None:
        db, analysis_id, owner, rooms, ttl = self._args
        while not self._stop.wait(ttl / 3):
            try:
                storage.renew_answer_claims(db, analysis_id, owner, rooms, ttl)
            except Exception:  # the claim then expires; the answers are fenced, never doubled
                log.warning("analysis %s: claims not renewed", analysis_id, exc_info=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _store_outcome(
    db: Any,
    analysis_id: int,
    name: str,
    outcome: Any,
    scenarios: list[dict[str, Any]],
    label: str,
    model: Any = None,
    owner: str | None = None,
) -> None:
    """One batch's answers stored: each valid answer with its tokens and cost (``None``: a
    price that is not known, ``calls.known_cost``), and each failure as its room's error; each
    only while ``owner`` still holds the room's claim."""
    from conversation.models.calls import known_cost

    for row in outcome.rows:
        if name in row:
            usage = row.get(f"{name}_usage") or {}
            _record(
                db,
                analysis_id,
                int(row["room_id"]),
                _json_value(row[name]),
                comment=row.get(f"{name}_comment"),
                model=label,
                input_tokens=_count(usage.get("input_tokens")),
                output_tokens=_count(usage.get("output_tokens")),
                cost=known_cost(model, usage.get("cost")) if model is not None else None,
                claimed_by=owner,
            )
    failed = {int(scenarios[f.scenario_index]["room_id"]): f for f in outcome.failures}
    before = (
        {a.room_id: a.error for a in storage.answers(db, analysis_id, room_ids=failed)}
        if failed
        else {}
    )
    for rid, failure in failed.items():
        error = again(before.get(rid), failure.to_error())
        _record(db, analysis_id, rid, None, model=label, error=error, claimed_by=owner)


def again(previous: Any, error: dict[str, Any]) -> dict[str, Any]:
    """A failed answer's error after ``previous`` (the error of the try before, kept while it
    was asked again): the tries counted, and a retry that failed the same way (the same code)
    says so, so nobody reads a new failure into the same one."""
    if not isinstance(previous, dict) or not previous.get("code"):
        return error
    tries = int(previous.get("tries") or 1) + 1
    same = previous.get("code") == error.get("code") and previous.get("same", True)
    if not same:
        return {**error, "tries": tries, "same": False}
    message = f"asked {tries} times, failing the same way each time: {error.get('message', '')}"
    return {**error, "tries": tries, "same": True, "message": message[:1000]}


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _json_value(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


__all__ = [
    "ANALYSIS_CHUNK",
    "ANSWER_CLAIM_SECONDS",
    "AnalysisProgress",
    "ask_next",
    "failed_answers",
    "finish_analysis",
    "progress_of",
    "progress_of_many",
    "retry_failed_answers",
    "roster",
    "run_analysis",
    "start_analysis",
    "transcript_scenario",
]
