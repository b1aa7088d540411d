"""Analysis over stored transcripts: follow-up EDSL questions ("was a deal reached?") and their
stored runs, qualitative coding (codebooks, message tags), and exports for other tools.

``statistics`` (intervals and differences over pandas frames) and ``agreement`` (Cohen's kappa,
Krippendorff's alpha, their bootstrap intervals) are not re-exported here: they need pandas, which
a worker process never loads; import them as ``conversation.analysis.statistics`` and
``conversation.analysis.agreement``.
"""

from conversation.analysis.coding import (
    Tag,
    add_label,
    codebook,
    codebook_owner,
    remove_label,
    tag_message,
    tags,
    untag,
)
from conversation.analysis.exports import (
    export_edsl_results,
    export_json,
    rooms_to_results,
    stream_edsl_results,
)
from conversation.analysis.judges import Dimension, Rubric
from conversation.analysis.questions import (
    QUESTION_TYPES,
    Analysis,
    AnswerFailure,
    analyze,
    answer_from_reply,
    question_from_spec,
)
from conversation.analysis.runs import (
    ANALYSIS_CHUNK,
    AnalysisProgress,
    ask_next,
    failed_answers,
    finish_analysis,
    progress_of,
    progress_of_many,
    retry_failed_answers,
    roster,
    run_analysis,
    start_analysis,
    transcript_scenario,
)

__all__ = [
    "ANALYSIS_CHUNK",
    "QUESTION_TYPES",
    "Analysis",
    "AnalysisProgress",
    "AnswerFailure",
    "Dimension",
    "Rubric",
    "Tag",
    "add_label",
    "analyze",
    "ask_next",
    "codebook",
    "codebook_owner",
    "export_edsl_results",
    "export_json",
    "failed_answers",
    "finish_analysis",
    "answer_from_reply",
    "progress_of",
    "progress_of_many",
    "question_from_spec",
    "remove_label",
    "retry_failed_answers",
    "rooms_to_results",
    "stream_edsl_results",
    "roster",
    "run_analysis",
    "start_analysis",
    "tag_message",
    "tags",
    "transcript_scenario",
    "untag",
]
