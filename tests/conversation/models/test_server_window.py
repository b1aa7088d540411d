"""The context window from a setting: a room's value, what a self-hosted server reports
(llama.cpp's ``/props``, asked once and remembered), the ``ROOMS_CONTEXT_WINDOW`` setting, and
the defaults (checked against a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import socket
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from conversation.models.server_window import TIMEOUT_SECONDS, forget_reported_windows
from conversation.models.settings import CONTEXT_WINDOW_ENV, SERVER_CONTEXT_WINDOW, context_window
from conversation.rooms.config import RoomConfig
from settings import SettingError
from tests.support.openai_server import OpenAICompatibleServer


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(CONTEXT_WINDOW_ENV, raising=False)
    forget_reported_windows()
    yield
    forget_reported_windows()


def server_spec(url: str) -> dict[str, str]:
    return {"service": "openai_compatible", "model": "tiny", "base_url": url}


def test_a_server_that_reports_its_window_is_asked_once() -> None:
    with OpenAICompatibleServer(n_ctx=16_384) as server:
        spec = server_spec(server.base_url)
        assert context_window(spec) == 16_384
        assert context_window(spec) == 16_384
        assert [r.path for r in server.requests] == ["/props"]
        config = RoomConfig.build(agents=[{"name": "Ann"}], model=spec)
        assert config.call_settings("Ann").context_window == 16_384
        assert context_window(spec, 2048) == 2048  # the room's own value wins


def test_a_server_that_reports_nothing_gets_the_setting_or_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OpenAICompatibleServer() as server:
        spec = server_spec(server.base_url)
        assert context_window(spec) == SERVER_CONTEXT_WINDOW
        monkeypatch.setenv(CONTEXT_WINDOW_ENV, "9000")
        assert context_window(spec) == 9000
        assert context_window({"service": "ollama", "model": "llama3"}) == 9000


def test_an_unreachable_server_costs_at_most_the_timeout_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(CONTEXT_WINDOW_ENV, "8192")
    asked: list[tuple[str, float]] = []
    urlopen = urllib.request.urlopen

    def recording_urlopen(request: urllib.request.Request, timeout: float) -> object:
        asked.append((urllib.parse.urlsplit(request.full_url).path, timeout))
        return urlopen(request, timeout=timeout)

    monkeypatch.setattr(urllib.request, "urlopen", recording_urlopen)
    spec = server_spec(f"http://127.0.0.1:{port}/v1")
    assert context_window(spec) == 8192
    assert context_window(spec) == 8192
    # Each request is bounded by the timeout, and the server is not asked again.
    assert asked == [("/props", TIMEOUT_SECONDS), ("/v1/models", TIMEOUT_SECONDS)]


def test_known_hosted_models_keep_their_window_and_unknown_ones_take_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CONTEXT_WINDOW_ENV, "32000")
    assert context_window({"service": "openai", "model": "gpt-4o-mini"}) == 128_000
    assert context_window({"service": "groq", "model": "something-new"}) == 32_000
    monkeypatch.delenv(CONTEXT_WINDOW_ENV)
    assert context_window({"service": "groq", "model": "something-new"}) is None


@pytest.mark.parametrize("value", ["many", "0", "-5"])
def test_a_bad_setting_names_itself_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(CONTEXT_WINDOW_ENV, value)
    with pytest.raises(SettingError, match=f"{CONTEXT_WINDOW_ENV}=.* must be a positive"):
        context_window({"service": "groq", "model": "something-new"})
