"""Every process setting, declared once: its environment name, type, default and a one-line doc.

One ``pydantic-settings`` class, ``Settings``. Each field names its environment variable
(``alias``: grep the variable's name and you land here), so the docs' tables
(docs/models.md "Every setting", docs/limits.md, docs/studies.md) are tested against it
(``tests/settings``). A blank value means "unset" (the default applies); a value is trimmed.

Nothing here reads the environment by itself: ``Settings()`` reads and checks every variable at
once (``settings.check()`` does it at a process's start); the code reads one setting at a time
through ``settings.SETTINGS`` when it runs (``settings.live``, which says why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator
from pydantic_core import PydanticUseDefault
from pydantic_settings import BaseSettings, SettingsConfigDict


def _env(name: str, default: Any, doc: str, **constraints: Any) -> Any:
    """A field read from the environment variable ``name`` (``doc``: what it sets)."""
    return Field(default, alias=name, description=doc, **constraints)


class Settings(BaseSettings):
    """The settings of every process (the app, ``python -m conversation.worker``, a script)."""

    model_config = SettingsConfigDict(
        case_sensitive=True,
        env_ignore_empty=True,
        extra="ignore",
        frozen=True,
        validate_by_name=True,
    )

    # -- which model answers, and how calls are paced (docs/models.md) --------------------------
    model: str | None = _env(
        "ROOMS_MODEL", None, "the model spec new rooms get (overrides every other rule)"
    )
    context_window: int | None = _env(
        "ROOMS_CONTEXT_WINDOW",
        None,
        "tokens, for a server that does not report its window and an unknown hosted model",
        gt=0,
    )
    model_outage_seconds: float = _env(
        "ROOMS_MODEL_OUTAGE_SECONDS",
        600.0,
        "how long a turn waits for a model server that refuses connections before it fails",
        ge=0,
        allow_inf_nan=False,
    )
    max_calls_per_local_server: int = _env(
        "ROOMS_MAX_CALLS_PER_LOCAL_SERVER",
        1,
        "model calls in flight per server on this machine, per process",
        gt=0,
    )
    max_calls_per_provider: int = _env(
        "ROOMS_MAX_CALLS_PER_PROVIDER",
        8,
        "model calls in flight per other provider, per process",
        gt=0,
    )
    rate_limits: str | None = _env(
        "ROOMS_RATE_LIMITS",
        None,
        "requests / tokens per minute per provider or model, shared by every process",
    )
    offline_words_per_second: float | None = _env(
        "ROOMS_OFFLINE_WORDS_PER_SECOND",
        None,
        "how fast the offline model's streamed replies arrive; set, rooms stream its turns",
        gt=0,
        allow_inf_nan=False,
    )

    # -- where the data lives (storage) ---------------------------------------------------------
    database_url: str | None = _env(
        "ROOMS_DATABASE_URL", None, "a sqlite:/// or postgresql:// URL of the rooms database"
    )
    data_dir: Path | None = _env(
        "ROOMS_DATA_DIR", None, "the app's data folder (the default database lives there)"
    )

    # -- the app's own runner and pages ---------------------------------------------------------
    app_runner: bool = _env("ROOMS_APP_RUNNER", True, "0: the app drives no rooms (workers do)")
    runner_concurrency: int = _env(
        "ROOMS_RUNNER_CONCURRENCY", 16, "rooms the app's runner drives at once", gt=0
    )
    runner_poll_seconds: float = _env(
        "ROOMS_RUNNER_POLL_SECONDS", 0.5, "how often the app's runner looks for new work", gt=0
    )
    app_warmup: bool = _env(
        "ROOMS_APP_WARMUP", True, "0: the server does not load the screens' code as it starts"
    )
    ui_poll_seconds: float = _env(
        "ROOMS_UI_POLL_SECONDS", 0.75, "the Room page's refresh while the room runs", gt=0
    )
    ui_idle_poll_seconds: float = _env(
        "ROOMS_UI_IDLE_POLL_SECONDS", 2.0, "the Room page's refresh otherwise", gt=0
    )
    ui_draft_poll_seconds: float = _env(
        "ROOMS_UI_DRAFT_POLL_SECONDS",
        0.3,
        "how often the Room page reads a streaming turn's partial draft",
        gt=0,
    )
    ui_first_page: int = _env(
        "ROOMS_UI_FIRST_PAGE", 50, "the newest events the Room page reads on first view", gt=0
    )
    analysis_poll_seconds: float = _env(
        "ROOMS_ANALYSIS_POLL_SECONDS",
        1.5,
        "how often a running analysis's progress is redrawn",
        gt=0,
    )
    monitor_poll_seconds: float = _env(
        "ROOMS_MONITOR_POLL_SECONDS",
        2.0,
        "how often the study monitor's tables refresh",
        gt=0,
    )
    participant_poll_seconds: float = _env(
        "ROOMS_PARTICIPANT_POLL_SECONDS",
        0.25,
        "how often an app process looks at its participants' pages for changes no signal "
        "announced (another process's writes on SQLite, a lost notice)",
        gt=0,
    )
    participant_heartbeat_seconds: float | None = _env(
        "ROOMS_PARTICIPANT_HEARTBEAT_SECONDS",
        None,
        "how often an app process notes everyone with an open page as present (default: the "
        "shortest participants.heartbeat_seconds of the studies it serves)",
        gt=0,
    )

    # -- workers --------------------------------------------------------------------------------
    lease_takeover: bool = _env(
        "ROOMS_LEASE_TAKEOVER",
        True,
        "0: leases of this host's gone processes are not freed at once (they expire)",
    )

    # -- size limits of everything handed in (docs/limits.md; read once, at start) -------------
    max_message_chars: int = _env("ROOMS_MAX_MESSAGE_CHARS", 20_000, "message text", gt=0)
    max_request_id_chars: int = _env("ROOMS_MAX_REQUEST_ID_CHARS", 200, "request id", gt=0)
    max_name_chars: int = _env("ROOMS_MAX_NAME_CHARS", 200, "room or experiment name", gt=0)
    max_agents: int = _env("ROOMS_MAX_AGENTS", 100, "agents in a room", gt=0)
    max_traits_chars: int = _env(
        "ROOMS_MAX_TRAITS_CHARS", 20_000, "one agent's traits (as JSON)", gt=0
    )
    max_config_chars: int = _env(
        "ROOMS_MAX_CONFIG_CHARS", 1_000_000, "a whole room config (as JSON)", gt=0
    )
    max_stop_reason_chars: int = _env("ROOMS_MAX_STOP_REASON_CHARS", 1_000, "stop reason", gt=0)
    max_condition_chars: int = _env("ROOMS_MAX_CONDITION_CHARS", 200, "condition label", gt=0)
    max_design_chars: int = _env(
        "ROOMS_MAX_DESIGN_CHARS", 2_000_000, "experiment design (as JSON)", gt=0
    )
    max_import_bytes: int = _env(
        "ROOMS_MAX_IMPORT_BYTES", 5_000_000, "an import (file or data), in bytes", gt=0
    )
    max_import_messages: int = _env(
        "ROOMS_MAX_IMPORT_MESSAGES", 10_000, "messages in an import", gt=0
    )
    max_depth: int = _env("ROOMS_MAX_DEPTH", 10, "nesting depth of any JSON value", gt=0)

    # -- tests only -----------------------------------------------------------------------------
    fault_point: str | None = _env(
        "CONVERSATION_FAULT_POINT",
        None,
        "tests only: the point of a turn at which the process kills itself (crash tests)",
    )

    @field_validator("*", mode="before")
    @classmethod
    def _trimmed(cls, value: Any) -> Any:
        # a value copied with a stray space or newline means what it says; a blank one is unset
        if isinstance(value, str):
            value = value.strip()
            if not value:
                raise PydanticUseDefault()
        return value

    @field_validator("data_dir")
    @classmethod
    def _home(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None


def env_name(field: str) -> str:
    """The environment variable of the setting ``field`` (``"max_agents"`` ->
    ``"ROOMS_MAX_AGENTS"``)."""
    return str(Settings.model_fields[field].alias)


def default(field: str) -> Any:
    """The default of the setting ``field`` (what applies while its variable is unset)."""
    return Settings.model_fields[field].default


__all__ = ["Settings", "default", "env_name"]
