"""``Conversation``: a sequence of turns between EDSL agents (docs/design.md, "The conversation API").

Guarantees:

- Speakers come from a strategy that is a pure function of the statements so far, so calling
  ``converse()`` again continues at the next turn index, and a restored conversation picks the same
  speakers an uninterrupted one would have.
- Before every prospective turn (turn 0 included) ``max_turns`` is checked first, then the
  ``stopping_function``; its exceptions propagate.
- A turn becomes a statement only when the model returned text. Failed calls raise (after typed
  retries) and cancelled turns are never appended.
- The caller's agents are never modified; model bindings live in the conversation
  (``model_for``). An agent's own ``model`` beats ``default_model``.
- Each turn reaches the model through ``models.ask`` (one cached model call, no EDSL job), with the
  transcript as JSON lines and the prompts as plain strings no template engine re-renders.
"""

from __future__ import annotations

import copy
import logging
import operator
import sys
from collections.abc import Callable
from typing import Any

from conversation import models
from conversation.dialogue.prompts import (
    agent_persona,
    question_template,
    require_round_message_slot,
    round_message_template,
    user_prompt,
)
from conversation.dialogue.statements import AgentStatement, AgentStatements
from conversation.dialogue.strategies import RoundRobinStrategy, SpeakerStrategy
from conversation.exceptions import ConversationStateError, ConversationValueError, ModelCallError
from conversation.models.retries import async_call_with_retries, validate_retry_settings
from conversation.planning.events import RoomEvent
from conversation.sync import run_sync
from conversation.text.limits import MAX_AGENTS, MAX_TRAITS_CHARS, check_json_value
from conversation.text.safety import neutralize, neutralize_value
from conversation.text.transcript import event_line, render_lines, render_transcript

logger = logging.getLogger("conversation")

FORMAT_VERSION = 1
_SUPPORTED_VERSIONS = frozenset({FORMAT_VERSION})
MAX_AGENT_NAME = 64


def print_statement(statement: AgentStatement) -> None:
    """The default ``on_statement`` when ``verbose=True``: one line per statement on stdout."""
    sys.stdout.write(f"{statement.speaker}: {statement.text}\n")
    sys.stdout.flush()


def _storable_spec(model: Any, field: str) -> dict[str, Any]:
    """EDSL's spec of ``model`` (``to_dict``, never a key), refused with a clear error when it
    could not be rebuilt by ``from_dict`` (a model built on a Python function, say): a saved
    conversation that came back with a different model would be worse than none."""
    problem = models.portability_problem(model)
    if problem is not None:
        raise ConversationValueError(
            f"{field} cannot be serialized: {problem}. Use a model EDSL can store (e.g. "
            "Model('test', canned_response='...'), OfflineModel(seed=1) or a model name), or "
            "set it again after from_dict"
        )
    return models.model_spec(model)


def _is_model(value: Any) -> bool:
    return hasattr(value, "async_get_response") and hasattr(value, "to_dict")


def _validate_agents(agent_list: Any) -> list[str]:
    from edsl import AgentList

    if not isinstance(agent_list, AgentList):
        raise ConversationValueError(
            f"agent_list must be an edsl AgentList, got {type(agent_list).__name__}; "
            "wrap your agents: AgentList([alice, bob])"
        )
    if len(agent_list) == 0:
        raise ConversationValueError(
            "agent_list must contain at least one agent; add agents with AgentList([...])"
        )
    if len(agent_list) > MAX_AGENTS:
        raise ConversationValueError(
            f"agent_list holds {len(agent_list)} agents; a conversation has at most {MAX_AGENTS}"
        )
    names: list[str] = []
    for position, agent in enumerate(agent_list):
        name = getattr(agent, "name", None)
        if not isinstance(name, str) or not name.strip():
            raise ConversationValueError(
                f"agent {position} in agent_list has no name; give every agent a name, "
                "e.g. Agent(name='Alice', traits={...})"
            )
        if len(name) > MAX_AGENT_NAME or any(c in name for c in "\r\n\t\x00"):
            raise ConversationValueError(
                f"agent name {name!r} must be one line of at most {MAX_AGENT_NAME} characters"
            )
        if name in names:
            raise ConversationValueError(
                f"agent names must be unique; {name!r} appears twice in agent_list"
            )
        # Traits reach every prompt: bounded in size and depth like a room's roster.
        check_json_value(
            dict(getattr(agent, "traits", None) or {}),
            f"traits of {name!r}",
            max_chars=MAX_TRAITS_CHARS,
        )
        names.append(name)
    return names


