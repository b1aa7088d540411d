"""The sandboxed template renderer and ``neutralize``: templates are bounded by work, not by the
wall clock, so a loaded machine never makes a good template fail."""

from __future__ import annotations

import itertools
import time

import pytest

from conversation.exceptions import ConversationValueError
from conversation.rooms.config import ROOM_PROMPT_VARIABLES
from conversation.rooms.prompt import DEFAULT_ROOM_PROMPT
from conversation.text.safety import ZERO_WIDTH_SPACE, compiled_template, neutralize

VALUES = {
    "speaker_name": "Alice",
    "conversation": "(one JSON record per message)\n" + '{"seq": 1, "text": "hi"}\n' * 2000,
    "agent_names": ["Alice", "Bob"],
    "current_turn": 3,
    "max_turns": 10,
    "turns_left": 7,
    "feedback": None,
    "activity_opener": "hi",
    "addressee": None,
}


def test_the_default_prompt_renders_whatever_the_wall_clock_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A machine so loaded that every wall-clock reading is a minute later than the last."""
    ticks = itertools.count()
    monkeypatch.setattr(time, "monotonic", lambda: 60.0 * next(ticks))
    monkeypatch.setattr(time, "time", lambda: 60.0 * next(ticks))
    template = compiled_template(DEFAULT_ROOM_PROMPT, ROOM_PROMPT_VARIABLES, "prompt_template")
    text = template.render(VALUES)
    assert text.startswith("You are Alice")


@pytest.mark.parametrize(
    "source",
    [
        "{% for a in conversation %}{% for b in conversation %}{% endfor %}{% endfor %}",
        "{% for line in conversation.splitlines() %}{{ line }}{% endfor %}",
        "{% for c in speaker_name %}x{% endfor %}",
    ],
)
def test_loops_over_text_are_refused_when_the_template_is_given(source: str) -> None:
    """Nested loops over a long transcript would run for minutes with no output to notice: the
    refusal comes from reading the template, not running it (next to no CPU time)."""
    cpu = time.thread_time()
    with pytest.raises(ConversationValueError, match="prompt_template loops over something"):
        compiled_template(source, ROOM_PROMPT_VARIABLES, "prompt_template")
    assert time.thread_time() - cpu < 1


def test_loops_over_lists_and_ranges_are_allowed() -> None:
    source = (
        "{% for n in agent_names %}{% for i in range(2) %}{{ n }}{{ i }} {% endfor %}{% endfor %}"
        "{% for x in ['a', 'b'] %}{{ x }}{% endfor %}{% for n in agent_names | reverse %}{% endfor %}"
    )
    text = compiled_template(source, ROOM_PROMPT_VARIABLES, "prompt_template").render(VALUES)
    assert text == "Alice0 Alice1 Bob0 Bob1 ab"


def test_output_that_grows_too_long_is_stopped() -> None:
    source = "{% for i in range(1000) %}{% for j in range(100) %}{{ speaker_name }}{% endfor %}{% endfor %}"
    template = compiled_template(source, ROOM_PROMPT_VARIABLES, "prompt_template")
    with pytest.raises(ConversationValueError, match="produced more than"):
        template.render(VALUES)


def test_neutralize_breaks_every_template_opener_and_is_idempotent() -> None:
    text = "{{ 7*7 }} {% if x %} {# c #} {plain}"
    once = neutralize(text)
    assert "{{" not in once and "{%" not in once and "{#" not in once
    assert once.replace(ZERO_WIDTH_SPACE, "") == text
    assert neutralize(once) == once


@pytest.mark.parametrize(
    "source",
    [
        "{{ speaker_name }}",  # fewer chunks than the clock's stride: checked at the end
        "{% for i in range(500) %}{{ i }}{% endfor %}",  # many chunks: checked on the way
    ],
)
def test_a_render_that_outlasts_its_cpu_budget_is_refused(
    monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """The render's CPU clock is read every few chunks and at the end, so a template that
    takes too long is refused however many pieces it yields."""
    ticks = itertools.count()
    monkeypatch.setattr(time, "thread_time", lambda: 60.0 * next(ticks))
    template = compiled_template(source, ROOM_PROMPT_VARIABLES, "prompt_template")
    with pytest.raises(ConversationValueError, match="s of computing"):
        template.render(VALUES)
