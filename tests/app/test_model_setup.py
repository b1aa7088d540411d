"""The sidebar and Home tell one story about which model answers and why (issue 24): a configured
server is used, and what is missing is named with the line to add."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from conversation.models.server_window import forget_reported_windows
from storage import Database
from tests.app.page_support import APP, shown
from tests.support.openai_server import OpenAICompatibleServer


@pytest.fixture(autouse=True)
def _fresh_server_answers():
    forget_reported_windows()
    yield
    forget_reported_windows()


def sidebar_text(at: AppTest) -> str:
    parts = [w.value for w in at.sidebar.warning] + [s.value for s in at.sidebar.success]
    return "\n".join(shown(p) for p in parts + [c.value for c in at.sidebar.caption])


def run_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_server_url_alone_makes_the_server_answer(db: Database, monkeypatch) -> None:
    with OpenAICompatibleServer(model_ids=("smollm2",)) as server:
        monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", server.base_url)
        text = sidebar_text(run_app())
    assert "smollm2" in text and "OPENAI_COMPATIBLE_BASE_URL is set" in text
    assert "No provider key found" not in text and "offline" not in text.lower()
    assert "Keys found for" not in text


def test_a_server_url_with_nothing_there_names_the_missing_line(db: Database, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", "http://127.0.0.1:9/v1")
    at = run_app()
    text = sidebar_text(at)
    assert "OPENAI_COMPATIBLE_MODEL=" in text
    assert "No provider key found" not in text and "Keys found for" not in text
    assert "openai_compatible" not in text  # not listed as usable while it cannot answer
    assert any("OPENAI_COMPATIBLE_MODEL=" in shown(w.value) for w in at.warning)  # Home says it too
