"""The study definition at the door: the shipped example, one clear error per field, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conversation import study as S
from conversation.exceptions import ConversationValueError
from conversation.study.cli import main
from tests.conversation.study.helpers import EXAMPLE, definition_dict


def test_the_shipped_example_is_valid_and_reads_the_same_as_json() -> None:
    from_toml = S.read_definition(EXAMPLE)
    from_json = S.load_definition(json.dumps(definition_dict()))
    assert from_toml.name == from_json.name == "Mug bargaining with a mediator"
    assert [c.seats for c in from_toml.conditions] == [["Buyer", "Seller"]] * 2
    design = from_toml.design()
    assert design["replicates"] == 2
    assert all("seats" not in c for c in design["conditions"])


def _experiment(**changes):  # type: ignore[no-untyped-def]
    data = definition_dict()
    data["experiment"] = {**data["experiment"], **changes}
    return data


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (definition_dict(version=2), "version must be 1"),
        (definition_dict(consent=""), "consent must not be empty"),
        (definition_dict(colour="red"), "unknown field(s) ['colour']"),
        (_experiment(groups=0), "experiment.groups must be a whole number from 1 to 50"),
        (
            _experiment(conditions=[{"label": "a", "seats": ["Pilot"]}]),
            "['Pilot'] are not roles of the template",
        ),
        (
            _experiment(conditions=[{"label": "a", "seats": ["Buyer", "Seller", "Mediator"]}]),
            "leave at least one agent",
        ),
        (definition_dict(lobby={"on_timeout": "later"}), "lobby.on_timeout must be one of"),
        (definition_dict(participants={"on_dropout": "x"}), "participants.on_dropout"),
        (
            definition_dict(participants={"dropout_seconds": 10, "heartbeat_seconds": 10}),
            "dropout_seconds=10 must be at least twice heartbeat_seconds",
        ),
        (definition_dict(exit={"codes": {"completed": "C1"}}), "missing ['declined'"),
        (
            definition_dict(exit={"redirect": "javascript:alert(1)"}),
            "exit.redirect must be an http",
        ),
        (
            definition_dict(exit={"codes": dict.fromkeys(S.EXIT_STATUSES, "has space")}),
            "letters, digits",
        ),
        (
            definition_dict(
                post_survey=[
                    {
                        "question_name": "q",
                        "question_type": "linear_scale",
                        "question_text": "How?",
                        "question_options": ["a", "b"],
                    }
                ]
            ),
            "linear_scale options must be whole numbers",
        ),
        (
            definition_dict(
                pre_survey=[
                    {"question_name": "q", "question_type": "free_text", "question_text": "A?"}
                ]
                * 2
            ),
            "question names must be unique",
        ),
    ],
)
def test_one_clear_error_per_field(data: dict, expected: str) -> None:
    with pytest.raises(ConversationValueError) as caught:
        S.definition_from_dict(data)
    assert expected in str(caught.value)


def test_a_bad_room_part_names_the_condition() -> None:
    data = _experiment(
        conditions=[{"label": "odd", "seats": ["Buyer"], "planner": {"kind": "nope"}}]
    )
    with pytest.raises(ConversationValueError, match="condition 'odd'"):
        S.definition_from_dict(data)


def test_text_that_is_not_toml_is_refused_with_the_line() -> None:
    with pytest.raises(ConversationValueError, match="not valid TOML"):
        S.load_definition("version = = 1")


def test_validate_cli_prints_a_summary_or_the_first_error(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["validate", str(EXAMPLE)]) == 0
    assert "2 condition(s) x 2 group(s), 2 person(s) per group" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_experiment(groups=99)))
    assert main(["validate", str(bad)]) == 1
    assert "experiment.groups" in capsys.readouterr().err


def test_launch_cli_prints_the_links(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "conversation.study",
            "launch",
            str(EXAMPLE),
            "--db",
            url,
            "--base-url",
            "https://study.example.org",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "participant link: https://study.example.org/participate?study=" in done.stdout
    assert "monitor link: https://study.example.org/study_monitor?study=" in done.stdout


def test_definition_problems_lists_every_bad_field() -> None:
    from tests.conversation.study.helpers import definition_dict

    data = definition_dict(
        lobby={"timeout_seconds": 1}, room={"turns": "whenever"}, participants={"cap": 0}
    )
    problems = S.definition_problems(json.dumps(data), fmt="json")
    assert [p.split(" ")[0] for p in problems] == [
        "lobby.timeout_seconds",
        "room.turns",
        "participants.cap",
    ]
    assert S.definition_problems("not = [toml", fmt="toml")[0].startswith(
        "the study definition is not valid TOML"
    )
    assert S.definition_problems(json.dumps(definition_dict()), fmt="json") == []


def test_the_cli_launches_into_the_apps_database_by_default(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: the docs' ``--db sqlite:///study.db`` was not the app's database, so such a
    study never appeared in the monitor: without ``--db`` the CLI uses the app's database."""
    import storage

    monkeypatch.delenv("ROOMS_DATABASE_URL", raising=False)
    assert main(["launch", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    code = out.split("study code: ")[1].split()[0]
    with storage.Database(storage.database_url()) as db:  # what the app opens
        assert S.get_study(db, code).name == "Mug bargaining with a mediator"
    assert f"database: {storage.display_url(storage.database_url())}" in out


def test_the_cli_names_every_bad_field(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    broken = tmp_path / "broken.json"
    data = definition_dict(lobby={"timeout_seconds": 1}, room={"turns": "whenever"})
    broken.write_text(json.dumps(data), encoding="utf-8")
    assert main(["validate", str(broken)]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert [e.split(" ")[1] for e in errors] == ["lobby.timeout_seconds", "room.turns"]
