"""The Room page's helpers: making a room (settings from the form, templates, the create and
import forms), the live transcript, a turn's details and provenance, forks and branches, editing a
room's settings. Each module is imported by name where it is needed (``from ui.room import
rooms``, ``from ui.room.live import live_transcript``): this face imports none of them, so a page
loads only what it draws.
"""

__all__ = [
    "branches",
    "details",
    "editing",
    "forms",
    "live",
    "provenance",
    "rooms",
    "templates",
]
