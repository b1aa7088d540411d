"""What each agent is shown on its turn: visibility, windows, summaries, turns-left hints (pure)."""
