"""Who speaks next: room events, @-mentions, the seed-001 planner, turn policies, the coordinator
and transition rules. Pure functions of ``(roster, transcript)``; restart = replay."""
