"""Prompt templates are refused when given, not when rendered: compiled, checked and
trial-rendered at ``Room.create`` with representative values. A room can never be created with
a template that fails on its first turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversation.models import OfflineModel
from conversation.rooms.room import Room
from storage import Database
from tests.boundary.conftest import AGENTS, BIG

#: (id, template, words the error must contain besides the field name)
HOSTILE: list[tuple[str, Any, tuple[str, ...]]] = [
    ("__class__", "{{ speaker_name.__class__ }}", ("'__class__'",)),
    ("__mro__", "{{ agent_names.__class__.__mro__ }}", ("may not use the attribute '__",)),
    ("subscript dunder", "{{ speaker_name['__class__'] }}", ("'__class__'",)),
    (".format trick", "{{ '{0.__class__}'.format(speaker_name) }}", ("'format'",)),
    ("format_map", "{{ '{x}'.format_map(agent_names) }}", ("'format_map'",)),
    ("self", "{{ self }}", ("'self'",)),
    ("attr filter", "{{ speaker_name | attr('__class__') }}", ("'attr'",)),
    ("map attribute", "{{ agent_names | map(attribute='__class__') | join }}", ("'__class__'",)),
    ("huge range", "{% for i in range(10**9) %}x{% endfor %}", ("range()",)),
    (
        "nested ranges",
        "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
        ("nests loops",),
    ),
    ("loop over text", "{% for c in conversation %}{{ c }}{% endfor %}", ("loops over",)),
    (
        "loops 3 deep",
        "{% for a in agent_names %}{% for b in agent_names %}{% for c in agent_names %}{% endfor %}{% endfor %}{% endfor %}",
        ("nests loops",),
    ),
    ("huge power", "{{ 10 ** 100000 }}", ("too large",)),
    ("tower of powers", "{{ 9 ** 9 ** 9 }}", ("too large",)),
    (
        "huge power in a branch",
        "{% if current_turn > 50 %}{{ 2 ** 100000 }}{% endif %}",
        ("too large",),
    ),
    ("huge repetition", "{{ 'a' * 100000000 }}", ("repetition",)),
    ("repeating the conversation", "{{ conversation * 3 }}", ("* on a variable",)),
    ("repeating a filter", "{{ (agent_names | join) * 1000 }}", ("* on a variable",)),
    ("division by zero", "{{ 1 / 0 }}", ("division by zero",)),
    ("fails on the first turn", "{{ 10 // current_turn }}", ("division",)),
    ("a missing attribute", "{{ current_turn.foo.bar }}", ("foo",)),
    ("None on the first turn", "{{ feedback.upper() }}", ("prompt_template",)),
    ("an unknown filter", "{{ speaker_name | nosuch }}", ("nosuch",)),
    ("an unknown variable", "{{ secret_sauce }}", ("secret_sauce",)),
    ("a macro", "{% macro m() %}x{% endmacro %}", ("macro",)),
    ("an include", "{% include 'x' %}", ("include",)),
    ("a syntax error", "{{ speaker_name ", ("not a valid template",)),
    ("50 MB", BIG, ("limit",)),
    ("not text", 5, ("string",)),
]


@pytest.mark.parametrize(
    ("template", "words"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE]
)
def test_hostile_templates_are_refused_at_creation(
    seeded_db: Database, refused: Callable[..., Any], template: Any, words: tuple[str, ...]
) -> None:
    refused(
        lambda: Room.create(
            seeded_db, name="r", agents=AGENTS, model=OfflineModel(), prompt_template=template
        ),
        "prompt_template",
        *words,
    )


FRAGMENTS = [
    " Hello. ",
    "{{ speaker_name }}",
    "{{ conversation }}",
    "{{ agent_names | join(', ') }}",
    "{{ current_turn + 1 }}",
    "{{ max_turns }}",
    "{{ turns_left - 1 }}",
    "{{ 12 // turns_left }}",
    "{{ 12 // (turns_left - 3) }}",
    "{{ 12 // current_turn }}",
    "{{ feedback.upper() }}",
    "{{ feedback | default('none') }}",
    "{% if addressee %}{{ addressee.upper() }}{% endif %}",
    "{{ addressee.lower() }}",
    "{{ activity_opener[:20] }}",
    "{{ activity_opener | length }}",
    "{% for n in agent_names %}{{ n }}, {% endfor %}",
    "{{ speaker_name * 3 }}",
    "{{ current_turn * 2 }}",
    "{{ agent_names[5] }}",
    "{{ conversation | upper }}",
]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(parts=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4))
def test_a_created_room_never_fails_its_first_turn_on_its_template(
    db: Database, parts: list[str]
) -> None:
    template = "".join(parts)
    try:
        room = Room.create(
            db,
            name="r",
            agents=AGENTS,
            model=OfflineModel(),
            prompt_template=template,
            termination={"kind": "max_turns", "max_turns": 3},
        )
    except Exception as exc:  # noqa: BLE001 - the assertion is on its type
        assert type(exc).__name__ == "ConversationValueError", repr(exc)
        assert "prompt_template" in str(exc)
        return
    room.post("Let us begin.")
    turn = room.step()
    assert turn is not None and turn.state == "done", (template, room.stop_reason)
