"""The researcher's acts on a study's people and groups: remove a participant, end a group's
conversation now. Each needs the moderator role, is one write, and is in the study's log with who
did it. (Messages to a participant are the help channel's: ``study.help``.)
"""

from __future__ import annotations

import storage
from conversation.access.roles import Action, Actor, require, who
from conversation.boundary import translated
from conversation.exceptions import ConversationStateError, ConversationValueError
from conversation.study.clock.seats import leave
from conversation.study.clock.ticks import finish_group
from conversation.study.record import get_study, member, study_definition
from conversation.text.limits import MAX_STOP_REASON_CHARS, check_text
from conversation.vocabulary import ACTIVE_STAGES, ExitStatus, GroupStatus, ParticipantStage

#: The stop reason of a conversation the researcher ended.
ENDED_BY_RESEARCHER = "ended by the researcher"


def remove_participant(
    db: storage.Database,
    code: str,
    participant_id: int,
    *,
    reason: str = "",
    actor: Actor | None = None,
) -> bool:
    """Send a participant out with the ``removed`` code; their seat, if they held one in a
    running group, is handled by the study's dropout rule in the same write. False when they
    had already left."""
    require(actor, Action.CONTROL)
    study = get_study(db, code)
    definition = study_definition(db, study)
    check_text(reason, "reason", MAX_STOP_REASON_CHARS, empty=True)
    for _ in range(3):  # a person who moves on meanwhile (a tab, the clock) is read again
        person = member(db, study, participant_id)
        if person.stage not in ACTIVE_STAGES:
            return False
        stage = ParticipantStage(person.stage)
        group = None
        if stage == ParticipantStage.ROOM and person.group_id is not None:
            with translated():
                group = storage.get_group(db, int(person.group_id))
        rule = definition.model.participants.on_dropout
        data = {"reason": reason, "by": who(actor, "researcher"), "stage": stage}
        removed = ExitStatus.REMOVED
        now = db.now()
        if leave(db, definition, person, removed, stage, data, now, group=group, rule=rule):
            return True
    return False


def end_conversation(
    db: storage.Database, code: str, group_id: int, *, actor: Actor | None = None
) -> bool:
    """End a group's conversation now, in one write: its room stopped ("ended by the
    researcher"), the group ended, and its people on to the post-survey (or out with the
    ``completed`` code when there is none). False when the group had ended already."""
    require(actor, Action.CONTROL)
    study = get_study(db, code)
    definition = study_definition(db, study)
    if not isinstance(group_id, int) or isinstance(group_id, bool):
        raise ConversationValueError(f"group_id={group_id!r} must be a whole number")
    with translated():
        group = storage.get_group(db, group_id)
        if group.study_id != study.id:
            raise ConversationValueError(f"group {group_id} is not in study {study.code!r}")
        if group.status != GroupStatus.RUNNING:
            return False
        people = [
            p
            for p in storage.list_participants(db, study.id, stage=ParticipantStage.ROOM)
            if p.group_id == group.id
        ]
    by = who(actor, "researcher")
    if group.room_id is None:
        raise ConversationStateError(f"group {group_id} has no room")
    return finish_group(db, definition, group, people, ENDED_BY_RESEARCHER, db.now(), by=by)


__all__ = ["ENDED_BY_RESEARCHER", "end_conversation", "remove_participant"]