def _validate_max_turns(max_turns: Any) -> int:
    if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 0:
        raise ConversationValueError(
            f"max_turns must be a non-negative integer, got {max_turns!r}; e.g. max_turns=20"
        )
    return max_turns


def _validate_index(conversation_index: Any) -> int | None:
    if conversation_index is None:
        return None
    if (
        not isinstance(conversation_index, int)
        or isinstance(conversation_index, bool)
        or conversation_index < 0
    ):
        raise ConversationValueError(
            f"conversation_index must be a non-negative integer or None, got {conversation_index!r}"
        )
    return conversation_index


def _validate_speaker_source(source: Any) -> Any:
    if source is None:
        return RoundRobinStrategy()
    if hasattr(source, "plan_next") or callable(source):
        return source
    raise ConversationValueError(
        f"next_speaker_generator must be a strategy (e.g. RoundRobinStrategy()) or a callable "
        f"like the functions in conversation.dialogue.generators, got {type(source).__name__}"
    )


def _validate_stopping_function(function: Any) -> Any:
    if function is not None and not callable(function):
        raise ConversationValueError(
            "stopping_function must be callable (statements -> bool) or None, "
            f"got {type(function).__name__}"
        )
    return function


def _validate_question(question: Any) -> None:
    if question is None:
        return
    question_type = getattr(question, "question_type", "free_text")
    if question_type != "free_text":
        raise ConversationValueError(
            f"next_statement_question must be a free-text question (its answer is the "
            f"statement), got question_type={question_type!r}; use QuestionFreeText"
        )


def _validate_cache(cache: Any) -> Any:
    if cache is not None and not (hasattr(cache, "fetch") and hasattr(cache, "store")):
        raise ConversationValueError(
            f"cache must be an edsl Cache or None, got {type(cache).__name__}"
        )
    return cache


def _validate_default_model(model: Any) -> Any:
    if model is not None and not _is_model(model):
        raise ConversationValueError(
            f"default_model must be an edsl model such as Model('gpt-4o-mini'), "
            f"got {type(model).__name__}"
        )
    return model


