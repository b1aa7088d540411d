"""The guard that keeps secrets out of the database (docs/design.md, "Secrets are never stored").

Every JSON document that describes configuration (room configs, experiment configs, agent profile
traits and model specs, analysis questions and model specs) passes through :func:`check_no_secrets`
before it is written, and so does every imported event's ``data``, ``error``, model label, request
id and speaker (``storage.events``: an import is untrusted input). The rule, applied recursively to every dict key and string value:

1. **Secret-named keys.** A key whose normalised name (lower case, ``-``/space/``.`` -> ``_``,
   camelCase split) contains one of the words ``api_key``/``apikey``, ``secret``, ``password``/
   ``passwd``, ``private_key``, ``credential(s)``, ``authorization``, ``bearer``, or is ``token`` or ends in ``access_token``/``auth_token``/
   ``refresh_token``/``api_token``/``session_token``/``bearer_token``/``oauth_token`` is refused when
   its value is a non-empty string. Numbers pass (``max_tokens: 200``), and so do model settings
   such as ``stop_token: "</s>"``.
   Exception: a key ending in ``_env`` (e.g. ``api_key_env``) may hold the *name* of an environment
   variable (``^[A-Z_][A-Z0-9_]*$``): that is how a model binding says where its key comes from.
2. **Secret-looking values.** Any string value, under any key, that looks like a provider credential
   is refused: ``sk-...``/``sk-ant-...``/``sk-proj-...`` (OpenAI, Anthropic), ``AIza...`` (Google),
   ``ghp_``/``github_pat_`` (GitHub), ``xox[abpr]-`` (Slack), ``AKIA...`` (AWS),
   ``hf_...`` (Hugging Face), ``gsk_...`` (Groq), ``Bearer <token>``, and PEM private keys.

Free text that users and models write (messages, persona instructions) is *not* scanned: a person may
legitimately discuss ``sk-`` prefixes, and refusing a model's reply would lose a turn. Configuration is
where keys get pasted by mistake, so that is what is guarded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from storage.errors import ConfigContainsSecret

_SECRET_WORDS = re.compile(
    r"(^|_)(api_?key|apikey|secret|secrets|password|passwd|private_?key|credentials?|authorization|"
    r"bearer|client_secret)(_|$)"
)
_TOKEN_NAME = re.compile(r"^token$|(^|_)(access|auth|refresh|api|session|bearer|oauth)_token$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_SECRET_VALUES = re.compile(
    r"(\bsk-(ant-|proj-|live-)?[A-Za-z0-9_\-]{16,}"
    r"|\bAIza[0-9A-Za-z_\-]{30,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bxox[abpr]-[A-Za-z0-9\-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bhf_[A-Za-z0-9]{30,}"
    r"|\bgsk_[A-Za-z0-9]{30,}"
    r"|\bBearer\s+[A-Za-z0-9_\-\.=]{16,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----)"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_MAX_DEPTH = 64


def _normalise_key(key: str) -> str:
    return re.sub(r"[\s\-\.]+", "_", _CAMEL.sub("_", key)).lower()


def is_secret_key(key: str) -> bool:
    """Whether a dict key is named like a credential (see the module docstring, rule 1)."""
    name = _normalise_key(key)
    return bool(_SECRET_WORDS.search(name) or _TOKEN_NAME.search(name))


def looks_like_secret(value: str) -> bool:
    """Whether a string looks like a provider credential (see the module docstring, rule 2)."""
    return bool(_SECRET_VALUES.search(value))


def check_no_secrets(document: Any, *, field: str) -> None:
    """Raise :class:`ConfigContainsSecret` if ``document`` holds a secret; return ``None`` otherwise.

    ``field`` names the document in the error (``"config"``, ``"traits"``...). The error message gives
    the path of the offending value, never the value itself (it must not reach logs either).
    """
    _walk(document, field, 0)


def _walk(value: Any, path: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ConfigContainsSecret(
            f"{path}: nested deeper than {_MAX_DEPTH} levels; flatten the document", path=path
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            key_text = str(key)
            child = f"{path}.{key_text}"
            if isinstance(item, str) and item.strip() and is_secret_key(key_text):
                allowed_env_ref = _normalise_key(key_text).endswith("_env") and _ENV_NAME.match(
                    item
                )
                if not allowed_env_ref:
                    raise ConfigContainsSecret(
                        f"{child}: a key named like a credential holds a value; secrets are never "
                        "stored. Remove it and provide the key through the environment (a key "
                        "ending in '_env' may name the environment variable instead).",
                        path=child,
                    )
            _walk(item, child, depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", depth + 1)
    elif isinstance(value, str) and looks_like_secret(value):
        raise ConfigContainsSecret(
            f"{path}: the value looks like an API key or credential; secrets are never stored. "
            "Remove it and provide the key through the environment.",
            path=path,
        )


__all__ = ["check_no_secrets", "is_secret_key", "looks_like_secret"]
