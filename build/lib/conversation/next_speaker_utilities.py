"""The conversation-API generator functions under their documented name (``conversation.dialogue.generators``)."""

from conversation.dialogue.generators import *  # noqa: F403
from conversation.dialogue.generators import __all__  # noqa: F401
