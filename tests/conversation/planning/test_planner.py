"""The room rules (docs/design.md, "Rooms, activities and mentions") to the letter: RoomEvent, RoomTurnPlannerProtocol, RoundRobinRoomPlanner, the samples."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversation.exceptions import ConversationValueError
from conversation.rooms import (
    PlannedTurn,
    RoomEvent,
    RoomTurnPlannerProtocol,
    RoundRobinRoomPlanner,
    TransitionRules,
    plan_turn,
    planner_from_dict,
)

E = RoomEvent
ROSTER = ["planner", "coder", "reviewer"]


# -- the seed's code samples, as written (import path conversation.rooms) ----------------------


def test_seed_sample_opening_round(capsys: pytest.CaptureFixture[str]) -> None:
    from conversation.rooms import RoomEvent, RoundRobinRoomPlanner

    roster = ["planner", "coder", "reviewer"]
    transcript = [RoomEvent(speaker="user", content="build a login form", round=0)]

    planner = RoundRobinRoomPlanner()

    while (next_speaker := planner.plan_next(roster, transcript)) is not None:
        print("next up:", next_speaker)
        # In a real gateway: run the named agent, append its reply below.
        transcript.append(RoomEvent(speaker=next_speaker, content="...", round=0))

    assert capsys.readouterr().out.splitlines() == [
        "next up: planner",
        "next up: coder",
        "next up: reviewer",
    ]


def test_seed_sample_mention_hand_off() -> None:
    from conversation.rooms import RoomEvent, RoundRobinRoomPlanner

    roster = ["planner", "coder", "reviewer"]
    planner = RoundRobinRoomPlanner(max_rounds=3, max_messages=10)

    transcript = [
        RoomEvent(speaker="user", content="build a login form", round=0),
        RoomEvent(speaker="planner", content="step 1: form. @coder please.", round=0),
        RoomEvent(speaker="coder", content="done — @reviewer take a look", round=0),
        RoomEvent(speaker="reviewer", content="looks good", round=0),
    ]

    # Round 0 is filled. planner @-mentioned coder, coder @-mentioned reviewer,
    # so round 1 admits coder then reviewer (in roster order):
    assert planner.plan_next(roster, transcript) == "coder"
    # ... and then reviewer, then the activity is settled.
    transcript.append(RoomEvent(speaker="coder", content="fixed", round=1))
    assert planner.plan_next(roster, transcript) == "reviewer"
    transcript.append(RoomEvent(speaker="reviewer", content="ok", round=1))
    assert planner.plan_next(roster, transcript) is None


def test_seed_sample_custom_planner_protocol() -> None:
    # The seed's sample, as written (its imports are only used in annotations).
    from typing import Optional, Sequence  # noqa: F401, UP035

    from conversation.rooms import RoomEvent, RoomTurnPlannerProtocol  # noqa: F401

    class FirstAgentPlanner:
        def plan_next(
            self,
            roster: Sequence[str],
            transcript: Sequence[RoomEvent],
        ) -> Optional[str]:  # noqa: UP045
            return roster[0] if roster else None

    assert isinstance(FirstAgentPlanner(), RoomTurnPlannerProtocol)


def test_something_without_plan_next_is_not_a_planner() -> None:
    assert not isinstance(object(), RoomTurnPlannerProtocol)
    assert isinstance(RoundRobinRoomPlanner(), RoomTurnPlannerProtocol)


# -- the rules, table-driven -----------------------------------------------------------------

P = RoundRobinRoomPlanner


@pytest.mark.parametrize(
    ("planner", "roster", "transcript", "expected"),
    [
        pytest.param(P(), ROSTER, [], None, id="empty transcript: no activity"),
        pytest.param(P(), ["a", "b"], [E("a")], None, id="no human message: None"),
        pytest.param(P(), [], [E("user")], None, id="empty roster"),
        pytest.param(P(), ROSTER, [E("user", "go")], "planner", id="round 0 starts at roster[0]"),
        pytest.param(
            P(), ROSTER, [E("user"), E("planner"), E("coder")], "reviewer", id="round 0 in order"
        ),
        pytest.param(
            P(),
            ROSTER,
            [E("user"), E("planner"), E("coder"), E("reviewer")],
            None,
            id="no mentions: settled",
        ),
        pytest.param(
            P(), ["a", "b"], [E("user"), E("a", passed=True)], "b", id="a pass consumes the turn"
        ),
        pytest.param(
            P(),
            ROSTER,
            [E("user"), E("planner", "@reviewer @coder"), E("coder"), E("reviewer")],
            "coder",
            id="admission in roster order, not mention order",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user"), E("a", "@nobody hi"), E("b")],
            None,
            id="non-roster mentions ignored",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user", "@a @b"), E("a"), E("b")],
            None,
            id="a human's mentions admit no one",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user"), E("a", "@a again"), E("b")],
            None,
            id="a self-mention admits no one (a speaker quoting its own name, issue 19)",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user"), E("a", "@b @b"), E("b"), E("b", "x", 1)],
            None,
            id="at most once per round",
        ),
        pytest.param(
            P(max_rounds=1, max_messages=100),
            ["a", "b"],
            [E("user"), E("a", "@b hey"), E("b", "@a back")],
            None,
            id="max_rounds is a hard cap",
        ),
        pytest.param(
            P(max_rounds=5, max_messages=2),
            ["a", "b", "c"],
            [E("user"), E("a")],
            None,
            id="max_messages counts the human message",
        ),
        pytest.param(
            P(max_rounds=5, max_messages=3),
            ["a", "b", "c"],
            [E("user"), E("a", passed=True)],
            "b",
            id="under the cap",
        ),
        pytest.param(
            P(max_rounds=5, max_messages=3),
            ["a", "b", "c"],
            [E("user"), E("a", passed=True), E("b", passed=True)],
            None,
            id="passes count",
        ),
        pytest.param(
            P(max_rounds=5, max_messages=3),
            ["a", "b"],
            [E("user"), E("a"), E("b"), E("user", "more")],
            "a",
            id="max_messages is per activity",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user"), E("a", "@b ping"), E("b", "pong", 1), E("user", "second"), E("a"), E("b")],
            None,
            id="stale mentions never leak into a new activity",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user", "hi"), E("a"), E("b"), E("user", "again")],
            "a",
            id="a settled room restarts on the next human message",
        ),
        pytest.param(
            P(),
            ROSTER,
            [
                E("user"),
                E("planner", "@coder"),
                E("coder", "@reviewer"),
                E("reviewer"),
                E("coder", "", 1),
            ],
            "reviewer",
            id="round 1 admits everyone mentioned during round 0",
        ),
        pytest.param(
            P(),
            ROSTER,
            [E("user"), E("planner", "@coder"), E("coder"), E("reviewer"), E("coder", "", 1)],
            None,
            id="round 1 admits only those mentioned",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user"), E("a", "@b"), E("b"), E("b", "@a", 1), E("a", "", 2)],
            None,
            id="round 2 admits from round 1 only",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user"), E("a", "@b"), E("b"), E("b", "@a", 1)],
            "a",
            id="chained hand-off",
        ),
        pytest.param(
            P(max_rounds=2),
            ["a", "b"],
            [E("user"), E("a", "@b"), E("b"), E("b", "@a", 1)],
            None,
            id="chained hand-off stops at max_rounds",
        ),
        pytest.param(
            P(),
            ["a", "b"],
            [E("user"), E("a", "over to @b."), E("b")],
            "b",
            id="sentence-ending dot still addresses",
        ),
    ],
)
def test_rules(
    planner: RoundRobinRoomPlanner,
    roster: list[str],
    transcript: list[RoomEvent],
    expected: str | None,
) -> None:
    assert planner.plan_next(roster, transcript) == expected


@pytest.mark.parametrize(
    "extra",
    [
        E("moderator", "coder", kind="pick"),
        E("room", "note", kind="system"),
        E("summary", "s", kind="summary", covers=(0, 1)),
    ],
)
def test_non_message_events_neither_open_an_activity_nor_count(extra: RoomEvent) -> None:
    roster = ["a", "b"]
    # Without a human message, a non-message event does not start the room.
    assert P().plan_next(roster, [extra]) is None
    # Inside an activity, it is not a turn and does not count against max_messages.
    planner = P(max_messages=2)
    assert planner.plan_next(roster, [E("user"), extra]) == "a"
    assert planner.plan_next(roster, [E("user"), extra, E("a"), extra]) is None  # 2 messages
    assert P().plan_next(roster, [E("user"), E("a"), extra]) == "b"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_rounds": 0}, "max_rounds"),
        ({"max_messages": 0}, "max_messages"),
        ({"max_rounds": -3}, "max_rounds"),
        ({"max_rounds": 1.5}, "max_rounds"),
        ({"max_messages": True}, "max_messages"),
        ({"transitions": {"a": ["b"]}}, "transitions"),
    ],
)
def test_bad_caps_raise_value_error_naming_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field) as caught:
        RoundRobinRoomPlanner(**kwargs)
    assert isinstance(caught.value, ConversationValueError)


def test_defaults_and_dataclass() -> None:
    planner = RoundRobinRoomPlanner()
    assert (planner.max_rounds, planner.max_messages) == (3, 20)
    assert RoundRobinRoomPlanner(2, 5) == RoundRobinRoomPlanner(max_rounds=2, max_messages=5)


def test_duplicate_roster_names_rejected() -> None:
    with pytest.raises(ConversationValueError, match="appears twice"):
        P().plan_next(["a", "a"], [E("user")])


def test_plan_turn_reports_the_round() -> None:
    transcript = [E("user"), E("planner", "@coder"), E("coder"), E("reviewer")]
    assert P().plan_turn(ROSTER, transcript[:1]) == PlannedTurn("planner", 0)
    assert P().plan_turn(ROSTER, transcript) == PlannedTurn("coder", 1)
    assert plan_turn(P(), ROSTER, transcript) == PlannedTurn("coder", 1)
    assert P().plan_turn(ROSTER, []) is None


def test_plan_turn_for_a_custom_planner_uses_cycles() -> None:
    class Fixed:
        def plan_next(self, roster: Sequence[str], transcript: Sequence[RoomEvent]) -> str | None:
            return roster[-1]

    assert plan_turn(Fixed(), ["a", "b"], [E("user"), E("a"), E("b"), E("a")]) == PlannedTurn(
        "b", 1
    )


def test_transition_rules_delay_within_the_round() -> None:
    # a may not be followed by b: c goes before b in round 0, then b.
    planner = P(transitions=TransitionRules({"a": ["b"]}, mode="disallowed"))
    roster = ["a", "b", "c"]
    assert planner.plan_next(roster, [E("user"), E("a")]) == "c"
    assert planner.plan_next(roster, [E("user"), E("a"), E("c")]) == "b"


def test_transition_rules_never_name_an_excluded_speaker() -> None:
    planner = P(transitions=TransitionRules({"a": []}))  # no one may follow a
    assert planner.plan_next(["a", "b"], [E("user"), E("a")]) is None


def test_serialization_round_trip() -> None:
    planner = P(2, 7, transitions=TransitionRules({"a": ["b"]}))
    data = planner.to_dict()
    assert data["kind"] == "round_robin_room"
    assert planner_from_dict(data) == planner
    assert RoundRobinRoomPlanner.from_dict(P().to_dict()) == P()
    with pytest.raises(ConversationValueError, match="bogus"):
        planner_from_dict({**data, "bogus": 1})


# -- properties ------------------------------------------------------------------------------

NAMES = ["a", "b", "c", "d"]


@st.composite
def rooms(draw: st.DrawFn) -> tuple[RoundRobinRoomPlanner, list[str], list[list[str]], list[bool]]:
    roster = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    planner = P(draw(st.integers(1, 4)), draw(st.integers(1, 15)))
    script = draw(st.lists(st.lists(st.sampled_from([*NAMES, "zed"]), max_size=3), max_size=40))
    passes = draw(st.lists(st.booleans(), max_size=40))
    return planner, roster, script, passes


def simulate(
    planner: RoundRobinRoomPlanner, roster: list[str], script: list[list[str]], passes: list[bool]
) -> list[RoomEvent]:
    """Run one activity: each turn says the scripted mentions (or passes)."""
    transcript = [E("user", "go @a @b")]
    for step in range(200):
        turn = planner.plan_turn(roster, transcript)
        if turn is None:
            return transcript
        said = script[step] if step < len(script) else []
        passed = passes[step] if step < len(passes) else False
        content = "" if passed else " ".join(f"@{name}" for name in said)
        transcript.append(E(turn.speaker, content, turn.round, passed))
    raise AssertionError("the planner never settled")


def rounds_follow_the_rules(roster: list[str], transcript: list[RoomEvent]) -> bool:
    """Each round: distinct speakers in roster order; round N+1 only those mentioned in N."""
    agents = [e for e in transcript if e.speaker in roster]
    by_round: dict[int, list[RoomEvent]] = {}
    for event in agents:
        by_round.setdefault(event.round, []).append(event)
    for rnd, events in by_round.items():
        order = [roster.index(e.speaker) for e in events]
        if order != sorted(set(order)):
            return False
        if rnd > 0:
            mentioned = {
                name
                for e in by_round.get(rnd - 1, [])
                for name in roster
                if f"@{name}" in e.content.split()
            }
            if not {e.speaker for e in events} <= mentioned:
                return False
    return True


@settings(max_examples=150)
@given(rooms())
def test_simulated_rooms_obey_every_rule(room: tuple) -> None:
    planner, roster, script, passes = room
    transcript = simulate(planner, roster, script, passes)
    assert all(e.speaker in roster for e in transcript[1:])  # never outside the roster
    assert len(transcript) <= planner.max_messages or len(transcript) == 1
    assert all(e.round < planner.max_rounds for e in transcript[1:])
    assert rounds_follow_the_rules(roster, transcript)
    # Round 0 is the whole roster in order (unless the message cap cut it short).
    round0 = [e.speaker for e in transcript[1:] if e.round == 0]
    assert round0 == roster[: len(round0)]
    if len(transcript) < planner.max_messages:
        assert round0 == roster


def test_negative_control_the_round_checker_rejects_mention_order() -> None:
    # A planner that honoured mention order would produce this; the checker must notice.
    roster = ["a", "b", "c"]
    bad = [E("user"), E("a", "@c @b"), E("b"), E("c"), E("c", "", 1), E("b", "", 1)]
    good = [E("user"), E("a", "@c @b"), E("b"), E("c"), E("b", "", 1), E("c", "", 1)]
    assert not rounds_follow_the_rules(roster, bad)
    assert rounds_follow_the_rules(roster, good)
    assert simulate(P(), roster, [["c", "b"]], [])[4:6] == good[4:6]


@settings(max_examples=150)
@given(rooms())
def test_restart_is_replay(room: tuple) -> None:
    planner, roster, script, passes = room
    transcript = simulate(planner, roster, script, passes)
    for cut in range(1, len(transcript)):
        # A fresh planner (as after a restart), fed the stored prefix, names the same speaker.
        restored = planner_from_dict(planner.to_dict())
        assert restored.plan_next(roster, transcript[:cut]) == transcript[cut].speaker
        assert restored.plan_next(roster, tuple(transcript[:cut])) == transcript[cut].speaker


TRANSCRIPTS = st.lists(
    st.builds(
        E,
        speaker=st.sampled_from([*NAMES, "user", "bob"]),
        content=st.lists(st.sampled_from(["@a", "@b", "@c", "hi", "x@a"]), max_size=3).map(
            " ".join
        ),
        round=st.integers(0, 4),
        passed=st.booleans(),
        kind=st.sampled_from(["message", "message", "message", "pick", "system"]),
    ),
    max_size=25,
)


@settings(max_examples=200)
@given(st.lists(st.sampled_from(NAMES), max_size=4, unique=True), TRANSCRIPTS)
def test_any_transcript_same_answer_within_roster(roster: list[str], transcript: list) -> None:
    planner = P()
    first = planner.plan_next(roster, transcript)
    assert first == planner.plan_next(list(roster), list(transcript))
    assert first is None or first in roster


def test_a_speaker_quoting_its_own_mention_does_not_admit_itself() -> None:
    """Issue 19: the reviewer quoted a person's ``@reviewer`` and was admitted to the next round,
    "mentioned by reviewer". Only another roster agent's mention admits a speaker."""
    planner = RoundRobinRoomPlanner(max_rounds=3, max_messages=10)
    transcript = [
        E(speaker="user", content="@reviewer, please check", round=0),
        E(speaker="planner", content="plan", round=0),
        E(speaker="coder", content="code", round=0),
        E(speaker="reviewer", content="you asked '@reviewer, please check': fine", round=0),
    ]
    assert planner.plan_next(ROSTER, transcript) is None
    transcript[2] = E(speaker="coder", content="code, @reviewer", round=0)
    planned = plan_turn(planner, ROSTER, transcript)
    assert planned is not None and planned.speaker == "reviewer"
    assert planned.reason == "mentioned by coder"
