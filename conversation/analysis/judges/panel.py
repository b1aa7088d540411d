"""Judge panels: one or more EDSL models score every unit (a message or a whole room) on every
dimension of a rubric, with a short reason; every score is stored per judge.

    rubric_id = save_rubric(db, rubric, experiment_id=3)
    run = run_judges(db, rubric, [Judge("a", model_a), Judge("b", model_b)], room_ids)
    retry_failed_scores(db, run.run_id)          # only the units whose score failed
    scores(db, run.rubric_id)                    # each judge's scores, and the panel's

Guarantees:
- **Stored with what made them.** A score keeps its rubric version and dimension version, the
  prompt, the judge's model spec, tokens, cost (0 for an answer from the model cache) and EDSL's
  cache keys; a failure keeps its reason and the raw reply (``value`` None).
- **Asked once.** A run asks only the (unit, judge, dimension) scores its rubric version lacks;
  after a rubric edit (a new version), a dimension whose own version did not change is carried
  over from the earlier version (``reused_from``), so only the changed dimensions are re-asked.
  ``rescore=True`` asks everything again: the answers stored in the model cache (shared with the
  rooms, ``storage.models.cache``) are loaded first, so an unchanged rubric re-run makes no model call.
- **Failures stay per unit.** A failed score (the call failed, or the reply was not on the scale)
  is stored as that unit's error; ``retry_failed_scores`` asks those units alone.
- **Independent judges.** Each judge asks at its own EDSL cache iteration (``iterations``: two
  judges on one model are two samples, not one answer cached twice); a judge whose stored
  scores are another's cached answers (``copies``, from before) is marked ``copy_of`` and left
  out of the panel and of agreement.
- **The panel** (rater ``"panel"``) is each unit's combined score: the majority label for a
  nominal dimension (no value on a tie), the median for ordinal levels (the lower middle one for
  an even count, so it stays a level), the mean for interval and ratio numbers (or the median:
  ``combine="median"``).

No pandas here (the worker can reach this package): tables and agreement over these scores are
in ``conversation.analysis.judges.tables``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import storage
from conversation.access.roles import Action, require
from conversation.analysis.judges.calls import Context, ask_chunk, preloaded_cache, save_cache
from conversation.analysis.judges.rubrics import Dimension, Rubric
from conversation.analysis.judges.units import Unit, room_units, unit_key
from conversation.boundary import storage_errors
from conversation.exceptions import ConversationValueError
from conversation.vocabulary import AnalysisStatus

PANEL = "panel"
#: Units asked per EDSL job (progress and spend are reported between jobs).
JUDGE_CHUNK = 10
MAX_JUDGES = 8
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Judge:
    """A member of a panel: a ``name`` (unique in the panel; the rater's name in agreement
    tables) and its ``model`` (an EDSL model or a model spec, see ``models.resolve_model``)."""

    name: str
    model: Any

    def spec(self) -> dict[str, Any]:
        from conversation.models import model_spec

        return model_spec(self.model)


def panel_of(judges: Iterable[Any]) -> list[Judge]:
    """A checked panel from judges, ``{"name", "model"}`` dicts, specs or models (named by their
    model label). Names must be distinct, 1-80 characters, not ``panel`` nor ``human:...``."""
    from conversation.models import model_label, resolve_model

    out: list[Judge] = []
    for item in judges:
        if isinstance(item, Judge):
            out.append(item)
        elif isinstance(item, Mapping) and "model" in item and "name" in item:
            out.append(Judge(str(item["name"]), item["model"]))
        else:
            out.append(Judge(model_label(resolve_model(item)), item))
    names = [j.name for j in out]
    if not out or len(out) > MAX_JUDGES:
        raise ConversationValueError(f"a panel has 1 to {MAX_JUDGES} judges, not {len(out)}")
    for name in names:
        if not name.strip() or len(name) > 80 or name == PANEL or name.startswith("human:"):
            raise ConversationValueError(
                f"judge name {name!r}: use 1-80 characters, not 'panel' nor 'human:...'"
            )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConversationValueError(f"judge names must be distinct; {twice} appear twice: rename")
    return out


@dataclass(frozen=True, slots=True)
class StoredRubric:
    """A stored rubric version: its row id, the rubric and when it was saved."""

    id: int
    rubric: Rubric
    experiment_id: int | None
    created_at: Any

    @property
    def label(self) -> str:
        return f"{self.rubric.name} (version {self.rubric.version})"


def save_rubric(
    db: Any, rubric: Rubric, *, experiment_id: int | None = None, actor: Any = None
) -> int:
    """Store this version of ``rubric`` (an edit is a new version; the same one is kept once)."""
    require(actor, Action.RUN_ANALYSIS)
    row = storage.save_rubric(
        db, rubric.name, rubric.version, rubric.unit, rubric.to_dict(),
        experiment_id=experiment_id,
    )  # fmt: skip
    return int(row.id or 0)


def _stored(row: Any) -> StoredRubric:
    return StoredRubric(int(row.id), Rubric.from_dict(row.definition), row.experiment_id, row.created_at)  # fmt: skip


def load_rubric(db: Any, rubric_id: int) -> StoredRubric:
    """A stored rubric version by id (``ConversationValueError`` when there is none)."""
    return _stored(storage_errors(storage.get_rubric, db, rubric_id))


def stored_rubrics(db: Any, *, experiment_id: int | None = None) -> list[StoredRubric]:
    """Every stored rubric version of an experiment (or of none), newest first."""
    return [_stored(row) for row in storage.list_rubrics(db, experiment_id=experiment_id)]


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run (or a retry) did: scores asked, carried over from an earlier version,
    answered from the model cache, still failing, and the spend (dollars; None when no price
    is known)."""

    run_id: int
    rubric_id: int
    status: str
    asked: int
    reused: int
    cached: int
    failed: int
    cost: float | None
    input_tokens: int = 0
    output_tokens: int = 0
    #: Model calls of the run whose price is not known (a self-hosted server): their dollars
    #: are not in ``cost``, which is then no total.
    unpriced: int = 0

    def describe(self) -> str:
        """The counts in one line (the spend is said by the page: ``ui.results.judges``, in
        the words every page uses for money, an unknown price never ``$0.0000``)."""
        return (
            f"run #{self.run_id}: {self.asked} asked ({self.cached} from the model cache), "
            f"{self.reused} carried over, {self.failed} failed"
        )


