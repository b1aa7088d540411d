"""The participant's side of a study: whose token it is (``identity``), their acts (``acts``:
join, consent, surveys, heartbeat, posts, help) and what their page shows (``view``)."""

from conversation.study.participant.acts import join, post_as_participant
from conversation.study.participant.view import participant_view

__all__ = ["join", "participant_view", "post_as_participant"]
