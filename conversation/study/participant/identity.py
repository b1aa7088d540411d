"""Who a token belongs to.

Only a token's sha256 is stored or looked up: a forged, mistyped or unknown token is
:class:`NotAParticipant`, whatever it is.
"""

from __future__ import annotations

import hashlib
from typing import Any

import storage
from conversation.boundary import translated
from conversation.study.definition.document import StudyDefinition
from conversation.study.errors import REFUSALS, NotAParticipant
from conversation.study.record import Study, study_definition


def token_hash(token: Any) -> str:
    if not isinstance(token, str) or not 0 < len(token) <= 200:
        raise NotAParticipant()
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def participant(db: storage.Database, token: Any) -> tuple[Any, Study, StudyDefinition]:
    """The participant holding ``token``, their study and its definition; or
    :class:`NotAParticipant`."""
    person, study, definition, _ = seat_of(db, token)
    return person, study, definition


def seat_of(db: storage.Database, token: Any) -> tuple[Any, Study, StudyDefinition, Any]:
    """Like :func:`participant`, with where they sit (``storage.ParticipantSeat``: their
    group's status, their room's id, status and settings), from one read."""
    with translated(REFUSALS):
        seat = storage.participant_seat(db, token_hash(token))
    study = Study.of(seat.study)
    return seat.participant, study, study_definition(db, study), seat


__all__ = ["participant", "seat_of", "token_hash"]
