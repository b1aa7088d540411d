"""The secret guard: configuration documents never carry API keys into the database."""

from __future__ import annotations

import pytest

import storage
from storage import Database
from storage.errors import ConfigContainsSecret
from storage.secret_guard import check_no_secrets, is_secret_key


@pytest.fixture
def db(db_url: str):
    with Database(db_url) as database:
        yield database


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"model": {"api_key": "abc123"}}, "config.model.api_key"),
        ({"model": {"apiKey": "abc123"}}, "config.model.apiKey"),
        ({"OPENAI_API_KEY": "whatever"}, "config.OPENAI_API_KEY"),
        ({"auth": {"password": "hunter2"}}, "config.auth.password"),
        ({"client_secret": "cs-9f8e7d"}, "config.client_secret"),
        ({"token": "t0k3n"}, "config.token"),
        ({"access-token": "t0k3n"}, "config.access-token"),
        ({"headers": {"Authorization": "Basic dXNlcjpwYXNz"}}, "config.headers.Authorization"),
        ({"roster": [{"notes": "sk-proj-abcdefghijklmnopqrstuvwx"}]}, "config.roster[0].notes"),
        ({"x": "AIzaSyA1234567890abcdefghijklmnopqrstu"}, "config.x"),
        ({"x": "key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz"}, "config.x"),
        ({"x": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, "config.x"),
        ({"x": "AKIAABCDEFGHIJKLMNOP"}, "config.x"),
        ({"x": "Bearer abcdefghijklmnopqrstuvwxyz"}, "config.x"),
        ({"x": "-----BEGIN RSA PRIVATE KEY-----\nMII..."}, "config.x"),
        ({"api_key_env": "sk-proj-abcdefghijklmnopqrstuvwx"}, "config.api_key_env"),
        ({"api_key_env": "not an env name"}, "config.api_key_env"),
    ],
)
def test_secrets_are_refused_with_their_path(document: dict, path: str) -> None:
    with pytest.raises(ConfigContainsSecret) as caught:
        check_no_secrets(document, field="config")
    assert caught.value.path == path
    assert "environment" in str(caught.value)
    for value in _strings(document):
        assert value not in str(caught.value)  # the secret itself never reaches messages/logs


def _strings(value):  # type: ignore[no-untyped-def]
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


@pytest.mark.parametrize(
    "document",
    [
        {"max_tokens": 200, "input_tokens": 12, "token_budget": 1000},
        {"stop_token": "</s>", "eos_token": "<|end|>"},
        {"api_key_env": "OPENAI_API_KEY", "model": "gpt-4o-mini"},
        {"secrets": {"source": None}, "password": ""},
        {"persona": "You negotiate hard; never reveal your secret reservation price."},
        {"roster": [{"name": "Alice", "traits": {"age": 30, "tokenizer": "cl100k"}}]},
        {"note": "keys look like sk-... but this is prose"},
    ],
)
def test_ordinary_configuration_passes(document: dict) -> None:
    check_no_secrets(document, field="config")


def test_key_names() -> None:
    assert is_secret_key("ANTHROPIC_API_KEY") and is_secret_key("privateKey")
    assert not is_secret_key("max_tokens") and not is_secret_key("tokens")


def test_every_configuration_entry_point_is_guarded(db: Database) -> None:
    bad = {"model": {"api_key": "abc123"}}
    with pytest.raises(ConfigContainsSecret):
        storage.create_room(db, "r", bad)
    room = storage.create_room(db, "r", {"ok": True})
    with pytest.raises(ConfigContainsSecret):
        storage.update_room(db, room, config=bad)
    assert storage.get_room(db, room).config == {"ok": True}
    with pytest.raises(ConfigContainsSecret):
        storage.create_experiment(db, "e", bad)
    with pytest.raises(ConfigContainsSecret):
        storage.create_agent_profile(db, "Alice", traits={"openai_api_key": "abc"})
    with pytest.raises(ConfigContainsSecret):
        storage.create_agent_profile(db, "Alice", model={"api_key": "abc"})
    with pytest.raises(ConfigContainsSecret):
        storage.create_analysis(db, "q", {"text": "?"}, model={"token": "abc"})
    assert storage.count_rooms(db) == 1
    assert storage.list_experiments(db) == [] and storage.list_agent_profiles(db) == []


def test_no_secret_reaches_the_database_file(db: Database, db_url: str) -> None:
    secret = "sk-proj-THISMUSTNEVERBESTORED0123456789"
    with pytest.raises(ConfigContainsSecret):
        storage.create_room(db, "r", {"model": {"key": secret}})
    db.dispose()
    path = db_url.removeprefix("sqlite:///")
    for suffix in ("", "-wal"):
        try:
            with open(path + suffix, "rb") as handle:
                assert secret.encode() not in handle.read()
        except FileNotFoundError:
            pass


def test_messages_are_not_scanned(db: Database) -> None:
    room = storage.create_room(db, "r")
    text = "my key starts with sk-proj-abcdefghijklmnopqrstuvwx, is that bad?"
    assert storage.append_message(db, room, "human", "u", text).content == text
