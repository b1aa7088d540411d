"""extract_mentions (grammar, to the letter: docs/design.md, "Rooms, activities and mentions") and mentioned_roster."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conversation.planning.mentions import extract_mentions, mentioned_roster
from conversation.rooms import extract_mentions as rooms_extract_mentions

NAME = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_\-.]{0,8}", fullmatch=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The seed's own examples.
        ("@coder and @reviewer, then @coder again", ["coder", "reviewer"]),
        ("email me at foo@bar.com", []),
        ("", []),
        # Grammar: first character alphanumeric; then word characters, dash, dot.
        ("@a", ["a"]),
        ("@9lives", ["9lives"]),
        ("@_private @-dash @.dot", []),
        ("@first.last-name_2 hi", ["first.last-name_2"]),
        ("@Coder @coder", ["Coder", "coder"]),  # case preserved, both kept
        ("(@coder) [@reviewer]", ["coder", "reviewer"]),
        ("line\n@next", ["next"]),
        ("@@double", ["double"]),  # the second @ is not glued to a word character
        ("x@y @z", ["z"]),  # glued @ is ignored, free one is not
        ("foo_@bar", []),  # underscore is a word character
        ("@", []),
        ("@ coder", []),
        ("step 1: form. @coder please.", ["coder"]),
        ("over to @reviewer.", ["reviewer."]),  # the grammar allows a trailing dot
    ],
)
def test_extract_mentions_table(text: str, expected: list[str]) -> None:
    assert extract_mentions(text) == expected


def test_rooms_reexports_the_same_function() -> None:
    assert rooms_extract_mentions is extract_mentions


@given(
    st.lists(NAME, max_size=6),
    st.lists(st.sampled_from([" ", ", ", "\n", " and "]), min_size=6, max_size=6),
)
def test_mentions_are_first_seen_and_unique(names: list[str], seps: list[str]) -> None:
    text = "".join(f"@{name}{seps[i % len(seps)]}" for i, name in enumerate(names))
    found = extract_mentions(text)
    assert found == list(dict.fromkeys(names))
    assert len(found) == len(set(found))


@given(st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=5), NAME)
def test_an_at_glued_to_a_word_character_never_matches(prefix: str, name: str) -> None:
    # Email-safety: "<word>@name" is an address, not a mention.
    assert extract_mentions(f"{prefix}@{name}") == []


@given(st.text(max_size=60))
def test_every_mention_obeys_the_grammar_and_is_preceded_properly(text: str) -> None:
    found = extract_mentions(text)
    assert len(found) == len(set(found))
    for name in found:
        assert re.fullmatch(r"[A-Za-z0-9][\w\-.]*", name)
        # Each reported name occurs after an @ that is not glued to a word character.
        assert re.search(rf"(?<!\w)@{re.escape(name)}", text)


@given(st.text(max_size=60))
def test_same_input_same_output(text: str) -> None:
    assert extract_mentions(text) == extract_mentions(text)


@pytest.mark.parametrize(
    ("text", "roster", "expected"),
    [
        ("@reviewer @coder", ["planner", "coder", "reviewer"], ["coder", "reviewer"]),
        ("@nobody hi", ["a", "b"], []),
        ("thanks, @reviewer.", ["reviewer"], ["reviewer"]),  # sentence-ending dot tolerated
        ("see @reviewer--", ["reviewer"], ["reviewer"]),
        ("ask @v1.2", ["v1.2", "v1"], ["v1.2"]),  # an exact match wins over trimming
        ("ask @v1.", ["v1.", "v1"], ["v1."]),
        ("@Coder", ["coder"], []),  # case-sensitive
        ("@a @a @a", ["a"], ["a"]),
    ],
)
def test_mentioned_roster_table(text: str, roster: list[str], expected: list[str]) -> None:
    assert mentioned_roster(text, roster) == expected


@given(st.lists(NAME, min_size=1, max_size=5, unique=True), st.lists(NAME, max_size=6))
def test_mentioned_roster_is_roster_ordered_subset(roster: list[str], said: list[str]) -> None:
    text = " ".join(f"@{n}" for n in said)
    found = mentioned_roster(text, roster)
    assert set(found) <= set(roster)
    assert found == [n for n in roster if n in found]
