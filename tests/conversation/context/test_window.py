"""What each agent is shown: visibility, the window, stored summaries, saw, turns left."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conversation.context.window import (
    EVENT_OVERHEAD_TOKENS,
    AgentContext,
    ContextPolicy,
    TurnsLeft,
    build_context,
    context_policy_from_dict,
    estimate_tokens,
    event_tokens,
    summary_request,
    turns_left,
    visible_positions,
)
from conversation.exceptions import ConversationValueError
from conversation.planning.events import RoomEvent
from conversation.text.transcript import parse_transcript

E = RoomEvent
ROSTER = ["Alice", "Bob", "Carol"]


def chat(n: int, opener: str = "user") -> list[RoomEvent]:
    """A human opener followed by ``n`` agent messages."""
    return [E(opener, "kick-off")] + [E(ROSTER[i % 2], f"message {i}") for i in range(n)]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 2),
        ("abcde", 3),
        ("x" * 400, 400),  # no vowels: one per letter
        ("banana" * 50, 150),
        ("a b", 2),  # a space before a word joins it
        ("a  b", 3),  # a second space does not
        ("12 34", 5),  # digits and a space before a digit count one each
        ("{}", 2),
        ("\u00e9", 2),  # UTF-8 bytes
        ("\U0001f600", 4),
    ],
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


@given(st.text(max_size=60), st.text(max_size=60))
def test_estimate_tokens_never_shrinks_when_text_is_appended(head: str, tail: str) -> None:
    assert estimate_tokens(head + tail) >= estimate_tokens(head)


@given(st.text(max_size=200))
def test_estimate_tokens_is_at_least_a_quarter_of_the_characters(text: str) -> None:
    # the estimate this project used before (and most tokenizers' average) is a floor
    assert estimate_tokens(text) >= len(text) // 4


def test_event_tokens_counts_speaker_content_and_framing() -> None:
    # speaker 2 + content 4 + the header + one quoted line
    assert event_tokens(E("Bob", "abcdefgh")) == 2 + 4 + EVENT_OVERHEAD_TOKENS + 2
    assert event_tokens(E("Bob", "a\nb")) == 2 + 3 + EVENT_OVERHEAD_TOKENS + 4
    assert event_tokens(E("Bob", "x", visible_to=("Ann",))) > event_tokens(E("Bob", "x"))


# -- visibility ------------------------------------------------------------------------------

PRIVATE = [
    E("user", "hello all"),
    E("Alice", "psst Bob", visible_to=("Bob",)),
    E("room", "Carol's draft was denied: off topic", kind="system", visible_to=("Carol",)),
    E("mod", "Bob", kind="pick"),
    E("Bob", "public reply"),
]


@pytest.mark.parametrize(
    ("agent", "shown"),
    [
        ("Alice", (0, 1, 4)),  # the author sees her private message
        ("Bob", (0, 1, 4)),  # the addressee sees it
        ("Carol", (0, 2, 4)),  # Carol sees only her own notice, and never the pick
    ],
)
def test_visibility_table(agent: str, shown: tuple[int, ...]) -> None:
    context = build_context(agent, ROSTER, PRIVATE)
    assert context.positions == shown
    assert context.saw == shown


def test_visible_positions_is_about_permission_of_any_kind() -> None:
    assert visible_positions("Carol", PRIVATE) == [0, 2, 3, 4]


# -- the window ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "positions"),
    [
        (ContextPolicy(), tuple(range(11))),
        (ContextPolicy(max_messages=3), (0, 8, 9, 10)),  # the opener stays, outside the count
        (ContextPolicy(max_messages=30), tuple(range(11))),
        # Budget: persona 7 + opener 21 -> 52 left; messages cost 22 (Bob) and 23 (Alice):
        # two fit.
        (ContextPolicy(max_tokens=80), (0, 9, 10)),
        (ContextPolicy(max_tokens=80, max_messages=1), (0, 10)),
        (ContextPolicy(max_tokens=5), (0,)),  # persona and opener are never dropped
    ],
)
def test_window_table(policy: ContextPolicy, positions: tuple[int, ...]) -> None:
    context = build_context("Carol", ROSTER, chat(10), persona="You are Carol", policy=policy)
    assert context.positions == positions
    assert context.opener == 0
    assert context.omitted == tuple(i for i in range(11) if i not in positions)
    assert context.records(chat(10))[0] == {"kind": "persona", "content": "You are Carol"}


def test_token_estimate_of_the_context() -> None:
    events = chat(10)
    context = build_context(
        "Carol", ROSTER, events, persona="You are Carol", policy=ContextPolicy(max_tokens=80)
    )
    assert context.tokens == estimate_tokens("You are Carol") + sum(
        event_tokens(events[i]) for i in context.positions
    )
    assert context.tokens <= 80


def test_window_is_per_activity_opener() -> None:
    events = [*chat(4), E("user", "second question"), *chat(3)[1:]]
    context = build_context("Carol", ROSTER, events, policy=ContextPolicy(max_messages=1))
    assert context.opener == 5
    assert context.positions == (5, 8)


def test_an_opener_the_agent_may_not_see_is_not_kept() -> None:
    events = [E("user", "secret", visible_to=("Alice",)), *chat(3)[1:]]
    context = build_context("Carol", ROSTER, events, policy=ContextPolicy(max_messages=1))
    assert context.opener is None and context.positions == (3,)


# -- summaries -------------------------------------------------------------------------------


def test_summary_request_and_splice() -> None:
    policy = ContextPolicy(max_messages=3, summarize=True, summary_batch=5)
    events = chat(6)  # 0 opener, 1..6 messages; window keeps 4..6
    assert summary_request(ROSTER, events, policy) is None  # 3 dropped (0..3 incl. opener) < 5
    events += chat(3)[1:]  # now 0..9: window 7..9, dropped 0..6
    request = summary_request(ROSTER, events, policy)
    assert request is not None
    assert request.covers == (0, 7)
    assert request.positions == tuple(range(7))
    assert request.previous is None
    records = parse_transcript(request.text)
    assert records[0] == {"speaker": "user", "text": "kick-off"}
    assert request.text.splitlines()[0] == "- user: kick-off"
    assert len(records) == 7

    events.append(request.to_event("They counted to six."))
    assert events[-1].kind == "summary" and events[-1].covers == (0, 7)
    context = build_context("Carol", ROSTER, events, policy=policy)
    # Summary where the covered part began, then the opener (always kept), then the window.
    assert context.positions == (10, 0, 7, 8, 9)
    assert context.summary == 10 and context.omitted == ()
    assert summary_request(ROSTER, events, policy) is None  # computed once


def test_rolling_summary_extends_the_previous_one() -> None:
    policy = ContextPolicy(max_messages=2, summarize=True, summary_batch=2)
    events = [*chat(6), E("summary", "first part", kind="summary", covers=(0, 3))]
    request = summary_request(ROSTER, events, policy)
    assert request is not None
    assert request.previous == "first part"
    assert request.covers == (0, 5)
    assert request.positions == (3, 4)
    assert request.text.splitlines()[0] == "- summary (summary): first part"


def test_private_events_are_never_summarised() -> None:
    policy = ContextPolicy(max_messages=1, summarize=True, summary_batch=1)
    events = [
        E("user", "go"),
        E("Alice", "secret", visible_to=("Bob",)),
        E("Bob", "a"),
        E("Carol", "b"),
    ]
    request = summary_request(ROSTER, events, policy)
    assert request is not None and 1 not in request.positions
    assert "secret" not in request.text
    events.append(request.to_event("summary"))
    # Bob may see the private message, which no summary covers: it is omitted, not lost silently.
    assert 1 in build_context("Bob", ROSTER, events, policy=policy).omitted


@pytest.mark.parametrize(
    "policy",
    [ContextPolicy(max_messages=1), ContextPolicy(summarize=True)],
    ids=["summaries off", "no window"],
)
def test_no_summary_requested(policy: ContextPolicy) -> None:
    assert summary_request(ROSTER, chat(40), policy) is None


def test_summary_event_must_have_text() -> None:
    request = summary_request(
        ROSTER, chat(20), ContextPolicy(max_messages=1, summarize=True, summary_batch=1)
    )
    assert request is not None
    with pytest.raises(ConversationValueError):
        request.to_event("  ")


# -- saw, turns left, serialization ----------------------------------------------------------


def test_saw_uses_seqs_when_given() -> None:
    events = chat(3)
    context = build_context(
        "Carol", ROSTER, events, seqs=[10, 11, 12, 13], policy=ContextPolicy(max_messages=1)
    )
    assert context.positions == (0, 3) and context.saw == (10, 13)
    with pytest.raises(ConversationValueError, match="seqs"):
        build_context("Carol", ROSTER, events, seqs=[1])


@pytest.mark.parametrize(
    ("current", "maximum", "remaining"),
    [(0, 20, 20), (19, 20, 1), (20, 20, 0), (25, 20, 0), (0, 0, 0)],
)
def test_turns_left_table(current: int, maximum: int, remaining: int) -> None:
    hint = turns_left(current, maximum)
    assert hint == TurnsLeft(current, maximum, remaining)
    assert hint.to_dict() == {"current_turn": current, "max_turns": maximum, "remaining": remaining}


@pytest.mark.parametrize(("current", "maximum"), [(-1, 3), (1, -3), (True, 3), (1, 2.0)])
def test_turns_left_rejects(current: object, maximum: object) -> None:
    with pytest.raises(ConversationValueError):
        turns_left(current, maximum)  # type: ignore[arg-type]


def test_turns_left_in_the_context() -> None:
    events = chat(4)
    assert build_context("Carol", ROSTER, events).turns_left is None
    assert build_context("Carol", ROSTER, events, max_turns=10).turns_left == TurnsLeft(4, 10, 6)
    assert build_context(
        "Carol", ROSTER, events, max_turns=10, current_turn=9
    ).turns_left == TurnsLeft(9, 10, 1)


def test_serialization() -> None:
    policy = ContextPolicy(max_messages=5, max_tokens=900, summarize=True, summary_batch=3)
    assert context_policy_from_dict(policy.to_dict()) == policy
    assert context_policy_from_dict(None) == ContextPolicy()
    context = build_context("Carol", ROSTER, chat(5), persona="p", policy=policy, max_turns=8)
    assert AgentContext.from_dict(json.loads(json.dumps(context.to_dict()))) == context
    with pytest.raises(ConversationValueError):
        AgentContext.from_dict({"agent": "x"})


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"max_messages": 0}, "max_messages"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"summary_batch": 0}, "summary_batch"),
        ({"summarize": "yes"}, "summarize"),
        ({"window": 3}, "window"),
    ],
)
def test_bad_policy(data: dict, field: str) -> None:
    with pytest.raises(ConversationValueError, match=field):
        context_policy_from_dict(data)


def test_bad_persona() -> None:
    with pytest.raises(ConversationValueError, match="persona"):
        build_context("Carol", ROSTER, [], persona=None)  # type: ignore[arg-type]


# -- properties ------------------------------------------------------------------------------

EVENTS = st.lists(
    st.builds(
        E,
        speaker=st.sampled_from(["Alice", "Bob", "Carol", "user"]),
        content=st.text(alphabet="abc ", max_size=30),
        passed=st.booleans(),
        kind=st.sampled_from(["message", "message", "message", "system", "pick"]),
        visible_to=st.none() | st.sampled_from([("Alice",), ("Bob", "Carol")]),
    ),
    max_size=30,
)
POLICIES = st.builds(
    ContextPolicy,
    max_messages=st.none() | st.integers(1, 8),
    max_tokens=st.none() | st.integers(1, 120),
)


@settings(max_examples=200)
@given(EVENTS, POLICIES, st.text(max_size=40), st.sampled_from(ROSTER))
def test_window_properties(events: list, policy: ContextPolicy, persona: str, agent: str) -> None:
    context = build_context(agent, ROSTER, events, persona=persona, policy=policy)
    assert context == build_context(agent, ROSTER, list(events), persona=persona, policy=policy)
    records = context.records(events)
    assert records[0] == {"kind": "persona", "content": persona}  # the persona is never dropped
    assert all(events[i].visible_for(agent) for i in context.positions)
    assert all(events[i].kind != "pick" for i in context.positions)
    human = [i for i, e in enumerate(events) if e.kind == "message" and e.speaker == "user"]
    if human and events[human[-1]].visible_for(agent):
        assert context.opener == human[-1] and human[-1] in context.positions
    window = [i for i in context.positions if i != context.opener]
    if policy.max_messages is not None:
        assert len(window) <= policy.max_messages
    if policy.max_tokens is not None and window:
        assert context.tokens <= policy.max_tokens
    assert window == sorted(window)
    # The window is the newest run: nothing shown is older than something dropped after it.
    if window:
        assert all(i < window[0] for i in context.omitted)


def test_negative_control_a_plain_last_n_would_drop_the_opener() -> None:
    events = chat(10)
    plain_last_three = list(range(len(events)))[-3:]
    assert 0 not in plain_last_three
    assert (
        0 in build_context("Carol", ROSTER, events, policy=ContextPolicy(max_messages=3)).positions
    )


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_token_estimates_add_up_over_line_breaks_and_never_shrink(a: str, b: str) -> None:
    # Estimated line by line (and memoised): the same figure as the text as a whole would get.
    from conversation.text.tokens import estimate_tokens

    assert estimate_tokens(a + "\n" + b) == estimate_tokens(a) + 1 + estimate_tokens(b)
    assert estimate_tokens(a + b) >= estimate_tokens(a)
    long_line = (a or "x") * (2_000 // max(1, len(a or "x")) + 1)
    assert estimate_tokens(long_line + "\n" + b) == (
        estimate_tokens(long_line) + 1 + estimate_tokens(b)
    )
