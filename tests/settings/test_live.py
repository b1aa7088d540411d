"""``SETTINGS`` reads each setting from the environment when it is used: a variable set by a test
(``monkeypatch.setenv``) is seen at once, by the settings and by the code that reads them; a bad
value fails only its own setting, with a ``SettingError`` naming the variable and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from conversation.models import limits, retries
from conversation.models.settings import configured_window
from settings import SETTINGS, SettingError, Settings, check, default, env_name


def test_a_variable_set_by_monkeypatch_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    assert SETTINGS.max_calls_per_provider == default("max_calls_per_provider") == 8
    monkeypatch.setenv("ROOMS_MAX_CALLS_PER_PROVIDER", "13")
    assert SETTINGS.max_calls_per_provider == 13
    monkeypatch.setenv("ROOMS_MAX_CALLS_PER_PROVIDER", "14")
    assert SETTINGS.max_calls_per_provider == 14
    monkeypatch.delenv("ROOMS_MAX_CALLS_PER_PROVIDER")
    assert SETTINGS.max_calls_per_provider == 8


def test_the_code_reads_a_setting_when_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Readers hold no copy taken at import: the outage bound, the context window and the
    in-flight limit follow the environment from one call to the next."""

    class Hosted:
        _inference_service_ = "openai"

    monkeypatch.setenv("ROOMS_MODEL_OUTAGE_SECONDS", "4")
    monkeypatch.setenv("ROOMS_CONTEXT_WINDOW", "9000")
    monkeypatch.setenv("ROOMS_MAX_CALLS_PER_PROVIDER", "3")
    assert (retries.outage_seconds(), configured_window(), limits.limit_for(Hosted())) == (
        4.0,
        9000,
        3,
    )
    monkeypatch.setenv("ROOMS_MODEL_OUTAGE_SECONDS", "0")
    monkeypatch.delenv("ROOMS_CONTEXT_WINDOW")
    assert (retries.outage_seconds(), configured_window()) == (0.0, None)


@pytest.mark.parametrize("blank", ["", "   ", "\n"])
def test_a_blank_value_is_unset(monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    monkeypatch.setenv("ROOMS_MAX_AGENTS", blank)
    monkeypatch.setenv("ROOMS_DATABASE_URL", blank)
    assert (SETTINGS.max_agents, SETTINGS.database_url) == (100, None)
    assert (check().max_agents, check().database_url) == (100, None)


def test_values_are_read_as_declared(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROOMS_APP_RUNNER", "0")
    monkeypatch.setenv("ROOMS_LEASE_TAKEOVER", "false")
    monkeypatch.setenv("ROOMS_MAX_IMPORT_BYTES", " 1_000 ")
    monkeypatch.setenv("ROOMS_DATA_DIR", "~/rooms")
    monkeypatch.setenv("CONVERSATION_FAULT_POINT", "after_claim")
    read = (SETTINGS.app_runner, SETTINGS.lease_takeover, SETTINGS.max_import_bytes)
    assert read == (False, False, 1000)
    assert SETTINGS.data_dir == Path("~/rooms").expanduser()
    assert SETTINGS.fault_point == "after_claim"


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("ROOMS_MAX_MESSAGE_CHARS", "lots", "must be a positive whole number"),
        ("ROOMS_MAX_AGENTS", "0", "must be a positive whole number"),
        ("ROOMS_MODEL_OUTAGE_SECONDS", "-1", "must be zero or more"),
        ("ROOMS_MODEL_OUTAGE_SECONDS", "nan", "must be zero or more"),
        ("ROOMS_OFFLINE_WORDS_PER_SECOND", "fast", "must be a positive number"),
        ("ROOMS_APP_RUNNER", "perhaps", "must be 1 or 0"),
    ],
)
def test_a_bad_value_names_the_variable_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    name = next(n for n in Settings.model_fields if env_name(n) == variable)
    with pytest.raises(SettingError, match=f"{variable}={value!r} {expected}") as caught:
        getattr(SETTINGS, name)
    assert (caught.value.variable, caught.value.value) == (variable, value)
    assert isinstance(caught.value, ValueError)
    assert "unset it" in str(caught.value)
    assert SETTINGS.max_depth == 10  # only the bad setting's readers fail


def test_check_names_every_refused_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOMS_MAX_AGENTS", "0")
    monkeypatch.setenv("ROOMS_UI_POLL_SECONDS", "soon")
    with pytest.raises(SettingError) as caught:
        check()
    assert "ROOMS_MAX_AGENTS='0'" in str(caught.value)
    assert "ROOMS_UI_POLL_SECONDS='soon'" in str(caught.value)
    monkeypatch.delenv("ROOMS_MAX_AGENTS")
    monkeypatch.delenv("ROOMS_UI_POLL_SECONDS")
    assert check() == Settings()


def test_the_view_and_the_class_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SETTINGS`` (one variable at a time) and ``Settings()`` (all at once) read the same."""
    values = {
        "ROOMS_MODEL": " openai_compatible/smollm2 ",
        "ROOMS_CONTEXT_WINDOW": "8_192",
        "ROOMS_RUNNER_POLL_SECONDS": "0.2",
        "ROOMS_APP_WARMUP": "0",
        "ROOMS_RATE_LIMITS": "openai=500rpm",
        "ROOMS_PARTICIPANT_HEARTBEAT_SECONDS": "1",
    }
    for variable, value in values.items():
        monkeypatch.setenv(variable, value)
    together = Settings()
    assert {name: getattr(SETTINGS, name) for name in Settings.model_fields} == dict(together)
    assert together.model == "openai_compatible/smollm2" and together.context_window == 8192


def test_the_view_is_read_only_and_knows_its_fields() -> None:
    with pytest.raises(AttributeError, match="ROOMS_MAX_AGENTS"):
        SETTINGS.max_agents = 3  # type: ignore[misc]
    with pytest.raises(AttributeError, match="no setting 'max_agent'"):
        SETTINGS.max_agent  # type: ignore[attr-defined]  # noqa: B018
    assert set(dir(SETTINGS)) == set(Settings.model_fields)
