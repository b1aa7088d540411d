"""The conversation-API dialogue: ``Conversation``, ``ConversationList``, statements, turn-taking
strategies and the generator functions behind them."""

from conversation.dialogue.conversation import Conversation
from conversation.dialogue.conversation_list import ConversationList
from conversation.dialogue.generators import (
    default_turn_taking_generator,
    random_inclusive_generator,
    random_turn_taking_generator,
    speaker_closure,
    turn_taking_generator_with_focal_speaker,
)
from conversation.dialogue.statements import AgentStatement, AgentStatements
from conversation.dialogue.strategies import (
    FocalSpeakerStrategy,
    RandomInclusiveStrategy,
    RandomSpeakerStrategy,
    RoundRobinStrategy,
    SpeakerStrategy,
)

__all__ = [
    "AgentStatement",
    "AgentStatements",
    "Conversation",
    "ConversationList",
    "FocalSpeakerStrategy",
    "RandomInclusiveStrategy",
    "RandomSpeakerStrategy",
    "RoundRobinStrategy",
    "SpeakerStrategy",
    "default_turn_taking_generator",
    "random_inclusive_generator",
    "random_turn_taking_generator",
    "speaker_closure",
    "turn_taking_generator_with_focal_speaker",
]
