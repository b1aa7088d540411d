"""The log's typed model: each stored row parsed once into one entry type that says what it
means (who may see it, open / consumed / a message / passed, who acted)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vocabulary import (
    AgentTurn,
    EventKind,
    HumanMessage,
    Notice,
    NoticeKind,
    Pass,
    Reading,
    TurnKind,
    TurnState,
    entries_of,
    entry_of,
    may_see,
)


def row(kind: str, speaker: str = "Ana", content: str = "hi", **fields: Any) -> SimpleNamespace:
    values = {
        "seq": 1,
        "kind": kind,
        "speaker": speaker,
        "content": content,
        "round": 0,
        "state": "done" if kind in ("agent", "pass") else None,
        "visible_to": None,
        "data": None,
    }
    return SimpleNamespace(**{**values, **fields})


def test_each_kind_of_row_is_one_entry_type_with_its_literal_kind() -> None:
    entries = entries_of(
        [row("human", "sam"), row("agent"), row("pass", content=""), row("system", "room")]
    )
    assert [type(e) for e in entries] == [HumanMessage, AgentTurn, Pass, Notice]
    assert [e.kind for e in entries] == list(EventKind)[:2] + [EventKind.PASS, EventKind.SYSTEM]
    assert [e.is_turn for e in entries] == [False, True, True, False]


def test_an_entry_is_a_frozen_value_that_keeps_its_row() -> None:
    stored = row("agent", created_at="2026-01-01", error={"type": "X", "message": "m"})
    entry = entry_of(stored)
    assert entry.row is stored  # timestamps, error, usage: read from the row itself
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.content = "other"  # type: ignore[misc]
    assert entry_of(entry) is entry  # parsed once: parsing an entry again is free


def test_a_turn_carries_its_kind_and_state() -> None:
    entry = entry_of(row("agent", state="waiting", data={"event": "candidates"}))
    assert isinstance(entry, AgentTurn)
    assert entry.turn_kind is TurnKind.CANDIDATES and entry.state is TurnState.WAITING
    plain = entry_of(row("agent", data={"chosen_because": "round robin"}))
    assert plain.turn_kind is TurnKind.SPEAK  # a speaking turn records no kind
    assert entry_of(row("agent", state=None)).state is TurnState.DONE  # imported without one


def test_a_notice_carries_what_it_records_and_who_did_it() -> None:
    entry = entry_of(row("system", "room", "Paused by ann.", data={"event": "paused", "by": "ann"}))
    assert isinstance(entry, Notice)
    assert entry.notice is NoticeKind.PAUSED and entry.by == "ann"
    assert entry.turn_kind is None and entry.state is None


def test_rows_no_entry_has_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'note'"):
        entry_of(row("note"))
    with pytest.raises(ValueError, match="'pondering'"):
        entry_of(row("agent", state="pondering"))


# -- who may see it ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "speaker", "private_to", "viewer", "sees"),
    [
        ("human", "sam", None, "Ben", True),  # public
        ("human", "sam", ["Ana"], "Ana", True),  # private to the viewer
        ("human", "sam", ["Ana"], "Ben", False),  # a private message, another seat
        ("human", "sam", ["Ana"], "sam", True),  # the viewer's own message
        ("agent", "Ana", ["sam"], "Ana", True),  # an agent's own private message
        ("agent", "Ana", ["sam"], "Ben", False),
        ("system", "room", ["Ana", "Ben"], "Cy", False),
        ("human", "sam", [], "Ben", True),  # an empty audience is no audience: public
    ],
)
def test_visible_to_is_public_private_to_the_viewer_or_the_viewers_own(
    kind: str, speaker: str, private_to: list[str] | None, viewer: str, sees: bool
) -> None:
    entry = entry_of(row(kind, speaker, visible_to=private_to))
    assert entry.visible_to(viewer) is sees


@given(
    speaker=st.sampled_from(["Ana", "Ben", "sam"]),
    private_to=st.none() | st.lists(st.sampled_from(["Ana", "Ben", "sam", "Cy"]), min_size=1),
    viewer=st.sampled_from(["Ana", "Ben", "sam", "Cy"]),
)
def test_every_entry_type_answers_visibility_with_the_one_rule(
    speaker: str, private_to: list[str] | None, viewer: str
) -> None:
    expected = private_to is None or viewer == speaker or viewer in private_to
    assert may_see(viewer, speaker, private_to) is expected
    for kind in ("human", "agent", "pass", "system"):
        assert entry_of(row(kind, speaker, visible_to=private_to)).visible_to(viewer) is expected


# -- what it is to the room's agents ---------------------------------------------------------------

CANDIDATES = {"event": "candidates", "candidates": [{"speaker": "Ben", "text": "x"}]}


@pytest.mark.parametrize(
    ("stored", "reading", "is_message", "passed"),
    [
        (row("human", "sam"), Reading.MESSAGE, True, False),
        (row("agent"), Reading.MESSAGE, True, False),
        (row("pass", content=""), Reading.PASS, False, True),
        (row("agent", state="running"), Reading.UNSEEN, False, False),
        (row("agent", state="waiting"), Reading.UNSEEN, False, False),
        (row("agent", state="interrupted"), Reading.UNSEEN, False, False),
        (row("agent", state="stopped"), Reading.PASS, False, True),
        (row("agent", state="abandoned"), Reading.PASS, False, True),
        (row("agent", state="failed"), Reading.PASS, False, True),
        # A coordinator-after turn: the chosen draft is a message; no draft chosen, a pick of
        # no one (the activity settles), which published nothing.
        (row("agent", data={**CANDIDATES, "picked": "Ben"}), Reading.MESSAGE, True, False),
        (row("agent", content="", data={**CANDIDATES, "picked": None}), Reading.PICK, False, True),
        # A coordinator's pick turn: bookkeeping once made, nothing when it never was.
        (
            row("agent", "Cy", "picked Ana", data={"event": "pick", "pick": "Ana"}),
            Reading.PICK,
            False,
            False,
        ),  # fmt: skip
        (
            row("agent", "Cy", "picked no one", data={"event": "pick", "pick": None}),
            Reading.PICK,
            False,
            True,
        ),  # fmt: skip
        (row("agent", "Cy", state="failed", data={"event": "pick"}), Reading.UNSEEN, False, True),
        (
            row("agent", "summary", data={"event": "summary", "covers_seqs": [1, 3]}),
            Reading.SUMMARY,
            False,
            False,
        ),  # fmt: skip
        (
            row("pass", "summary", "", data={"event": "summary", "empty": True}),
            Reading.SUMMARY,
            False,
            True,
        ),  # fmt: skip
        (row("system", "room", "Settled."), Reading.NOTICE, False, False),
        (
            row("system", "room", "Stopped.", data={"event": "stopped", "by": "ann"}),
            Reading.NOTICE,
            False,
            False,
        ),  # fmt: skip
        (row("system", "Cy", "Ana", data={"event": "pick"}), Reading.PICK, False, False),
        (
            row("system", "summary", "...", data={"event": "summary", "covers": [0, 2]}),
            Reading.SUMMARY,
            False,
            False,
        ),  # fmt: skip
        # People's acts on the room: shown to people, never to agents.
        (
            row("system", "room", "Paused by ann.", data={"event": "paused", "by": "ann"}),
            Reading.UNSEEN,
            False,
            False,
        ),  # fmt: skip
        (
            row("system", "room", "Forked.", data={"event": "forked", "by": "ann"}),
            Reading.UNSEEN,
            False,
            False,
        ),  # fmt: skip
        (
            row("system", "room", "New settings.", data={"event": "config_changed"}),
            Reading.UNSEEN,
            False,
            False,
        ),  # fmt: skip
        (
            row("system", "room", "Paused.", data={"event": "paused", "by": "breakpoint"}),
            Reading.UNSEEN,
            False,
            False,
        ),  # fmt: skip
    ],
)
def test_what_an_entry_is_to_the_rooms_agents(
    stored: Any, reading: Reading, is_message: bool, passed: bool
) -> None:
    entry = entry_of(stored)
    assert (entry.reading, entry.is_message, entry.passed) == (reading, is_message, passed)


@pytest.mark.parametrize(
    ("state", "is_open", "consumed", "stopped", "is_draft", "is_done"),
    [
        ("running", True, False, False, False, False),
        ("waiting", True, False, False, True, False),
        ("interrupted", True, False, False, False, False),
        ("done", False, False, False, False, True),
        ("stopped", False, True, True, False, False),
        ("abandoned", False, True, False, False, False),
        ("failed", False, True, False, False, False),
    ],
)
def test_where_a_turn_is(
    state: str, is_open: bool, consumed: bool, stopped: bool, is_draft: bool, is_done: bool
) -> None:
    entry = entry_of(row("agent", state=state))
    assert (entry.is_open, entry.consumed, entry.stopped, entry.is_draft, entry.is_done) == (
        is_open,
        consumed,
        stopped,
        is_draft,
        is_done,
    )
    for other in entries_of([row("human", "sam"), row("system", "room")]):
        assert not (other.is_open or other.consumed or other.stopped or other.is_draft)


def test_a_resume_point_is_a_resumed_notice_no_person_made() -> None:
    mark = entry_of(row("system", "room", "", data={"event": "resumed"}))
    by_person = entry_of(row("system", "room", "Resumed by ann.", data={"event": "resumed", "by": "ann"}))  # fmt: skip
    assert isinstance(mark, Notice) and isinstance(by_person, Notice)
    assert mark.is_resume_point and not by_person.is_resume_point
    assert mark.reading is Reading.NOTICE and by_person.reading is Reading.UNSEEN


def test_a_pick_names_its_choice() -> None:
    turn = entry_of(row("agent", "Cy", data={"event": "pick", "pick": "Ana"}))
    notice = entry_of(row("system", "Cy", "Ben", data={"event": "pick"}))
    no_one = entry_of(row("system", "Cy", "", data={"event": "pick", "passed": True}))
    assert isinstance(turn, AgentTurn) and isinstance(notice, Notice) and isinstance(no_one, Notice)
    assert (turn.choice, notice.choice, no_one.choice) == ("Ana", "Ben", None)


# -- who acted -------------------------------------------------------------------------------------


def test_who_acted() -> None:
    decided = {"decisions": [{"verb": "deny", "by": "bo"}, {"verb": "approve", "by": "ann"}]}
    assert entry_of(row("human", "sam")).by == "sam"
    assert entry_of(row("human", "Seat A", data={"by": "participant p1"})).by == "participant p1"
    assert entry_of(row("agent", data=decided)).by == "ann"  # the last decision
    assert entry_of(row("agent")).by is None  # no person acted
    assert entry_of(row("system", "room", data={"event": "stopped", "by": "ann"})).by == "ann"


def test_who_picked() -> None:
    drafted = row("agent", "Ben", data={**CANDIDATES, "picked": "Ben", "picked_by": "ann"})
    assert entry_of(drafted).picked_by == "ann"
    assert entry_of(row("agent", "Cy", data={"event": "pick", "pick": "Ana"})).picked_by == "Cy"
    assert entry_of(row("system", "Cy", "Ana", data={"event": "pick"})).picked_by == "Cy"
    assert entry_of(row("agent")).picked_by is None


def test_moderation_records_are_read_as_mappings_only() -> None:
    data = {"denials": [{"draft": "a", "reason": "r", "by": "ann"}, "junk"], "decisions": "junk"}
    entry = entry_of(row("agent", data=data))
    assert isinstance(entry, AgentTurn)
    assert entry.denials == ({"draft": "a", "reason": "r", "by": "ann"},)
    assert entry.decisions == ()