def summary(db: Any, run_id: int) -> RunSummary:
    """The stored counters of a run, and how many of its calls have no known price."""
    run = storage.get_judge_run(db, run_id)
    unpriced = sum(
        1
        for s in storage.judge_scores(db, run_id=run_id)
        if s.error is None and not s.cached and s.cost is None and s.reused_from is None
    )
    return RunSummary(
        int(run.id or 0), run.rubric_id, run.status, run.asked, run.reused, run.cached, run.failed,
        run.cost, run.input_tokens, run.output_tokens, unpriced,
    )  # fmt: skip


def runs(db: Any, rubric_id: int) -> list[RunSummary]:
    """The runs of a stored rubric version, newest first."""
    return [
        summary(db, int(run.id or 0)) for run in storage.list_judge_runs(db, rubric_id=rubric_id)
    ]


@dataclass(slots=True)
class _Plan:
    """The work of one run: (judge, dimension) -> units to ask; scores to carry over."""

    ask: dict[tuple[str, str], list[tuple[Unit, dict[str, Any]]]] = field(default_factory=dict)
    carry: list[dict[str, Any]] = field(default_factory=list)
    cache_keys: set[str] = field(default_factory=set)

    @property
    def total(self) -> int:
        return sum(len(units) for units in self.ask.values())


