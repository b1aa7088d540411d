"""Scrubbing exported text (issue 34): each kind of personal data becomes its typed placeholder
and is counted; ordinary chat is left alone; nothing is fetched from the network."""

from __future__ import annotations

import socket

import pytest

from conversation.privacy import Scrubber, scrub_text

KINDS = [
    ("write to ann.lee@example.org please", "write to <EMAIL> please", "EMAIL"),
    ("call me on +1 415 555 0132 tonight", "call me on <PHONE> tonight", "PHONE"),
    ("my card is 4111 1111 1111 1111", "my card is <CREDIT_CARD>", "CREDIT_CARD"),
    ("the server at 192.168.3.4 is down", "the server at <IP_ADDRESS> is down", "IP_ADDRESS"),
    ("see https://example.com/x?a=1 first", "see <URL> first", "URL"),
    ("my id is 5f3a9b2c1d4e5f6a7b8c9d0e ok", "my id is <RECRUITMENT_ID> ok", "RECRUITMENT_ID"),
    ("worker A1B2C3D4E5F6G7 here", "worker <RECRUITMENT_ID> here", "RECRUITMENT_ID"),
]


@pytest.mark.parametrize(("text", "expected", "label"), KINDS)
def test_each_kind_becomes_its_typed_placeholder_and_is_counted(
    text: str, expected: str, label: str
) -> None:
    out, report = scrub_text(text)
    assert out == expected
    assert report.counts == {label: 1}
    assert report.to_dict()["texts_changed"] == 1


def test_a_studys_own_recruitment_ids_are_replaced_whatever_their_shape() -> None:
    scrubber = Scrubber(known_ids=["PID-A", "x"])  # too short an id is not looked for
    assert scrubber.scrub("I am PID-A, hi x") == "I am <RECRUITMENT_ID>, hi x"
    assert scrubber.report.counts == {"RECRUITMENT_ID": 1}


@pytest.mark.parametrize(
    "text",
    [
        "I offer $5 for the mug, ok?",
        "How about 4.5? Deal at 7.",
        "Let's meet halfway: 12.50 and we're done in 2-3 minutes.",
        "{{ 7*7 }} is not a number I like",
    ],
)
def test_ordinary_chat_is_left_as_it_is(text: str) -> None:
    out, report = scrub_text(text)
    assert out == text
    assert report.counts == {}


def test_names_are_looked_for_only_with_a_language_model_and_the_report_says_so() -> None:
    import spacy.util

    from conversation.privacy import NAME_MODELS

    installed = any(spacy.util.is_package(m) for m in NAME_MODELS)
    scrubber = Scrubber()
    out = scrubber.scrub("Alice Smith met Bob in Paris")
    assert scrubber.report.names is installed
    assert ("<PERSON>" in out) is installed
    assert any("names" in line for line in scrubber.report.lines())


def test_scrubbing_reaches_no_other_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The e-mail check's suffix list is the one shipped with tldextract (its default would
    fetch the current list on first use)."""
    import conversation.privacy.scrub as scrub

    monkeypatch.setattr(scrub, "_ENGINES", scrub._Engines())  # built again, under the guard

    def refuse(self: socket.socket, address: object) -> None:
        raise AssertionError(f"scrubbing tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    out, _ = scrub_text("mail bob@mail.example.co.uk now")
    assert out == "mail <EMAIL> now"


def test_json_values_are_scrubbed_inside() -> None:
    scrubber = Scrubber()
    value = {"q": ["a@b.org", 3, None], "r": "fine"}
    assert scrubber.scrub_value(value) == {"q": ["<EMAIL>", 3, None], "r": "fine"}


def test_one_report_counts_every_kind_across_texts() -> None:
    """A package's scrub report: one scrubber over many texts counts each placeholder."""
    scrubber = Scrubber()
    outputs = [scrubber.scrub(text) for text, _, _ in KINDS]
    assert outputs == [expected for _, expected, _ in KINDS]
    assert scrubber.scrub("nothing personal here") == "nothing personal here"
    report = scrubber.report.to_dict()
    assert report["replacements"] == {
        "CREDIT_CARD": 1,
        "EMAIL": 1,
        "IP_ADDRESS": 1,
        "PHONE": 1,
        "RECRUITMENT_ID": 2,
        "URL": 1,
    }
    assert (report["total"], report["texts"], report["texts_changed"]) == (7, 8, 7)
    assert scrubber.report.lines()[0] == (
        "scrubbed 8 texts, 7 changed: <CREDIT_CARD> 1, <EMAIL> 1, <IP_ADDRESS> 1, <PHONE> 1, "
        "<RECRUITMENT_ID> 2, <URL> 1"
    )
