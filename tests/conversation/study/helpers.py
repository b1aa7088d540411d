"""A small study definition for the tests, and a few steps of the participant's path."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from conversation import study as S

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "study.toml"


def definition_dict(**changes: Any) -> dict[str, Any]:
    """The shipped example, with top-level sections updated by ``changes`` (merged one level)."""
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    data = copy.deepcopy(data)
    data["participants"]["cap"] = 40
    data["room"]["words_per_minute"] = 0
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def launched(db: Any, **changes: Any) -> S.Study:
    return S.launch_study(db, S.definition_from_dict(definition_dict(**changes)))


def to_lobby(db: Any, code: str, pid: str, **labels: str) -> S.ParticipantToken:
    """Join with ``PROLIFIC_PID=pid``, consent and answer the pre-survey."""
    token = S.join(db, code, {"PROLIFIC_PID": pid, **labels})
    S.give_consent(db, token.token)
    S.answer_survey(db, token.token, {"bargained_before": "no"})
    return token


def seated(db: Any, code: str, *pids: str) -> list[S.ParticipantToken]:
    tokens = [to_lobby(db, code, pid) for pid in pids]
    S.tick(db, code)
    return tokens
