"""Research over stored rooms: analyses (follow-up questions) and their background runs,
qualitative coding (codebooks, message tags), judge rubrics, runs and scores, and the provenance
columns every export shares.

The pandas tables of the results pages are :mod:`storage.research.frames` and
:mod:`storage.research.analysis_frames`, imported on their own (pandas is heavy, and a worker
process never loads it): this face does not import them.
"""

from __future__ import annotations

from storage.research.analysis import (
    answers,
    count_answers,
    create_analysis,
    delete_analysis,
    get_analysis,
    list_analyses,
    record_answer,
    update_analysis,
)
from storage.research.analysis_runs import (
    answer_claim_holders,
    answer_counts,
    claim_answers,
    free_answer_claims_of,
    open_analyses,
    plan_answers_again,
    release_answer_claims,
    renew_answer_claims,
    settle_analysis,
)
from storage.research.codes import (
    add_code_label,
    code_labels,
    delete_tag,
    get_tag,
    message_tags,
    remove_code_label,
    tag_event,
)
from storage.research.judges import (
    SCORE_FIELDS,
    create_judge_run,
    get_judge_run,
    get_rubric,
    judge_scores,
    list_judge_runs,
    list_rubrics,
    record_judge_scores,
    save_rubric,
    update_judge_run,
)
from storage.research.provenance import PROVENANCE_COLUMNS, iso, provenance_row

__all__ = [
    # analyses
    "answers",
    "count_answers",
    "create_analysis",
    "delete_analysis",
    "get_analysis",
    "list_analyses",
    "record_answer",
    "update_analysis",
    # an analysis's background run
    "answer_claim_holders",
    "answer_counts",
    "claim_answers",
    "free_answer_claims_of",
    "open_analyses",
    "plan_answers_again",
    "release_answer_claims",
    "renew_answer_claims",
    "settle_analysis",
    # qualitative coding
    "add_code_label",
    "code_labels",
    "delete_tag",
    "get_tag",
    "message_tags",
    "remove_code_label",
    "tag_event",
    # judges: rubric versions, panel runs, scores
    "SCORE_FIELDS",
    "create_judge_run",
    "get_judge_run",
    "get_rubric",
    "judge_scores",
    "list_judge_runs",
    "list_rubrics",
    "record_judge_scores",
    "save_rubric",
    "update_judge_run",
    # provenance
    "PROVENANCE_COLUMNS",
    "iso",
    "provenance_row",
]
