"""Studies with real participants (docs/studies.md), one module per entity: the study's row
(``study``), its participants (``participants``), its groups (``groups``), its log
(``study_log``), what a participant's page reads (``page_reads``) and a participant's posting
rate (``post_rate``). Their errors are in ``storage.errors``."""

from storage.studies.groups import (
    form_group,
    get_group,
    group_numbers,
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
    admit_participant,
    get_participant,
    list_participants,
    participant_by_token,
    update_participant,
)
from storage.studies.post_rate import PostRate, note_post
from storage.studies.study import (
    StudyCounts,
    create_study,
    get_study,
    list_studies,
    study_counts,
    update_study,
)
from storage.studies.study_log import record_study_event, study_events

__all__ = [
    "Admission",
    "ParticipantSeat",
    "ParticipantState",
    "PostRate",
    "StudyCounts",
    "admit_participant",
    "create_study",
    "form_group",
    "get_group",
    "get_participant",
    "get_study",
    "group_numbers",
    "list_groups",
    "list_participants",
    "list_studies",
    "note_post",
    "participant_by_token",
    "participant_marker",
    "participant_seat",
    "participant_state",
    "record_study_event",
    "running_groups",
    "study_counts",
    "study_events",
    "update_group",
    "update_participant",
    "update_study",
]
