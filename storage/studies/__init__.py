"""Studies with real participants (docs/studies.md), one module per entity: the study's row
(``study``), its participants (``participants``), its groups (``groups``), its log
(``study_log``), what a participant's page reads (``page_reads``), a participant's posting
rate (``post_rate``), the consent texts (``consent``), a preregistered study's amendments
(``amendments``), the page's signals (``signals``), a withdrawal (``withdrawal``), the
transitions that move people and groups in one write (``transitions``), the participants'
service's continuity (``continuity``) and what a process serving many participants' pages reads
and writes for all of them at once (``watch``). Their errors
are in ``storage.errors``."""

from storage.studies.amendments import amend_study, study_amendments
from storage.studies.consent import consent_version, consent_versions
from storage.studies.continuity import (
    PARTICIPANTS_SERVICE,
    ServiceContinuity,
    beat_service,
    service_continuity,
)
from storage.studies.groups import (
    form_group,
    get_group,
    group_numbers,
    group_of_room,
    list_groups,
    running_groups,
    update_group,
)
from storage.studies.page_reads import (
    ParticipantSeat,
    ParticipantState,
    participant_marker,
    participant_seat,
    participant_state,
)
from storage.studies.participants import (
    Admission,
    ParticipantMove,
    admit_participant,
    count_places,
    get_participant,
    list_participants,
    participant_by_token,
    update_participant,
)
from storage.studies.post_rate import PostRate, note_post
from storage.studies.signals import participant_signals, record_signals
from storage.studies.study import (
    StudyCounts,
    active_study_codes,
    create_study,
    get_study,
    list_studies,
    study_counts,
    update_study,
)
from storage.studies.study_log import StudyNote, record_study_event, study_events
from storage.studies.transitions import (
    ChangeRoster,
    PauseRoom,
    RoomMove,
    SeatRule,
    StopRoom,
    consent_within_cap,
    end_group,
    exit_participant,
    record_study_notes,
)
from storage.studies.watch import mark_present, participant_markers
from storage.studies.withdrawal import (
    Withdrawal,
    WithdrawalCounts,
    redact_texts,
    withdraw_participant,
)

__all__ = [
    "PARTICIPANTS_SERVICE",
    "Admission",
    "ChangeRoster",
    "ParticipantMove",
    "ParticipantSeat",
    "ParticipantState",
    "PauseRoom",
    "PostRate",
    "RoomMove",
    "SeatRule",
    "ServiceContinuity",
    "StopRoom",
    "StudyCounts",
    "StudyNote",
    "active_study_codes",
    "admit_participant",
    "beat_service",
    "consent_within_cap",
    "count_places",
    "create_study",
    "end_group",
    "exit_participant",
    "form_group",
    "get_group",
    "get_participant",
    "get_study",
    "group_numbers",
    "group_of_room",
    "list_groups",
    "list_participants",
    "list_studies",
    "mark_present",
    "note_post",
    "participant_by_token",
    "participant_marker",
    "participant_markers",
    "participant_seat",
    "participant_state",
    "record_study_event",
    "record_study_notes",
    "running_groups",
    "service_continuity",
    "study_counts",
    "study_events",
    "update_group",
    "update_participant",
    "Withdrawal",
    "WithdrawalCounts",
    "amend_study",
    "consent_version",
    "consent_versions",
    "participant_signals",
    "record_signals",
    "redact_texts",
    "study_amendments",
    "withdraw_participant",
    "update_study",
]
