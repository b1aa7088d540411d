"""Page helpers for the Streamlit screens in ``pages/``: one module per concern, each imported by
name where it is needed (a face that imported them all would load pandas and plotly on every page
run, and the server's warm-up imports them in a chosen order). They read and write through
``conversation``'s services; ``bootstrap`` alone opens the database.

``__all__`` names the modules: ``from ui import rooms``, ``from ui.live import live_transcript``.
"""

__all__ = [
    "access",
    "bootstrap",
    "branches",
    "cached",
    "charts",
    "coding",
    "condition_stats",
    "experiments",
    "live",
    "manage",
    "params",
    "participant",
    "participant_chat",
    "participant_forms",
    "participant_room",
    "provenance",
    "results",
    "room_details",
    "room_editing",
    "room_forms",
    "rooms",
    "study_editor",
    "study_exports",
    "study_monitor",
    "templates",
    "widgets",
]
