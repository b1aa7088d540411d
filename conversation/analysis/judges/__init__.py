"""Model judges: rubrics, the panels that score rooms on them, and the raters they are compared
with (docs/judges.md).

- ``rubrics``: :class:`Rubric` and :class:`Dimension` (what a unit is scored on, versioned);
- ``prompts``: the EDSL question a rubric's dimension becomes (the score and its reason in one
  answer);
- ``units``: the units a rubric scores (a message or a whole room) as EDSL scenarios;
- ``calls``: asking a chunk of units, through the shared model cache;
- ``panel``: :func:`run_judges` and the stored scores of each judge and of the panel;
- ``raters``: judges, the panel and human coders as raters of the same units;
- ``tables``: the tables and agreement over those ratings (pandas: import
  ``conversation.analysis.judges.tables`` where it is needed; a worker never loads it).

This face re-exports the panel's API and the rubric types.
"""

from conversation.analysis.judges.panel import (
    JUDGE_CHUNK,
    PANEL,
    Judge,
    RunSummary,
    Score,
    StoredRubric,
    combined,
    copies,
    iterations,
    load_rubric,
    panel_of,
    panel_scores,
    retry_failed_scores,
    run_judges,
    runs,
    save_rubric,
    scores,
    stored_rubrics,
    summary,
    unit_key,
)
from conversation.analysis.judges.rubrics import Dimension, Rubric

__all__ = [
    "JUDGE_CHUNK",
    "PANEL",
    "Dimension",
    "Judge",
    "Rubric",
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
