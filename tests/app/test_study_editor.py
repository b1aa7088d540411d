"""The study editor in the Experiments page: the shipped example validates, a broken field is
named, and Launch stores the study and prints the participant and monitor links."""

from __future__ import annotations

from storage import Database
from tests.app.study_support import click, page, texts


def editor():  # type: ignore[no-untyped-def]
    return page("pages/experiments.py")


def test_the_shipped_example_validates(db: Database) -> None:
    at = editor()
    assert "Mug bargaining with a mediator" in at.text_area(key="study-definition").value
    click(at, "Validate")
    assert not at.exception, at.exception
    assert any("Valid" in s.value and "2 condition" in s.value for s in at.success)


def test_a_broken_field_is_named(db: Database) -> None:
    at = editor()
    text = at.text_area(key="study-definition").value
    at.text_area(key="study-definition").input(
        text.replace("timeout_seconds = 180", "timeout_seconds = -1")
    )
    click(at, "Validate")
    assert not at.exception, at.exception
    assert "not valid" in texts(at)
    assert "timeout_seconds" in "\n".join(c.value for c in at.code)


def test_launch_stores_the_study_and_prints_its_links(db: Database) -> None:
    from conversation import study

    at = editor()
    click(at, "Launch the study")
    assert not at.exception, at.exception
    shown = texts(at)
    assert "Launched" in shown
    [line] = [t for t in shown.splitlines() if t.startswith("Participant link: ")]
    code = line.rsplit("study=", 1)[1]
    assert study.get_study(db, code).name == "Mug bargaining with a mediator"
    assert "/study_monitor?study=" + code in shown


def test_validate_names_every_bad_field_not_only_the_first(db: Database) -> None:
    """Issue 31: *Validate* showed only the first bad field; docs/studies.md promises all."""
    at = editor()
    text = at.text_area(key="study-definition").value
    broken = text.replace("timeout_seconds = 180", "timeout_seconds = -1").replace(
        'turns = "free"', 'turns = "whenever"'
    )
    assert broken.count("-1") and "whenever" in broken
    at.text_area(key="study-definition").input(broken)
    click(at, "Validate")
    assert not at.exception, at.exception
    [problems] = [c.value for c in at.code]
    assert "lobby.timeout_seconds" in problems and "room.turns" in problems
    assert len(problems.splitlines()) == 2
