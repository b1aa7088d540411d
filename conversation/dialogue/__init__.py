"""The seed-000 dialogue: ``Conversation``, ``ConversationList``, statements, turn-taking strategies."""
