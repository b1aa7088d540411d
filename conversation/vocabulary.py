"""The words a room's life is told in: room statuses, turn states and the kinds of turns and
notices (``TurnKind``, ``NoticeKind``; ``kind_of(row)`` reads one), with their named sets.

Storage keeps them as text columns; the enums here are the one vocabulary the engine, the worker,
experiments and pages use (``storage.vocabulary`` defines them, so that storage, which knows
nothing above it, shares the very same values).
"""

from storage.vocabulary import *  # noqa: F403
from storage.vocabulary import __all__  # noqa: F401
