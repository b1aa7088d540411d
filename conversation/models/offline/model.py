"""``OfflineModel``: a real EDSL ``LanguageModel`` that needs no network and no key.

It serves the app and every test on a machine without a provider key. Because it is an EDSL model,
EDSL's cache, usage accounting, ``Results`` and serialization work with it as with any other.

How it decides a reply, in this order:

1. ``fail_on={n: exc}``: the n-th call (1-based, counted across calls) raises ``exc`` (an exception
   instance or class), for retry tests. Each entry fires once and consumes no queued reply.
2. ``replies=[...]``: queued replies, consumed in order across calls (``None`` or ``""`` simulate an
   empty answer). When the queue is empty, the next rule applies.
3. ``func(user_prompt, system_prompt) -> str``: a reply computed from the prompts.
4. Otherwise its own words: an EDSL structured question (yes/no, multiple choice, linear scale,
   numerical) is answered in the format EDSL parses (see ``forms``); anything else gets a short
   persona-flavoured turn (see ``voice``). Deterministic for a seed and the two prompts.

Settings (all in ``parameters``, so they are part of EDSL's cache key and are serialized):
``seed``, ``deal_phrase``, ``deal_after``, ``deal_probability``, ``mention_probability``,
``max_words``, ``latency`` (seconds awaited with ``asyncio.sleep`` before answering, for
benchmarks), and ``scripted`` (true when replies, func or failures were given).

``words_per_second`` (how fast ``models.streaming`` hands out a streamed reply, word by word) is
not one of them: it changes how a reply is shown, not what it says, so it is kept out of the cache
key and off ``to_dict()``. ``None`` (the default) reads ``ROOMS_OFFLINE_WORDS_PER_SECOND`` at
each streamed call, else ``DEFAULT_WORDS_PER_SECOND``.

Serialization rule: ``to_dict()`` keeps the settings; the script (replies, func, failures) and the
record of prompts are runtime-only and are dropped. A restored scripted model therefore answers in
its own words, and says so: ``parameters["scripted"]`` stays true and ``describe()`` tells.
``LanguageModel.from_dict`` (and ``Model("offline", service_name="test")``) rebuild an
``OfflineModel`` once this module is imported (importing ``conversation.models`` does it).

Thread safety: the call counter, the reply queue and the prompt record are guarded by a lock, so one
model can serve many threads and event loops. Copies made by EDSL's ``copy()`` share them; pickled
or deep-copied models get their own (the lock is recreated).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from edsl.inference_services.services.test_service import TestService
from edsl.language_models import LanguageModel
from edsl.language_models.price_manager import ResponseCost

from conversation.exceptions import ConversationValueError
from conversation.models.offline.forms import answer_form, read_form
from conversation.models.offline.voice import VoiceSettings, compose_reply
from settings import SETTINGS, env_name

OFFLINE_MODEL_NAME = "offline"
OFFLINE_SERVICE = "test"  # EDSL's service for models that need no key and cost nothing

ReplyFunc = Callable[[str, str], "str | None"]

_DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "deal_phrase": None,
    "deal_after": None,
    "deal_probability": 0.0,
    "mention_probability": 0.3,
    "max_words": 60,
    "latency": 0.0,
    "scripted": False,
}
_NO_REPLY = object()
#: Words a second an offline reply streams at when neither the model nor the environment says.
DEFAULT_WORDS_PER_SECOND = 100.0
WORDS_PER_SECOND_ENV = env_name("offline_words_per_second")


class OfflineModel(LanguageModel):
    """A deterministic, persona-aware, scriptable stand-in for an LLM (not an LLM)."""

    _model_ = OFFLINE_MODEL_NAME
    _inference_service_ = OFFLINE_SERVICE
    _parameters_ = dict(_DEFAULTS)
    key_sequence = ["choices", 0, "message", "content"]
    usage_sequence = ["usage"]
    input_token_name = "prompt_tokens"
    output_token_name = "completion_tokens"
    _rpm = 1_000_000
    _tpm = 1_000_000_000

    def __init__(
        self,
        *,
        seed: int = 0,
        deal_phrase: str | None = None,
        deal_after: int | None = None,
        deal_probability: float = 0.0,
        mention_probability: float = 0.3,
        max_words: int = 60,
        latency: float = 0.0,
        replies: Iterable[str | None] | None = None,
        func: ReplyFunc | None = None,
        fail_on: Mapping[int, BaseException | type[BaseException]] | None = None,
        words_per_second: float | None = None,
        **kwargs: Any,
    ) -> None:
        restored = kwargs.pop("parameters", None)
        for internal in ("model", "inference_service", "edsl_version", "edsl_class_name"):
            kwargs.pop(internal, None)
        if restored is not None:  # LanguageModel.from_dict passes the stored parameters
            if not isinstance(restored, Mapping):
                raise ConversationValueError(
                    f"parameters must be a dict of offline model settings, got {restored!r}"
                )
            settings = {**_DEFAULTS, **{k: v for k, v in restored.items() if k in _DEFAULTS}}
        else:
            settings = {
                "seed": seed,
                "deal_phrase": deal_phrase,
                "deal_after": deal_after,
                "deal_probability": deal_probability,
                "mention_probability": mention_probability,
                "max_words": max_words,
                "latency": latency,
                "scripted": bool(replies is not None or func is not None or fail_on),
            }
        _validate_settings(settings)
        self._replies: deque[str | None] = deque(_validate_replies(replies))
        self._func = _validate_func(func)
        self._fail_on = _validate_failures(fail_on)
        self._prompts: list[tuple[str, str]] = []
        self._calls = 0
        self._lock = threading.Lock()
        self._voice = _voice(settings)
        self.words_per_second = _validate_rate(words_per_second, "words_per_second")
        super().__init__(parameters=dict(settings), **kwargs)

    # -- what it is -------------------------------------------------------------------------

    def describe(self) -> str:
        """A label no one mistakes for an LLM."""
        how = "scripted" if self.parameters.get("scripted") else "canned persona replies"
        return f"Offline model ({how}, not an LLM)"

    def has_valid_api_key(self) -> bool:
        """It needs no key."""
        return True

    def stream_rate(self) -> float:
        """Words a second a streamed reply is handed out at (see the module docstring)."""
        if self.words_per_second is not None:
            return self.words_per_second
        configured = SETTINGS.offline_words_per_second
        return DEFAULT_WORDS_PER_SECOND if configured is None else configured

    # -- record and script ------------------------------------------------------------------

    @property
    def prompts(self) -> list[tuple[str, str]]:
        """Every ``(system_prompt, user_prompt)`` the model was called with, oldest first."""
        with self._lock:
            return list(self._prompts)

    @property
    def calls(self) -> int:
        """How many times the model was called (cache hits do not call it)."""
        with self._lock:
            return self._calls

    @property
    def answers_a_script(self) -> bool:
        """True while this object holds a script (replies, a function): it stands for a real
        model in a test, so its replies get a real model's checks (``chat_shape.kept_reply``);
        in its own words it repeats by design."""
        return bool(self._replies or self._func is not None)

    @property
    def remaining_replies(self) -> int:
        """How many queued replies are left."""
        with self._lock:
            return len(self._replies)

    def _take_turn(self, system_prompt: str, user_prompt: str) -> tuple[int, Any, Any]:
        with self._lock:
            self._calls += 1
            number = self._calls
            self._prompts.append((system_prompt, user_prompt))
            failure = self._fail_on.pop(number, None)
            # a failing call consumes no queued reply, so the retry gets it
            reply = self._replies.popleft() if self._replies and failure is None else _NO_REPLY
        return number, failure, reply

    # -- the EDSL model interface -----------------------------------------------------------

    async def async_execute_model_call(
        self,
        user_prompt: str,
        system_prompt: str = "",
        question_name: str | None = None,
        files_list: Any = None,
        invigilator: Any = None,
        cache_key: str | None = None,
        response_schema: dict | None = None,
        response_schema_name: str | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        """Answer one call: fail, replay, compute or compose (see the module docstring)."""
        number, failure, reply = self._take_turn(system_prompt, user_prompt)
        delay = self.parameters["latency"]
        if delay:
            await asyncio.sleep(delay)
        if failure is not None:
            raise failure() if isinstance(failure, type) else failure
        if reply is _NO_REPLY:
            reply = self._own_reply(system_prompt, user_prompt)
        return _raw_response(number, reply, system_prompt, user_prompt)

    def _own_reply(self, system_prompt: str, user_prompt: str) -> str | None:
        if self._func is not None:
            return self._func(user_prompt, system_prompt)
        rng = _rng(self.parameters["seed"], system_prompt, user_prompt)
        if user_prompt.startswith(_SUMMARY_OPENING):  # a room's context summary
            return _summarise(user_prompt)
        pick = _PICK_LINE.search(user_prompt)
        if pick is not None:  # a coordinator is asked who speaks next (conversation.rooms.prompt)
            try:
                names = [n for n in json.loads(pick.group(1)) if isinstance(n, str)]
            except ValueError:
                names = []
            return rng.choice(names) if names else "NONE"
        form = read_form(user_prompt)
        if form is not None:
            return answer_form(form, rng=rng, deal_phrase=self.parameters["deal_phrase"])
        return compose_reply(system_prompt, user_prompt, self._voice, rng)

    def cost(self, raw_response: dict[str, Any]) -> ResponseCost:
        """Token estimates from the response, at a price of zero."""
        usage = self.get_usage_dict(raw_response) or {}
        return ResponseCost(
            input_tokens=int(usage.get(self.input_token_name, 0)),
            output_tokens=int(usage.get(self.output_token_name, 0)),
            input_price_per_million_tokens=0.0,
            output_price_per_million_tokens=0.0,
            total_cost=0.0,
        )

    # -- serialization ----------------------------------------------------------------------

    def to_dict(self, add_edsl_version: bool = True) -> dict[str, Any]:
        """EDSL's model dict: name, service and settings (the script is runtime-only)."""
        data = super().to_dict(add_edsl_version=add_edsl_version)
        if add_edsl_version:
            data["edsl_class_name"] = "LanguageModel"
        return data

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