def run_judges(
    db: Any,
    rubric: Rubric,
    judges: Iterable[Any],
    room_ids: Sequence[int],
    *,
    experiment_id: int | None = None,
    rescore: bool = False,
    progress: Progress | None = None,
    actor: Any = None,
) -> RunSummary:
    """Score the units of ``room_ids`` with ``rubric`` by every judge (see the module doc)."""
    require(actor, Action.RUN_ANALYSIS)
    panel = panel_of(judges)
    rubric_id = save_rubric(db, rubric, experiment_id=experiment_id, actor=actor)
    members = [{"name": j.name, "model": j.spec()} for j in panel]
    run_id = storage.create_judge_run(db, rubric_id, members, experiment_id=experiment_id)
    units = room_units(db, room_ids, rubric.unit)
    plan = _plan(db, rubric, rubric_id, panel, units, experiment_id, rescore)
    storage.record_judge_scores(db, run_id, rubric_id, plan.carry)
    storage.update_judge_run(db, run_id, add={"reused": len(plan.carry)})
    return _ask(db, run_id, rubric, rubric_id, panel, plan, progress, actor)


def retry_failed_scores(
    db: Any,
    run_id: int,
    *,
    judges: Iterable[Any] | None = None,
    progress: Progress | None = None,
    actor: Any = None,
) -> RunSummary:
    """Ask again the scores of this run's rubric version that failed (those units alone), with
    the run's judges (or ``judges``, matched by name: a scripted test model is not stored)."""
    require(actor, Action.RUN_ANALYSIS)
    run = storage.get_judge_run(db, run_id)
    stored = load_rubric(db, run.rubric_id)
    given = {j.name: j for j in panel_of(judges)} if judges is not None else {}
    panel = [given.get(m["name"], Judge(m["name"], m["model"])) for m in run.panel]
    failed = storage.judge_scores(db, rubric_id=run.rubric_id, failed=True)
    if not failed:
        return summary(db, run_id)
    rooms = sorted({s.room_id for s in failed})
    units = {u.key: (u, s) for u, s in room_units(db, rooms, stored.rubric.unit)}
    plan = _Plan()
    for score in failed:
        if score.unit in units and score.judge in {j.name for j in panel}:
            plan.ask.setdefault((score.judge, score.dimension), []).append(units[score.unit])
    plan.cache_keys = _known_keys(db, [run.rubric_id])
    storage.update_judge_run(db, run_id, status=AnalysisStatus.RUNNING)
    return _ask(db, run_id, stored.rubric, run.rubric_id, panel, plan, progress, actor)


def _lineage(db: Any, rubric: Rubric, experiment_id: int | None) -> list[int]:
    return [int(r.id or 0) for r in storage.list_rubrics(db, experiment_id=experiment_id, name=rubric.name)]  # fmt: skip


def _known_keys(db: Any, rubric_ids: Sequence[int]) -> set[str]:
    keys: set[str] = set()
    for rubric_id in rubric_ids:
        for score in storage.judge_scores(db, rubric_id=rubric_id, failed=False):
            keys.update(k for k in (score.cache_key, score.reason_cache_key) if k)
    return keys


def _plan(
    db: Any,
    rubric: Rubric,
    rubric_id: int,
    panel: list[Judge],
    units: list[tuple[Unit, dict[str, Any]]],
    experiment_id: int | None,
    rescore: bool,
) -> _Plan:
    """Which scores to ask and which to carry over from an earlier version of the rubric."""
    lineage = _lineage(db, rubric, experiment_id)  # newest first: this version, then older
    have: dict[tuple[str, str, str, str], Any] = {}
    for rid in reversed(lineage):  # newer versions overwrite older ones
        for score in storage.judge_scores(db, rubric_id=rid, failed=False):
            have[(score.unit, score.judge, score.dimension, score.dimension_version)] = score
    plan = _Plan(cache_keys=_known_keys(db, lineage))
    specs = {j.name: j.spec() for j in panel}
    for judge in panel:
        for dimension in rubric.dimensions:
            version = dimension.version(rubric.unit)
            for unit, scenario in units:
                found = have.get((unit.key, judge.name, dimension.name, version))
                if found is not None and found.model == specs[judge.name] and not rescore:
                    if found.rubric_id != rubric_id:
                        plan.carry.append(_carried(found, rubric.version))
                    continue
                plan.ask.setdefault((judge.name, dimension.name), []).append((unit, scenario))
    return plan


