"""The offline model: a real EDSL model that needs no network and no key (demos and tests).

- ``model``: ``OfflineModel`` (scripted replies, a reply function, failures, or its own words;
  the streamed pace), ``is_offline``;
- ``forms``: answering EDSL's structured questions in the format EDSL parses;
- ``voice``: its own words, a short persona-flavoured turn;
- ``reading``: what it reads from the two prompt strings (the speaker, traits, the transcript).
"""

from conversation.models.offline.model import (
    DEFAULT_WORDS_PER_SECOND,
    OFFLINE_MODEL_NAME,
    OFFLINE_SERVICE,
    WORDS_PER_SECOND_ENV,
    OfflineModel,
    is_offline,
)

__all__ = [
    "DEFAULT_WORDS_PER_SECOND",
    "OFFLINE_MODEL_NAME",
    "OFFLINE_SERVICE",
    "OfflineModel",
    "WORDS_PER_SECOND_ENV",
    "is_offline",
]
