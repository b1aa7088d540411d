"""Test helpers shipped with the suite (a tiny OpenAI-compatible server)."""