def _carried(score: Any, rubric_version: str) -> dict[str, Any]:
    row = {name: getattr(score, name) for name in storage.SCORE_FIELDS}
    row.update(rubric_version=rubric_version, reused_from=score.reused_from or score.id, cost=0.0)
    return row


def _ask(
    db: Any,
    run_id: int,
    rubric: Rubric,
    rubric_id: int,
    panel: list[Judge],
    plan: _Plan,
    progress: Progress | None,
    actor: Any,
) -> RunSummary:
    from conversation.models import model_label, resolve_model

    cache = preloaded_cache(db, plan.cache_keys)
    by_name = {j.name: j for j in panel}
    iteration = iterations(panel)
    done, total = 0, plan.total
    for (judge_name, dimension_name), units in plan.ask.items():
        judge = by_name[judge_name]
        model = resolve_model(judge.model)
        context = Context(
            rubric, rubric.dimension(dimension_name), judge_name, judge.spec(), model_label(model),
            iteration=iteration[judge_name],
        )  # fmt: skip
        for start in range(0, len(units), JUDGE_CHUNK):
            chunk = units[start : start + JUDGE_CHUNK]
            rows = ask_chunk(model, cache, context, chunk, actor)
            storage.record_judge_scores(db, run_id, rubric_id, rows)
            save_cache(db, cache)
            _count(db, run_id, rows)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    failed = len(storage.judge_scores(db, rubric_id=rubric_id, failed=True))
    storage.update_judge_run(
        db,
        run_id,
        status=AnalysisStatus.FAILED if failed else AnalysisStatus.DONE,
        add={"failed": failed},
    )
    return summary(db, run_id)


def iterations(panel: Sequence[Judge]) -> dict[str, int]:
    """Each judge's EDSL cache iteration: how many judges before it have the same model spec.
    The panel's default (two judges on one model) sends identical prompts; at one iteration
    the second judge's scores were the first's cached answers, and the agreement between the
    two "raters" was the cache's (alpha 1.00). Each judge samples on its own instead."""
    seen: list[dict[str, Any]] = []
    out: dict[str, int] = {}
    for judge in panel:
        spec = judge.spec()
        out[judge.name] = seen.count(spec)
        seen.append(spec)
    return out


def copies(rows: Iterable[Any]) -> dict[str, str]:
    """``{judge: the earlier judge it copies}``: a judge whose every score shares its cache key
    (the same cached answer) with an earlier judge's score of the same unit and dimension.
    Such a judge is no independent rater (scores stored before each judge had its own cache
    iteration): the panel leaves it out, and so does agreement."""
    keys: dict[str, dict[tuple[str, str], str | None]] = {}
    first: dict[str, int] = {}  # a judge's first stored score: who came first
    for row in rows:
        keys.setdefault(row.judge, {})[(row.unit, row.dimension)] = row.cache_key
        first[row.judge] = min(first.get(row.judge, row.id or 0), row.id or 0)
    judges = sorted(keys, key=lambda judge: first[judge])
    out: dict[str, str] = {}
    for position, judge in enumerate(judges):
        mine = keys[judge]
        for earlier in judges[:position]:
            theirs = keys[earlier]
            shared = [k for k in mine if k in theirs]
            if shared and all(mine[k] is not None and mine[k] == theirs[k] for k in shared):
                out[judge] = out.get(earlier, earlier)
                break
    return out


def _count(db: Any, run_id: int, rows: list[dict[str, Any]]) -> None:
    costs = [r["cost"] for r in rows if r["error"] is None]
    add = {
        "asked": len(rows),
        "cached": sum(1 for r in rows if r["cached"]),
        "input_tokens": sum(r["input_tokens"] or 0 for r in rows),
        "output_tokens": sum(r["output_tokens"] or 0 for r in rows),
    }
    known = [c for c in costs if c is not None]
    storage.update_judge_run(db, run_id, add=add, add_cost=sum(known) if known else None)


