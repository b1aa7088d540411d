"""A participant's stages and exits: one table of moves, words equal to what rows store."""

from __future__ import annotations

import pytest

from vocabulary import (
    EXIT_STATUSES,
    STAGE_TRANSITIONS,
    ExitStatus,
    ParticipantStage,
    may_move,
)


def test_every_stage_has_its_moves_and_nobody_leaves_the_exit() -> None:
    assert set(STAGE_TRANSITIONS) == set(ParticipantStage)
    assert STAGE_TRANSITIONS[ParticipantStage.EXIT] == frozenset()
    # a person may leave from anywhere on their path
    for stage in ParticipantStage:
        if stage is not ParticipantStage.EXIT:
            assert ParticipantStage.EXIT in STAGE_TRANSITIONS[stage]


@pytest.mark.parametrize(
    ("current", "to", "allowed"),
    [
        ("consent", "pre_survey", True),
        ("consent", "lobby", True),
        ("pre_survey", "lobby", True),
        ("lobby", "room", True),
        ("room", "post_survey", True),
        ("post_survey", "exit", True),
        ("room", "lobby", False),
        ("exit", "room", False),
        ("post_survey", "room", False),
        ("lobby", "lobby", False),
        ("lobby", "nowhere", False),
        ("nowhere", "lobby", False),
    ],
)
def test_may_move(current: str, to: str, allowed: bool) -> None:
    assert may_move(current, to) is allowed


def test_exit_statuses_are_the_stored_words_in_the_definition_order() -> None:
    assert [str(s) for s in EXIT_STATUSES] == [
        "completed",
        "declined",
        "lobby_timeout",
        "dropped",
        "removed",
        "error",
        "abandoned",
        "unfinished",
        "failed_check",
        "withdrawn",
    ]
    assert ExitStatus("dropped") == "dropped"


def test_every_stage_on_the_path_has_an_absence_rule_and_every_exit_a_log_word() -> None:
    from vocabulary import ABSENCE_EXITS, ACTIVE_STAGES, StudyEventKind, exit_event

    assert set(ABSENCE_EXITS) == set(ACTIVE_STAGES)
    for stage, status in ABSENCE_EXITS.items():
        assert ParticipantStage.EXIT in STAGE_TRANSITIONS[stage] and status in EXIT_STATUSES
    assert {exit_event(s) for s in ExitStatus} <= set(StudyEventKind)
