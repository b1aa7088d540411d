"""The participant's page of a study, served by the app's own ASGI server (issue 32,
docs/participant-page.md): ``routes`` (the page, its files, the acts and the event stream),
``hub`` (the process's room watcher that feeds the streams), ``wire`` (what the page receives)
and ``static/`` (the page, its script and its style sheet)."""

from ui.participant.routes import ParticipantSite

__all__ = ["ParticipantSite"]