#: The line with which a room asks its coordinator to pick (see ``conversation.rooms.prompt``).
_PICK_LINE = re.compile(r"^Eligible speakers \(JSON\): (\[.*\])$", re.MULTILINE)


#: How a room asks for a summary of what fell out of its context window.
_SUMMARY_OPENING = "Summarise the earlier part of a group chat"


def _summarise(user_prompt: str) -> str:
    """A plain extractive summary of the JSON-line messages in a summary prompt."""
    previous = ""
    said: list[str] = []
    for line in user_prompt.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "summary" in record:
            previous = str(record["summary"])
        elif record.get("passed"):
            said.append(f"{record.get('speaker', '?')} passed")
        else:
            words = str(record.get("content", "")).split()
            quote = " ".join(words[:8]) + ("..." if len(words) > 8 else "")
            said.append(f'{record.get("speaker", "?")}: "{quote}"')
    parts = [previous] if previous else []
    if said:
        parts.append("Then " + "; ".join(said) + ".")
    summary = " ".join(parts) or "Nothing was said."
    # A summary stays short, as a model's would: the latest 60 words, the oldest dropped first.
    words = summary.split()
    return summary if len(words) <= 60 else "... " + " ".join(words[-60:])


def is_offline(model: object) -> bool:
    """True for an ``OfflineModel`` (which no one should mistake for an LLM)."""
    return isinstance(model, OfflineModel)


