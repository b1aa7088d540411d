"""Shared set-up of the study page tests: a launched study from the shipped example with small
settings, and AppTests of the participant page (each one a browser session of its own)."""

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


def participant(code: str, **params: str) -> AppTest:
    return page("pages/participate.py", study=code, **params)


def texts(at: AppTest) -> str:
    """Everything the page drew as text (plain text, captions, alerts, titles, markdown)."""
    parts: list[str] = []
    for kind in ("title", "text", "caption", "info", "warning", "error", "success", "markdown"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [str(c.value) for c in at.code]
    return "\n".join(parts)


def token_of(at: AppTest) -> str:
    return str(at.session_state["_participant_token"])


def click(at: AppTest, label: str) -> AppTest:
    [button] = [b for b in at.button if b.label == label]
    return button.click().run()
