"""``conversation.text.limits``: the measuring walk and the settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conversation.exceptions import ConversationValueError
from conversation.text.limits import check_json_value

ROOT = Path(__file__).resolve().parents[2]
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=10), inner, max_size=6)
    ),
    max_leaves=60,
)


def text_in(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(k) + text_in(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(text_in(v) for v in value)
    return 0


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 1


@given(value=JSON, limit=st.integers(min_value=10, max_value=2_000))
def test_the_walk_refuses_what_is_too_big_and_never_what_is_small(value: Any, limit: int) -> None:
    size = len(json.dumps(value))
    try:
        check_json_value(value, "value", max_chars=limit, max_depth=10)
    except ConversationValueError as exc:
        assert "value" in str(exc)
        assert size > limit // 4 or depth(value) > 10
    else:
        assert text_in(value) <= limit and depth(value) <= 10


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({1: "a"}, ("key", "text")),
        ({"a": {1, 2}}, ("value.a", "set")),
        ([float("inf")], ("value[0]", "finite")),
        ({"a": object()}, ("value.a", "object")),
    ],
    ids=["int key", "a set", "infinity", "an object"],
)
def test_what_is_not_json_is_named(value: Any, words: tuple[str, ...]) -> None:
    with pytest.raises(ConversationValueError) as caught:
        check_json_value(value, "value", max_chars=1_000)
    for word in words:
        assert word in str(caught.value)


def run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_setting_changes_a_limit_and_a_bad_setting_is_named() -> None:
    code = (
        "from conversation.text import limits; "
        "print(limits.MAX_MESSAGE_CHARS, limits.MAX_IMPORT_BYTES)"
    )
    changed = run(code, ROOMS_MAX_MESSAGE_CHARS="50", ROOMS_MAX_IMPORT_BYTES="1_000")
    assert changed.stdout.split() == ["50", "1000"], changed.stderr[-500:]
    bad = run(code, ROOMS_MAX_MESSAGE_CHARS="lots")
    assert bad.returncode != 0
    assert "ROOMS_MAX_MESSAGE_CHARS='lots' must be a positive whole number" in bad.stderr
