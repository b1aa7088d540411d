"""Bot and AI-use signals (issue 34): what a participant's page records about how each message
and survey answer was written (``recording``), summarised per person, and the preregistered
exclusion rules applied as a filter (``summary``). Never shown to the participant, never an
automatic decision."""

from conversation.study.signals.recording import (
    MessageSignalsIn,
    SurveySignalsIn,
    followed_honeypot,
    message_signals,
    survey_signals,
)
from conversation.study.signals.summary import (
    SIGNAL_COLUMNS,
    ExclusionReport,
    SignalSummary,
    exclusions,
    measures_of,
    signal_summaries,
    signals_table,
)

__all__ = [
    "SIGNAL_COLUMNS",
    "ExclusionReport",
    "MessageSignalsIn",
    "SignalSummary",
    "SurveySignalsIn",
    "exclusions",
    "followed_honeypot",
    "measures_of",
    "message_signals",
    "signal_summaries",
    "signals_table",
    "survey_signals",
]
