"""``study.list_studies``: every study, newest first, with its participants counted by where they
are (or how they left) and its groups by status."""

from __future__ import annotations

import storage
from conversation import study as S
from tests.conversation.study.helpers import launched, seated, to_lobby


def test_an_empty_database_lists_no_study(db: storage.Database) -> None:
    assert S.list_studies(db) == []


def test_each_study_with_its_people_by_where_they_are_and_its_groups(
    db: storage.Database,
) -> None:
    first = launched(db)
    second = launched(db, name="Second study")
    seated(db, first.code, "a", "b")  # one group of two in a room
    to_lobby(db, first.code, "c")  # waits in the lobby
    declined = S.join(db, first.code, {"PROLIFIC_PID": "d"})
    S.decline(db, declined.token)
    S.join(db, first.code, {"PROLIFIC_PID": "e"})  # at the consent screen

    listed = S.list_studies(db)
    assert [s.code for s in listed] == [second.code, first.code]  # newest first
    newest, older = listed
    assert newest.study.name == "Second study"
    assert (newest.participants, newest.groups, newest.people) == ({}, {}, 0)
    assert older.participants == {"room": 2, "lobby": 1, "declined": 1, "consent": 1}
    assert older.groups == {"running": 1}
    assert older.people == 5
    line = older.line()
    assert line.startswith(f"{first.code} · Mug bargaining with a mediator (open) · 5 people")
    assert "2 in a room" in line and "1 in the lobby" in line and "1 declined" in line
    assert line.endswith("· 1 group")
