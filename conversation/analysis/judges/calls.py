"""One EDSL job of a judge run: a dimension's question asked about a chunk of units by one judge's
model (the score and its reason in one answer), each unit's answer turned into a score row (the
value on the scale, the reason, the prompt, tokens, cost, the cache key) or its error. A judge
asks at its own cache iteration (``Context.iteration``): two judges on one model are two samples. And the model cache around
it: the stored answers of earlier scores loaded into EDSL's cache first, its new answers stored
after (``storage.models.cache``, shared with the rooms). No pandas (the worker can reach this package).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import storage
from conversation.analysis.judges.rubrics import REASON_SUFFIX, Dimension, Rubric
from conversation.analysis.judges.units import Unit
from conversation.exceptions import ConversationValueError


def preloaded_cache(db: Any, keys: set[str]) -> Any:
    """An EDSL cache holding the stored answers of ``keys`` (earlier scores' calls)."""
    from edsl import Cache, CacheEntry

    found = storage.cached_responses(db, keys) if keys else {}
    return Cache(data={k: CacheEntry.from_dict(entry) for k, entry in found.items()})


def save_cache(db: Any, cache: Any) -> None:
    """The answers EDSL added to ``cache`` go to the persistent model cache (written once)."""
    entries = {key: entry.to_dict() for key, entry in cache.new_entries.items()}
    if entries:
        storage.store_cached_responses(db, entries)
        cache.new_entries = {}


@dataclass(frozen=True, slots=True)
class Context:
    rubric: Rubric
    dimension: Dimension
    judge: str
    spec: dict[str, Any]
    label: str
    #: EDSL's cache iteration of this judge's answers: how many judges before it in the panel
    #: have the same model (``panel.iterations``), so a second judge on a model is not served
    #: the first one's cached answers.
    iteration: int = 0


def ask_chunk(
    model: Any, cache: Any, context: Context, chunk: list[tuple[Unit, dict[str, Any]]], actor: Any
) -> list[dict[str, Any]]:
    """One EDSL job (the dimension's question x the chunk's units x one model, at the judge's
    cache iteration); one score row per unit, a failure stored as the unit's error."""
    from conversation.analysis.questions import analyze

    questions = list(context.rubric.questions_for(context.dimension.name))
    scenarios = [s for _, s in chunk]
    try:
        outcome = analyze(
            questions, scenarios, model=model, cache=cache, actor=actor, iteration=context.iteration
        )
    except Exception as exc:  # noqa: BLE001 - a failed job is each of its units' error
        error = {"type": type(exc).__name__, "code": getattr(exc, "code", None),
                 "message": str(exc)[:500], "raw": None}  # fmt: skip
        return [_row(context, unit, None, None, {}, error) for unit, _ in chunk]
    details = _details(outcome.results, context.dimension.name)
    failures = {(f.scenario_index, f.question): f for f in outcome.failures}
    rows = []
    for index, (unit, _) in enumerate(chunk):
        row = outcome.rows[index] if index < len(outcome.rows) else {}
        rows.append(_scored(context, unit, row, details.get(index, {}), failures.get((index, context.dimension.name))))  # fmt: skip
    return rows


def _scored(context: Context, unit: Unit, row: dict[str, Any], detail: dict[str, Any], failure: Any) -> dict[str, Any]:  # fmt: skip
    name = context.dimension.name
    if failure is not None or name not in row:
        error = failure.to_error() if failure is not None else {"type": "AnswerFailure", "code": "no_answer", "message": f"no answer to {name!r}", "raw": None}  # fmt: skip
        return _row(context, unit, None, None, detail, error)
    try:
        value = context.dimension.parse(row[name])
    except ConversationValueError as exc:
        error = {"type": "AnswerFailure", "code": "off_scale", "message": str(exc)[:1000], "raw": str(row[name])[:1000]}  # fmt: skip
        return _row(context, unit, None, None, detail, error)
    reason = row.get(f"{name}{REASON_SUFFIX}")
    return _row(context, unit, value, None if reason is None else str(reason)[:4000], detail, None)


def _row(
    context: Context,
    unit: Unit,
    value: Any,
    reason: str | None,
    detail: dict[str, Any],
    error: Any,
) -> dict[str, Any]:
    return {
        "room_id": unit.room_id, "event_id": unit.event_id, "seq": unit.seq, "unit": unit.key,
        "judge": context.judge, "dimension": context.dimension.name,
        "dimension_version": context.dimension.version(context.rubric.unit),
        "rubric_version": context.rubric.version, "value": value, "reason": reason,
        "prompt": detail.get("prompt"), "model": context.spec, "cost": detail.get("cost"),
        "input_tokens": detail.get("input_tokens"), "output_tokens": detail.get("output_tokens"),
        "cache_key": detail.get("cache_key"), "reason_cache_key": None,
        "cached": bool(detail.get("cached")), "reused_from": None, "error": error,
    }  # fmt: skip


def _details(results: Any, name: str) -> dict[int, dict[str, Any]]:
    """Per scenario index: the question's prompt, its cache key, tokens and cost of the call
    made (an answer from the cache costs nothing), and whether it came from the cache."""
    from conversation.analysis.question_schema import ROW_FIELD
    from conversation.models.calls import known_cost

    out: dict[int, dict[str, Any]] = {}
    for result in results:
        index = int(result["scenario"][ROW_FIELD])
        raw = result.get("raw_model_response") or {}
        keys = result.get("cache_keys") or {}
        used = result.get("cache_used_dict") or {}
        prompts = result.get("prompt") or {}
        names = (name,)
        cached = bool(used.get(name))
        costs = [known_cost(result.get("model"), raw.get(f"{n}_cost")) for n in names if not used.get(n)]  # fmt: skip
        out[index] = {
            "prompt": str(prompts.get(f"{name}_user_prompt", ""))[:20_000] or None,
            "cache_key": keys.get(name), "cached": cached,
            "cost": None if None in costs else float(sum(costs)),  # type: ignore[arg-type]
            "input_tokens": _tokens(raw, names, "input", used),
            "output_tokens": _tokens(raw, names, "output", used),
        }  # fmt: skip
    return out


def _tokens(
    raw: Mapping[str, Any], names: Sequence[str], kind: str, used: Mapping[str, Any]
) -> int:
    total = 0
    for name in names:
        value = raw.get(f"{name}_{kind}_tokens")
        if not used.get(name) and isinstance(value, int | float):
            total += int(value)
    return total


__all__ = ["Context", "ask_chunk", "preloaded_cache", "save_cache"]
