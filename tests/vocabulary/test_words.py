"""The kinds of turns and notices: enums whose stored values are the words rows always carried."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from conversation import vocabulary
from vocabulary import KIND_KEY, NoticeKind, TurnKind, kind_of, turn_kind_of


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"event": "summary", "covers_seqs": [1, 3]}, TurnKind.SUMMARY),
        ({"event": "candidates"}, TurnKind.CANDIDATES),
        ({"event": "pick", "eligible": ["Ana"]}, TurnKind.PICK),
        ({"event": "paused", "by": "breakpoint"}, NoticeKind.PAUSED),
        ({"event": "resumed"}, NoticeKind.RESUMED),
        ({"event": "stopped"}, NoticeKind.STOPPED),
        ({"event": "terminated"}, NoticeKind.TERMINATED),
        ({"event": "failed"}, NoticeKind.FAILED),
        ({"event": "forked"}, NoticeKind.FORKED),
        ({"event": "config_changed"}, NoticeKind.CONFIG_CHANGED),
        ({"chosen_because": "round robin"}, None),
        ({"event": "something new"}, None),
        ({"event": 3}, None),
        ({}, None),
        (None, None),
    ],
)
def test_kind_of_reads_the_stored_word_from_a_row_or_its_data(data: object, kind: object) -> None:
    assert kind_of(data) == kind
    assert kind_of(SimpleNamespace(data=data)) == kind


def test_stored_values_are_the_words_rows_always_carried() -> None:
    assert KIND_KEY == "event"
    assert [k.value for k in TurnKind] == ["speak", "summary", "candidates", "pick", "hand"]
    assert {k.value for k in NoticeKind} == {
        "paused",
        "resumed",
        "stopped",
        "terminated",
        "failed",
        "forked",
        "config_changed",
    }
    assert json.dumps({"event": NoticeKind.PAUSED}) == '{"event": "paused"}'


def test_a_plain_speaking_turn_stores_no_kind() -> None:
    assert turn_kind_of({"chosen_because": "x"}) is TurnKind.SPEAK
    assert turn_kind_of({"event": "paused"}) is TurnKind.SPEAK  # a notice is no turn kind
    assert turn_kind_of({"event": "pick"}) is TurnKind.PICK
    assert kind_of({"event": "speak"}) is None  # never written


def test_conversation_re_exports_the_same_values() -> None:
    assert vocabulary.TurnKind is TurnKind and vocabulary.NoticeKind is NoticeKind
    assert vocabulary.kind_of is kind_of