# --- reading scores -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Score:
    """One rater's value for a unit on a dimension (``value`` None: failed, see ``error``)."""

    unit: str
    room_id: int
    seq: int | None
    event_id: int | None
    rater: str
    dimension: str
    value: Any
    reason: str | None = None
    rubric_version: str | None = None
    error: Mapping[str, Any] | None = None
    cost: float | None = None
    cached: bool = False
    #: The earlier judge whose cached answers these are (``copies``): not an independent rater.
    copy_of: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]


def scores(
    db: Any,
    rubric_id: int,
    *,
    room_ids: Sequence[int] | None = None,
    panel: bool = True,
    combine: str | None = None,
) -> list[Score]:
    """Every judge's score of a stored rubric version (failures included, ``value`` None), and
    with ``panel`` the panel's combined score of each unit and dimension (rater ``"panel"``)."""
    stored = load_rubric(db, rubric_id)
    rows = storage.judge_scores(db, rubric_id=rubric_id, room_ids=room_ids)
    copied = copies(rows)
    out = [
        Score(
            s.unit, s.room_id, s.seq, s.event_id, s.judge, s.dimension, s.value, s.reason,
            s.rubric_version, s.error, s.cost, s.cached, copied.get(s.judge),
        )
        for s in rows
    ]  # fmt: skip
    if panel:
        out += panel_scores(out, stored.rubric, combine=combine)
    return out


def panel_scores(
    judged: Iterable[Score], rubric: Rubric, *, combine: str | None = None
) -> list[Score]:
    """The panel's score of every unit and dimension the judges scored (see ``combined``)."""
    groups: dict[tuple[str, str], list[Score]] = {}
    for score in judged:
        if score.rater != PANEL and not score.rater.startswith("human:") and not score.copy_of:
            groups.setdefault((score.unit, score.dimension), []).append(score)
    out = []
    for (_unit, name), members in groups.items():
        values = [s.value for s in members if s.error is None and s.value is not None]
        value = combined(values, rubric.dimension(name), how=combine) if values else None
        first = members[0]
        out.append(replace(first, rater=PANEL, value=value, reason=None, error=None, cost=None, cached=False, copy_of=None))  # fmt: skip
    return out


def combined(values: Sequence[Any], dimension: Dimension, *, how: str | None = None) -> Any:
    """The panel's value from its judges' values: majority (nominal; None on a tie), the lower
    median (ordinal), the mean (interval, ratio; ``how="median"`` for the median)."""
    if how not in (None, "mean", "median", "majority"):
        raise ConversationValueError(f"combine={how!r}: use 'majority', 'median' or 'mean'")
    present = [v for v in values if v is not None]
    if not present:
        return None
    level = dimension.level
    if how == "majority" or (how is None and level == "nominal"):
        counts = Counter(present).most_common()
        tie = len(counts) > 1 and counts[0][1] == counts[1][1]
        return None if tie else counts[0][0]
    if level == "ordinal" or (how == "median" and level == "nominal"):
        order = dimension.order() or sorted(set(present))
        ranks = sorted(order.index(v) for v in present)
        return order[statistics.median_low(ranks)]
    numbers = [float(v) for v in present]
    return statistics.median(numbers) if how == "median" else statistics.fmean(numbers)


__all__ = [
    "JUDGE_CHUNK",
    "PANEL",
    "Judge",
    "RunSummary",
    "Score",
    "StoredRubric",
    "combined",
    "copies",
    "iterations",
    "load_rubric",
    "panel_of",
    "panel_scores",
    "retry_failed_scores",
    "run_judges",
    "runs",
    "save_rubric",
    "scores",
    "stored_rubrics",
    "summary",
    "unit_key",
]
