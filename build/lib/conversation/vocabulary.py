"""The words a room's and a study's life are told in, for the engine and the pages: the
top-level ``vocabulary`` package (below storage and the engine alike), re-exported so that
``conversation.vocabulary.RoomStatus`` keeps working."""

from vocabulary import *  # noqa: F403
from vocabulary import __all__  # noqa: F401
