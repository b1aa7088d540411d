"""Shared set-up of the study pages' tests: a launched study from the shipped example with small
settings, the researcher's pages through AppTest, and participants acting through the library."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
EXAMPLE = ROOT / "examples" / "study.toml"


def definition_data(**sections: Any) -> dict[str, Any]:
    """The shipped example as a dict, each given top-level section merged over it."""
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    for name, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(name), dict):
            data[name] = {**data[name], **value}
        else:
            data[name] = value
    return data


def launch(db: Any, **sections: Any) -> Any:
    """Launch the example study (merged with ``sections``); returns the ``Study``."""
    from conversation import study

    definition = study.load_definition(json.dumps(definition_data(**sections)), fmt="json")
    return study.launch_study(db, definition)


def page(path: str, **params: str) -> AppTest:
    """An AppTest on ``path`` with the query parameters ``params`` (a fresh browser session)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(path)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    return at


def joined(db: Any, code: str, **params: str) -> str:
    """A person who opened the join link (at the consent): their token. The participant's page
    itself is tested through its routes (tests/ui/participant) and in Chromium
    (tests/browser/participant); these pages' tests act for participants through the library."""
    from conversation import study

    return study.join(db, code, params).token


def in_lobby(db: Any, code: str, **params: str) -> str:
    """A person past the consent and the pre-survey, waiting in the lobby: their token."""
    from conversation import study

    token = joined(db, code, **params)
    study.give_consent(db, token)
    study.answer_survey(db, token, {"bargained_before": "yes"})
    return token


def refusal(db: Any, code: str) -> str:
    """What the join link says to a newcomer now: the refusal, or "" when they get in."""
    from conversation import study

    try:
        joined(db, code)
    except study.StudyRefused as refused:
        return str(getattr(refused, "message", None) or refused)
    return ""


def texts(at: AppTest) -> str:
    """Everything the page drew as text (plain text, captions, alerts, titles, markdown)."""
    parts: list[str] = []
    for kind in ("title", "text", "caption", "info", "warning", "error", "success", "markdown"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [str(c.value) for c in at.code]
    return "\n".join(parts)


def click(at: AppTest, label: str) -> AppTest:
    [button] = [b for b in at.button if b.label == label]
    return button.click().run()
