"""Page helpers for the Streamlit screens in ``pages/``: one module per concern, each imported by
name where it is needed (a face that imported them all would load pandas and plotly on every page
run, and the server's warm-up imports them in a chosen order). They read and write through
``conversation``'s services; ``bootstrap`` alone opens the database.

``__all__`` names the modules and packages: ``from ui import widgets``, ``from ui.room.live import
live_transcript``; the Room and Results pages' helpers are the packages ``ui.room`` and
``ui.results``.
"""

__all__ = [
    "access",
    "bootstrap",
    "experiments",
    "manage",
    "params",
    "participant",
    "participant_chat",
    "participant_forms",
    "participant_room",
    "results",
    "room",
    "study_editor",
    "study_exports",
    "study_monitor",
    "widgets",
]