def _rng(seed: int, system_prompt: str, user_prompt: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{system_prompt}\x00{user_prompt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _tokens(text: str | None) -> int:
    return math.ceil(len(text) / 4) if text else 0


def _raw_response(number: int, text: str | None, system_prompt: str, user_prompt: str) -> dict:
    prompt_tokens = _tokens(system_prompt) + _tokens(user_prompt)
    completion_tokens = _tokens(text)
    return {
        "id": f"offline-{number}",
        "object": "chat.completion",
        "model": OFFLINE_MODEL_NAME,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _voice(settings: Mapping[str, Any]) -> VoiceSettings:
    return VoiceSettings(
        deal_phrase=settings["deal_phrase"],
        deal_after=settings["deal_after"],
        deal_probability=settings["deal_probability"],
        mention_probability=settings["mention_probability"],
        max_words=settings["max_words"],
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _validate_settings(settings: Mapping[str, Any]) -> None:
    def bad(field: str, fix: str) -> ConversationValueError:
        return ConversationValueError(
            f"OfflineModel {field} must be {fix}, got {settings[field]!r}"
        )

    if not _is_int(settings["seed"]):
        raise bad("seed", "an integer")
    phrase = settings["deal_phrase"]
    if phrase is not None and (not isinstance(phrase, str) or not phrase.strip()):
        raise bad("deal_phrase", "a non-empty string (e.g. 'DEAL') or None")
    after = settings["deal_after"]
    if after is not None and (not _is_int(after) or after < 0):
        raise bad("deal_after", "a non-negative number of messages or None")
    for field in ("deal_probability", "mention_probability"):
        value = settings[field]
        if not _is_number(value) or not 0.0 <= value <= 1.0:
            raise bad(field, "a probability between 0 and 1")
    if not _is_int(settings["max_words"]) or settings["max_words"] < 1:
        raise bad("max_words", "a positive integer")
    latency = settings["latency"]
    if not _is_number(latency) or latency < 0 or math.isinf(latency):
        raise bad("latency", "a non-negative, finite number of seconds")
    if not isinstance(settings["scripted"], bool):
        raise bad("scripted", "true or false")


def _validate_rate(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if not _is_number(value) or value <= 0 or math.isinf(value):
        raise ConversationValueError(
            f"{name} must be a positive number of words a second, got {value!r}; e.g. 20 for a "
            "readable pace, 1000 for tests"
        )
    return float(value)


def _validate_replies(replies: Iterable[str | None] | None) -> list[str | None]:
    if replies is None:
        return []
    if isinstance(replies, str | bytes) or not isinstance(replies, Iterable):
        raise ConversationValueError(
            f"OfflineModel replies must be a list of strings, got {replies!r}; "
            "wrap a single reply in a list"
        )
    found = list(replies)
    for index, reply in enumerate(found):
        if reply is not None and not isinstance(reply, str):
            raise ConversationValueError(
                f"OfflineModel replies[{index}] must be a string or None, got {reply!r}"
            )
    return found


def _validate_func(func: ReplyFunc | None) -> ReplyFunc | None:
    if func is not None and not callable(func):
        raise ConversationValueError(
            f"OfflineModel func must be callable as func(user_prompt, system_prompt), got {func!r}"
        )
    return func


def _validate_failures(
    fail_on: Mapping[int, BaseException | type[BaseException]] | None,
) -> dict[int, BaseException | type[BaseException]]:
    if fail_on is None:
        return {}
    if not isinstance(fail_on, Mapping):
        raise ConversationValueError(
            f"OfflineModel fail_on must map call numbers to exceptions, got {fail_on!r}; "
            "e.g. fail_on={1: TimeoutError('slow')}"
        )
    for number, failure in fail_on.items():
        if not _is_int(number) or number < 1:
            raise ConversationValueError(
                f"OfflineModel fail_on keys are call numbers counted from 1, got {number!r}"
            )
        is_class = isinstance(failure, type) and issubclass(failure, BaseException)
        if not (is_class or isinstance(failure, BaseException)):
            raise ConversationValueError(
                f"OfflineModel fail_on[{number}] must be an exception or exception class, "
                f"got {failure!r}"
            )
    return dict(fail_on)


def _register_with_edsl() -> None:
    """Teach EDSL's deserializer to rebuild an ``OfflineModel``.

    EDSL 1.0.9 has no public way to register a model class: ``LanguageModel.from_dict`` asks the
    service named in the dict (``test`` here) to ``create_model(name)``, and the test service
    ignores the name. The wrapper answers ``offline`` with this class and leaves every other name
    to EDSL. Idempotent.
    """
    original = TestService.__dict__["create_model"].__func__
    if getattr(original, "__rooms_offline__", False):
        return

    def create_model(cls: type, model_name: str, model_class_name: str | None = None) -> Any:
        if model_name == OFFLINE_MODEL_NAME:
            return OfflineModel
        return original(cls, model_name, model_class_name)

    create_model.__rooms_offline__ = True  # type: ignore[attr-defined]
    TestService.create_model = classmethod(create_model)  # type: ignore[method-assign,assignment]


_register_with_edsl()

__all__ = [
    "DEFAULT_WORDS_PER_SECOND",
    "OFFLINE_MODEL_NAME",
    "OFFLINE_SERVICE",
    "OfflineModel",
    "WORDS_PER_SECOND_ENV",
    "is_offline",
]
