"""Studies with real participants (docs/studies.md): a study is an experiment whose rooms have
human seats next to agent seats; people join by a link, consent, wait in a lobby, are assigned a
condition and a seat by a recorded randomisation, chat, and leave with a completion code.

By concept: ``definition/`` (the study file at the door), ``record`` (a launched study and the
definition in force), ``participant/`` (a participant's token, acts and page, and what a process serving many
pages reads for all of them at once: ``watch``), ``clock/``
(everything time-driven: ``tick``, the lobby's draw, seats people left, ordered turns),
``payouts/`` (what each person earns under ``[payouts]``, Prolific's bonus file),
``researcher/`` (launch and switches, amendments, the listing, the monitor, the exports),
``preregistration/`` (a frozen bundle and the rule that refuses an edit of its fields),
``errors`` (the refusals a participant reads) and ``cli`` (``python -m conversation.study
validate|freeze|launch|package|replicate``).
"""

from conversation.study.clock.absence import BEAT_SECONDS, GAP_SECONDS, note_service_up
from conversation.study.clock.attention import AttentionPrompt, send_attention_check
from conversation.study.clock.lobby import Draw, draw_group, replay_draw
from conversation.study.clock.ticks import TickReport, tick, tick_all
from conversation.study.consent import ConsentRecord, consent_versions
from conversation.study.definition.document import (
    StudyDefinition,
    definition_from_dict,
    definition_problems,
    load_definition,
    read_definition,
)
from conversation.study.definition.schema import DEFINITION_VERSION, EXIT_STATUSES
from conversation.study.errors import NotAParticipant, NotNow, StudyRefused, TooFast, WrongStage
from conversation.study.help import HelpMessage, help_thread, mark_help_read, message_participant
from conversation.study.participant.acts import (
    RECRUITMENT_KEYS,
    ParticipantToken,
    answer_attention_check,
    answer_survey,
    decline,
    give_consent,
    heartbeat,
    join,
    leave_room,
    message_researcher,
    post_as_participant,
)
from conversation.study.participant.view import (
    ExitInfo,
    ParticipantView,
    SeenMessage,
    participant_view,
    view_is_current,
)
from conversation.study.participant.watch import (
    ChangeListener,
    DraftRule,
    SeatDraft,
    draft_rule,
    note_present,
    on_local_commit,
    seat_drafts,
    view_markers,
)
from conversation.study.payouts import (
    Earnings,
    PayoutLine,
    PayoutReport,
    PersonPayout,
    prolific_bonus_csv,
    study_payouts,
)
from conversation.study.preregistration import (
    Bundle,
    FrozenFieldChanged,
    freeze,
    load_bundle,
    read_bundle,
)
from conversation.study.record import Study, ended_study_room, get_study
from conversation.study.researcher.acts import end_conversation, remove_participant
from conversation.study.researcher.amend import (
    Amendment,
    Preregistration,
    amend_study,
    launch_frozen,
    study_amendments,
    study_preregistration,
)
from conversation.study.researcher.attrition import BEFORE_ASSIGNMENT, AttritionRow
from conversation.study.researcher.exports import (
    participants_table,
    payouts_table,
    recruitment_table,
    study_events_table,
    survey_answers,
    survey_results,
    transcripts_table,
)
from conversation.study.researcher.launch import (
    StudyLinks,
    close_study,
    launch_study,
    lock_study,
    set_cap,
    study_links,
    unlock_study,
    update_definition,
)
from conversation.study.researcher.listing import StudySummary, list_studies
from conversation.study.researcher.monitor import GroupRow, Monitor, MonitorRow, study_monitor
from conversation.study.signals import (
    SIGNAL_COLUMNS,
    ExclusionReport,
    SignalSummary,
    exclusions,
    signal_summaries,
    signals_table,
)
from conversation.study.withdrawal import WithdrawalReport, withdraw, withdraw_participant

__all__ = [
    "AttentionPrompt",
    "answer_attention_check",
    "send_attention_check",
    "BEAT_SECONDS",
    "BEFORE_ASSIGNMENT",
    "DEFINITION_VERSION",
    "EXIT_STATUSES",
    "GAP_SECONDS",
    "RECRUITMENT_KEYS",
    "SIGNAL_COLUMNS",
    "Amendment",
    "AttritionRow",
    "ChangeListener",
    "DraftRule",
    "Bundle",
    "ConsentRecord",
    "Draw",
    "Earnings",
    "ExclusionReport",
    "ExitInfo",
    "FrozenFieldChanged",
    "GroupRow",
    "HelpMessage",
    "Monitor",
    "MonitorRow",
    "NotAParticipant",
    "NotNow",
    "ParticipantToken",
    "ParticipantView",
    "PayoutLine",
    "PayoutReport",
    "PersonPayout",
    "SeatDraft",
    "Preregistration",
    "SeenMessage",
    "SignalSummary",
    "Study",
    "StudyDefinition",
    "StudyLinks",
    "StudyRefused",
    "StudySummary",
    "TickReport",
    "TooFast",
    "WithdrawalReport",
    "WrongStage",
    "amend_study",
    "answer_survey",
    "close_study",
    "consent_versions",
    "decline",
    "definition_from_dict",
    "definition_problems",
    "draft_rule",
    "draw_group",
    "replay_draw",
    "end_conversation",
    "exclusions",
    "ended_study_room",
    "freeze",
    "get_study",
    "give_consent",
    "heartbeat",
    "help_thread",
    "join",
    "leave_room",
    "launch_frozen",
    "launch_study",
    "list_studies",
    "load_bundle",
    "load_definition",
    "lock_study",
    "mark_help_read",
    "message_participant",
    "message_researcher",
    "note_present",
    "note_service_up",
    "on_local_commit",
    "participant_view",
    "participants_table",
    "payouts_table",
    "post_as_participant",
    "prolific_bonus_csv",
    "study_preregistration",
    "read_bundle",
    "read_definition",
    "recruitment_table",
    "remove_participant",
    "seat_drafts",
    "set_cap",
    "signal_summaries",
    "signals_table",
    "study_amendments",
    "study_events_table",
    "study_links",
    "study_monitor",
    "study_payouts",
    "survey_answers",
    "survey_results",
    "tick",
    "tick_all",
    "transcripts_table",
    "unlock_study",
    "update_definition",
    "view_is_current",
    "view_markers",
    "withdraw",
    "withdraw_participant",
]