class Conversation:
    """A multi-agent conversation, run turn by turn until ``max_turns`` or a stopping condition."""

    def __init__(
        self,
        agent_list: Any,
        max_turns: int = 20,
        stopping_function: Callable[[AgentStatements], bool] | None = None,
        next_statement_question: Any = None,
        next_speaker_generator: Any = None,
        verbose: bool = False,
        per_round_message_template: str | None = None,
        conversation_index: int | None = None,
        cache: Any = None,
        default_model: Any = None,
    ) -> None:
        self._names = _validate_agents(agent_list)
        self.agent_list = agent_list
        self.max_turns = _validate_max_turns(max_turns)
        self.stopping_function = _validate_stopping_function(stopping_function)
        if not isinstance(verbose, bool):
            raise ConversationValueError(f"verbose must be True or False, got {verbose!r}")
        self.verbose = verbose
        self._question_template = question_template(next_statement_question)
        _validate_question(next_statement_question)
        require_round_message_slot(next_statement_question, per_round_message_template)
        self.next_statement_question = next_statement_question
        self.per_round_message_template = per_round_message_template
        self._round_template = round_message_template(per_round_message_template)
        if self._round_template is not None:  # refused now, not on the first turn
            last = max(self.max_turns - 1, 0)
            self._round_template.trial(
                self._round_values(turn, self._names[turn % len(self._names)])
                for turn in dict.fromkeys((0, last))
            )
        self.next_speaker_generator = _validate_speaker_source(next_speaker_generator)
        self.conversation_index = _validate_index(conversation_index)
        self.cache = _validate_cache(cache)
        self.default_model = _validate_default_model(default_model)
        self._model_overrides: dict[str, Any] = {}
        self._fallback_model: Any = None
        self.agent_statements = AgentStatements()
        self._memo: list[AgentStatement] = []
        self._lines: list[str] = []
        self._events: list[RoomEvent] = []
        self.stop_reason: str | None = None
        self._running = False
        self.on_statement: Callable[[AgentStatement], None] | None = (
            print_statement if verbose else None
        )

    # -- who is who ---------------------------------------------------------------------------

    @property
    def agent_names(self) -> list[str]:
        return list(self._names)

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """Records ``{turn, speaker, speaker_index, text}``, one per statement."""
        return self.agent_statements.transcript

    @property
    def is_complete(self) -> bool:
        """True when no further turn would be taken (``max_turns`` reached or the stopping
        function says stop). Raising ``max_turns`` re-opens a conversation."""
        return self._stop_reason() is not None

    def _index_of(self, agent: Any) -> int:
        for i, member in enumerate(self.agent_list):
            if member is agent:
                return i
        for i, member in enumerate(self.agent_list):
            if member == agent and getattr(agent, "name", None) == self._names[i]:
                return i
        raise ConversationValueError(
            f"agent {getattr(agent, 'name', agent)!r} is not part of this conversation; "
            f"its agents are {self._names}"
        )

    def model_for(self, agent: Any) -> Any:
        """The model that answers for ``agent``: its own model, else ``default_model``, else the
        project's default (the offline model when no provider key is configured)."""
        index = self._index_of(agent)
        own = getattr(agent, "model", None)
        if _is_model(own):
            return own
        override = self._model_overrides.get(self._names[index])
        if override is not None:
            return override
        if self.default_model is not None:
            return self.default_model
        if self._fallback_model is None:
            self._fallback_model = models.default_model()
        return self._fallback_model

    # -- turn taking --------------------------------------------------------------------------

    def _next_speaker(self) -> int:
        source = self.next_speaker_generator
        if hasattr(source, "plan_next"):
            chosen: Any = source.plan_next(list(self._names), self._history()[1])
        else:
            chosen = source(
                agent_list=list(self.agent_list),
                speakers_so_far=[self.agent_list[s.speaker_index] for s in self.agent_statements],
                focal_speaker_index=None,
            )
        if isinstance(chosen, str) and chosen in self._names:
            return self._names.index(chosen)
        if chosen is None:
            raise ConversationStateError(
                "the speaker strategy named no speaker; use max_turns or a stopping_function "
                "to end a conversation"
            )
        return self._index_of(chosen)

    def _history(self) -> tuple[list[str], list[RoomEvent]]:
        """The statements as rendered transcript lines and as planner events, kept incrementally
        (a turn costs O(1) here instead of re-rendering the whole transcript); rebuilt when the
        statements list was replaced or edited."""
        statements = self.agent_statements
        memo = self._memo
        known = len(memo)
        # Identity of every remembered statement (C-speed): a replaced earlier statement, not only
        # the last one, makes the history be rebuilt.
        if known > len(statements) or any(map(operator.is_not, memo, statements)):
            memo, self._lines, self._events = [], [], []
            self._memo = memo
            known = 0
        for statement in statements[known:]:
            memo.append(statement)
            event = RoomEvent(speaker=statement.speaker, content=statement.text)
            self._lines.append(event_line(statement.turn, event))
            self._events.append(event)
        return self._lines, self._events

    def _stop_reason(self) -> str | None:
        turns = len(self.agent_statements)
        if turns >= self.max_turns:
            return f"max_turns reached ({self.max_turns})"
        if self.stopping_function is not None and self.stopping_function(self.agent_statements):
            return f"stopping_function returned True before turn {turns}"
        return None

    # -- running ------------------------------------------------------------------------------

    def converse(self, max_retries: int = 3, retry_delay: float = 5.0) -> None:
        """Run until ``max_turns`` or the stopping function says stop. Again: continue; done: no-op."""
        validate_retry_settings(max_retries, retry_delay)
        run_sync(self.converse_async(max_retries=max_retries, retry_delay=retry_delay))

    async def converse_async(self, max_retries: int = 3, retry_delay: float = 5.0) -> None:
        """The async form of ``converse``, on the caller's own event loop."""
        max_retries, retry_delay = validate_retry_settings(max_retries, retry_delay)
        if self._running:
            raise ConversationStateError(
                "this conversation is already running; wait for converse() to return"
            )
        self._running = True
        try:
            while True:
                reason = self._stop_reason()
                if reason is not None:
                    self.stop_reason = reason
                    return
                await self._take_turn(max_retries, retry_delay)
        finally:
            self._running = False

    async def _take_turn(self, max_retries: int, retry_delay: float) -> AgentStatement:
        turn = len(self.agent_statements)
        index = self._next_speaker()
        agent, name = self.agent_list[index], self._names[index]
        model = self.model_for(agent)
        round_message = None
        if self._round_template is not None:
            round_message = self._round_template.render(self._round_values(turn, name))
        system = agent_persona(agent, name)
        user = user_prompt(
            self._question_template,
            speaker_name=name,
            conversation=render_lines(self._history()[0]),
            round_message=round_message,
            current_turn=turn,
            max_turns=self.max_turns,
            agent_names=self._names,
        )
        reply, attempts = await self._ask(
            model, user, system, max_retries, retry_delay, turn=turn, name=name
        )
        statement = AgentStatement(
            turn=turn,
            speaker=name,
            speaker_index=index,
            text=reply.text,
            agent=agent,
            model=reply.model_name,
            system_prompt=system,
            user_prompt=user,
            round_message=round_message,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cost=reply.cost,
            latency=reply.latency,
            cache_used=reply.cache_used,
            attempts=attempts,
            raw_model_response=reply.raw,
        )
        self.agent_statements.append(statement)
        if self.on_statement is not None:
            self.on_statement(statement)
        logger.debug("turn %s: %s spoke", turn, name)
        return statement

    def _round_values(self, turn: int, speaker: str) -> dict[str, Any]:
        """What the per-round message template may name at ``turn``."""
        return {
            "current_turn": turn,
            "max_turns": self.max_turns,
            "turns_left": max(self.max_turns - turn, 0),
            "speaker_name": speaker,
        }

    async def _ask(
        self,
        model: Any,
        user: str,
        system: str,
        max_retries: int,
        retry_delay: float,
        *,
        turn: int,
        name: str,
    ) -> tuple[models.ModelReply, int]:
        """The model's reply (after typed retries) and how many attempts it took; a failure is
        raised carrying the agent and the turn."""
        attempts = 0

        async def attempt() -> models.ModelReply:
            nonlocal attempts
            attempts += 1
            return await models.ask(model, user_prompt=user, system_prompt=system, cache=self.cache)

        try:
            reply = await async_call_with_retries(
                attempt,
                max_attempts=max_retries,
                delay=retry_delay,
                describe=f"taking turn {turn} ({name})",
            )
        except ModelCallError as exc:
            exc.agent, exc.turn = name, turn
            raise
        return reply, attempts

    def reset(self) -> None:
        """Forget every statement and start again at turn zero."""
        if self._running:
            raise ConversationStateError("cannot reset a conversation while it runs")
        self.agent_statements = AgentStatements()
        self.stop_reason = None
        reset = getattr(self.next_speaker_generator, "reset", None)
        if callable(reset):
            reset()

    # -- results ------------------------------------------------------------------------------

    def _survey(self) -> Any:
        from edsl import QuestionFreeText, Survey

        question = self.next_statement_question or QuestionFreeText(
            question_text="What do you say next?", question_name="dialogue"
        )
        return Survey([question])

    def _results_rows(self, survey: Any) -> list[Any]:
        from edsl import Agent, Scenario
        from edsl.prompts import Prompt
        from edsl.results import Result

        rows = []
        for s in self.agent_statements:
            agent = self.agent_list[s.speaker_index]
            rows.append(
                Result(
                    agent=Agent(
                        name=s.speaker,
                        traits=neutralize_value(dict(getattr(agent, "traits", {}) or {})),
                    ),
                    scenario=Scenario(
                        {
                            "conversation_index": self.conversation_index,
                            "turn": s.turn,
                            "speaker_index": s.speaker_index,
                            "round_message": neutralize(s.round_message or ""),
                        }
                    ),
                    model=self.model_for(agent),
                    iteration=0,
                    answer={"dialogue": neutralize(s.text)},
                    prompt={
                        "dialogue_user_prompt": Prompt(neutralize(s.user_prompt)),
                        "dialogue_system_prompt": Prompt(neutralize(s.system_prompt)),
                    },
                    raw_model_response={
                        "dialogue_raw_model_response": neutralize_value(s.raw_model_response),
                        "dialogue_input_tokens": s.input_tokens,
                        "dialogue_output_tokens": s.output_tokens,
                        "dialogue_cost": s.cost,
                    },
                    survey=survey,
                    generated_tokens={"dialogue_generated_tokens": neutralize(s.text)},
                    cache_used_dict={"dialogue": s.cache_used},
                )
            )
        return rows

    def to_results(self) -> Any:
        """Every statement as an EDSL ``Results`` (one Result per turn; text neutralized)."""
        from edsl import Results

        survey = self._survey()
        return Results(survey=survey, data=self._results_rows(survey))

    def summarize(self) -> Any:
        """A ``Scenario`` for follow-up EDSL questions: transcript and metadata (text neutralized)."""
        from edsl import Scenario

        records = neutralize_value(self.agent_statements.transcript)
        return Scenario(
            {
                "transcript": render_transcript(records),
                "transcript_records": records,
                "num_agents": len(self._names),
                "agent_names": list(self._names),
                "max_turns": self.max_turns,
                "num_turns": len(self.agent_statements),
                "conversation_index": self.conversation_index,
                "stop_reason": self.stop_reason,
            }
        )

    # -- serialization ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A versioned, JSON-compatible dictionary; ``from_dict`` restores it exactly.

        Callables (a stopping function, a plain generator function) cannot be serialized and are
        rejected; caches are runtime-only and left out.
        """
        if self.stopping_function is not None:
            raise ConversationValueError(
                "stopping_function cannot be serialized (arbitrary Python callables cannot be "
                "restored faithfully); set it again after from_dict"
            )
        strategy = self.next_speaker_generator
        if not isinstance(strategy, SpeakerStrategy) and not hasattr(strategy, "to_dict"):
            raise ConversationValueError(
                "next_speaker_generator cannot be serialized: it is a plain callable; use a "
                "strategy class such as RoundRobinStrategy() or RandomSpeakerStrategy(seed=1)"
            )
        agent_models = {}
        for agent, name in zip(self.agent_list, self._names, strict=True):
            own = getattr(agent, "model", None)
            bound = own if _is_model(own) else self._model_overrides.get(name)
            if bound is not None:
                agent_models[name] = _storable_spec(bound, f"agent {name!r}'s model")
        default = self.default_model
        return {
            "format": "conversation",
            "version": FORMAT_VERSION,
            "agent_list": self.agent_list.to_dict(),
            "max_turns": self.max_turns,
            "verbose": self.verbose,
            "next_statement_question": (
                self.next_statement_question.to_dict() if self.next_statement_question else None
            ),
            "per_round_message_template": self.per_round_message_template,
            "speaker_strategy": strategy.to_dict(),
            "conversation_index": self.conversation_index,
            "default_model": _storable_spec(default, "default_model") if default else None,
            "agent_models": agent_models,
            "statements": [s.to_dict() for s in self.agent_statements],
            "stop_reason": self.stop_reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Conversation:
        """Restore a conversation saved by ``to_dict`` (or a legacy, unversioned dictionary)."""
        if not isinstance(data, dict):
            raise ConversationValueError(
                f"from_dict expects a dictionary made by to_dict, got {type(data).__name__}"
            )
        data = copy.deepcopy(data)
        version = data.get("version")
        if version is None:
            return cls._from_legacy_dict(data)
        if version not in _SUPPORTED_VERSIONS:
            raise ConversationValueError(
                f"unknown conversation format version {version!r}; this library reads "
                f"versions {sorted(_SUPPORTED_VERSIONS)}; upgrade the library to read it"
            )
        from edsl import AgentList, QuestionBase

        agent_list = AgentList.from_dict(data["agent_list"])
        question = data.get("next_statement_question")
        strategy = data.get("speaker_strategy")
        conversation = cls(
            agent_list=agent_list,
            max_turns=data.get("max_turns", 20),
            next_statement_question=QuestionBase.from_dict(question) if question else None,
            next_speaker_generator=SpeakerStrategy.from_dict(strategy) if strategy else None,
            verbose=data.get("verbose", False),
            per_round_message_template=data.get("per_round_message_template"),
            conversation_index=data.get("conversation_index"),
            default_model=models.resolve_model(data["default_model"])
            if data.get("default_model")
            else None,
        )
        for name, model_data in (data.get("agent_models") or {}).items():
            if name not in conversation._names:
                raise ConversationValueError(
                    f"agent_models names {name!r}, which is not an agent of this conversation"
                )
            conversation._model_overrides[name] = models.resolve_model(model_data)
        conversation._restore_statements(data.get("statements") or [])
        conversation.stop_reason = data.get("stop_reason")
        return conversation

    @classmethod
    def _from_legacy_dict(cls, data: dict[str, Any]) -> Conversation:
        from edsl import AgentList

        if "agent_list" not in data:
            raise ConversationValueError(
                "this dictionary has no 'version' and no 'agent_list'; it was not made by "
                "Conversation.to_dict"
            )
        conversation = cls(
            agent_list=AgentList.from_dict(data["agent_list"]),
            max_turns=data.get("max_turns", 20),
            verbose=data.get("verbose", False),
            per_round_message_template=data.get("per_round_message_template"),
            conversation_index=data.get("conversation_index"),
        )
        legacy = data.get("statements") or data.get("agent_statements") or []
        conversation._restore_statements(
            [
                {
                    "turn": i,
                    "speaker": s.get("speaker") or s.get("agent_name"),
                    "text": s.get("text", ""),
                }
                for i, s in enumerate(legacy)
            ]
        )
        return conversation

    def _restore_statements(self, statements: list[dict[str, Any]]) -> None:
        restored = AgentStatements()
        for position, raw in enumerate(statements):
            speaker = raw.get("speaker")
            if speaker not in self._names:
                raise ConversationValueError(
                    f"statement {position} is by {speaker!r}, who is not among the agents "
                    f"{self._names}"
                )
            if raw.get("turn", position) != position:
                raise ConversationValueError(
                    f"statement {position} has turn {raw.get('turn')!r}; turns must be 0, 1, 2..."
                )
            index = self._names.index(speaker)
            raw = {**raw, "turn": position, "speaker_index": index}
            if not isinstance(raw.get("text"), str):
                raise ConversationValueError(f"statement {position} has no text")
            restored.append(AgentStatement.from_dict(raw, agent=self.agent_list[index]))
        self.agent_statements = restored

    def __repr__(self) -> str:
        return (
            f"Conversation(agents={self._names}, turns={len(self.agent_statements)}/"
            f"{self.max_turns}, index={self.conversation_index})"
        )


__all__ = ["Conversation", "print_statement", "FORMAT_VERSION"]
