"""What an agent is asked on its turn in a room: persona, visible transcript, hint, feedback.

The prompt is a pure function of the room's config and the events *before* the turn, so a turn
resumed after a crash is asked exactly what it was asked the first time (and EDSL's cache, keyed
by the prompt, can answer it again for free). The transcript is structured (``text.transcript``: a
header line per message, its text quoted, so one message cannot pass for another speaker) and
holds only what the agent may see. The template is the room's own or the default, rendered in the
sandbox of ``safety.SafeTemplate``.

The prompt fits the model: whatever the room's context policy, the transcript is cut (the persona
and the message that opened the activity kept, the oldest of the rest dropped first, or replaced
by a stored summary) so that the estimated size of both prompts (``text.tokens``, which errs high)
stays within the model's context window minus the room's output limit
(``RoomConfig.call_settings``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conversation.context.window import ContextPolicy, build_context, summary_request
from conversation.dialogue.prompts import persona
from conversation.planning.events import opener_index
from conversation.rooms.config import ROOM_PROMPT_VARIABLES, RoomConfig
from conversation.termination.state import RoomState
from conversation.text.safety import SafeTemplate, compiled_template
from conversation.text.tokens import estimate_tokens, prompt_tokens
from conversation.text.transcript import (
    EMPTY_TRANSCRIPT,
    TRANSCRIPT_HEADER,
    escape,
    event_line,
    render_lines,
    render_record,
)

PASS_WORDS = frozenset({"PASS", "PASS.", "[PASS]", "(PASS)"})

DEFAULT_ROOM_PROMPT = """You are {{ speaker_name }}, in a group chat with {{ agent_names | join(", ") }} and the people who write there.
Messages so far {{ conversation }}

{% if max_turns %}This is turn {{ current_turn + 1 }} of {{ max_turns }} ({{ turns_left }} left, counting this one).
{% endif %}{% if feedback %}{{ feedback }}
{% endif %}{% if addressee %}Address your message to {{ addressee }}.
{% endif %}Write {{ speaker_name }}'s reply to the last message: one short message in your own words, nothing else. To hand over to someone, mention them as @name. If you have nothing to add, reply with the single word PASS."""


#: The instructions of a turn for a real chat model with the room's default prompt (see
#: ``chat_shaped``): the system prompt (after the persona); the user prompt is the bare transcript,
#: which ``models.chat_shape`` sends as chat turns where the service takes them. Every sentence is
#: short and is recognised by ``text.scaffolding`` when a model copies it.
CHAT_ROOM_PROMPT = """This is a group chat between {{ agent_names | join(", ") }} and the people who write there.
{% if max_turns %}This is turn {{ current_turn + 1 }} of {{ max_turns }}.
{% endif %}{% if addressee %}Address your message to {{ addressee }}.
{% endif %}{% if feedback %}{{ feedback }}
{% endif %}Reply as {{ speaker_name }} only: one short message in your own words. To hand over to someone, mention them as @name. If you have nothing to add, reply with the single word PASS."""


PICK_PROMPT = """You coordinate a group chat: after each message you choose who speaks next.
Messages so far {conversation}

Eligible speakers (JSON): {eligible}
Reply with exactly one of these names, or NONE if no one should speak until a person writes."""


CANDIDATES_PROMPT = """You coordinate a group chat. Each of these members drafted the next message; choose the one that should be sent.
Messages so far {conversation}

The drafts, one per line:
{drafts}
Reply with exactly the speaker name of the draft to send, or NONE if none should be sent."""


SUMMARY_SYSTEM = "You summarise group chats faithfully and briefly, for the people in them."
SUMMARY_PROMPT = """Summarise the earlier part of a group chat in at most 120 words. Keep who said what, decisions, numbers and open questions; add nothing.
The messages (a previous summary comes first when there is one):
{text}"""


def is_pass(text: str) -> bool:
    """A reply that is only the word PASS (any case, optional punctuation) is a pass."""
    return text.strip().upper() in PASS_WORDS


@dataclass(frozen=True, slots=True)
class TurnPrompt:
    """The two prompt strings of a turn and the seqs of the events the agent was shown."""

    system_prompt: str
    user_prompt: str
    saw: tuple[int, ...]


#: The reason of a denial by a stop while the reply was streaming (``engine.streaming_call``).
STOPPED_WHILE_DRAFTING = "stopped while drafting"


def denial_feedback(denials: Sequence[Mapping[str, Any]]) -> str | None:
    """What the agent is told after its last draft was stopped while it was written, or denied
    by a moderator: what happened, said once. A stopped draft is not repeated to the agent (a
    small model copies what it is shown; the copy check refuses a redraft that repeats it, see
    ``text.copies``); a denied one is quoted on one line, with the moderator's reason."""
    if not denials:
        return None
    last = denials[-1]
    if last.get("reason") == STOPPED_WHILE_DRAFTING:
        return (
            "Your previous reply was stopped before you finished it. "
            "Write a different message, or reply PASS."
        )
    draft = escape(str(last.get("draft") or ""))
    reason = last.get("reason")
    why = f"Their reason: {escape(str(reason))}." if reason else "They gave no reason."
    return (
        f'A moderator did not allow your previous draft ("{draft}"). {why}\n'
        "Write a different message, or reply PASS."
    )


_CHAT_TEMPLATE = SafeTemplate(
    CHAT_ROOM_PROMPT, allowed=ROOM_PROMPT_VARIABLES, field="prompt_template"
)
#: Model services that read the single-string default prompt (``models.offline``'s stand-in
#: reads its instructions from it; EDSL's test model answers canned text).
SINGLE_STRING_SERVICES = frozenset({"offline", "test"})


def chat_shaped(config: RoomConfig, speaker: str) -> bool:
    """True when ``speaker``'s turns are asked in the chat shape: the room uses the default
    prompt and a real model answers (the instructions go in the system prompt after the persona,
    the user prompt is the bare transcript; ``models.chat_shape`` sends it as chat turns)."""
    if config.prompt_template is not None:
        return False
    service = str((config.model_of(speaker) or {}).get("service") or "")
    return bool(service) and service not in SINGLE_STRING_SERVICES


def room_template(config: RoomConfig) -> SafeTemplate:
    return compiled_template(
        config.prompt_template or DEFAULT_ROOM_PROMPT, ROOM_PROMPT_VARIABLES, "prompt_template"
    )


@dataclass(frozen=True, slots=True)
class SpeakerFrame:
    """What every prompt of one speaker shares under one room config (nothing of the log):
    its persona, the roster, the template, the prompt's shape, the max turns and the context
    policy. Made once per config and speaker by a caller that asks many turns (the engine's
    ``RoomRules``), so a turn's prompt reads no config setting again."""

    speaker: str
    names: tuple[str, ...]
    persona: str
    template: SafeTemplate
    chat: bool
    max_turns: int | None
    policy: ContextPolicy

    @classmethod
    def of(
        cls, config: RoomConfig, speaker: str, template: SafeTemplate | None = None
    ) -> SpeakerFrame:
        spec = config.spec(speaker)
        return cls(
            speaker=speaker,
            names=config.names,
            persona=persona(spec.name, spec.traits, spec.instruction),
            template=template or room_template(config),
            chat=chat_shaped(config, speaker),
            max_turns=config.max_turns(),
            policy=config.context_policy(),
        )


def build_turn_prompt(
    config: RoomConfig,
    view: RoomState,
    speaker: str,
    *,
    feedback: str | None = None,
    template: SafeTemplate | None = None,
    addressee: str | None = None,
) -> TurnPrompt:
    """The prompt of ``speaker``'s turn, from the events in ``view`` (those before the turn),
    within the model's window (see the module docstring); ``addressee``: whom the planner wants
    the speaker to address (the focal policy's next counterpart)."""
    return turn_prompt(
        SpeakerFrame.of(config, speaker, template),
        view,
        config.call_settings(speaker).prompt_budget,
        feedback=feedback,
        addressee=addressee,
    )


def turn_prompt(
    frame: SpeakerFrame,
    view: RoomState,
    budget: int | None,
    *,
    feedback: str | None = None,
    addressee: str | None = None,
) -> TurnPrompt:
    """``build_turn_prompt`` from the speaker's ``frame`` and the prompt ``budget`` of its
    call settings (``CallSettings.prompt_budget``): the one way a turn's prompt is made."""
    speaker, names, system = frame.speaker, frame.names, frame.persona
    max_turns = frame.max_turns
    current = view.agent_turns()
    template, chat = frame.template, frame.chat
    values = _template_values(names, speaker, current, max_turns, feedback, addressee)
    if chat:
        instructions = _CHAT_TEMPLATE.render(
            {**values, "conversation": "", "activity_opener": None}
        )
        system = f"{system}\n{instructions.strip()}"

    def fill(lines: Sequence[str], opener: str | None) -> str:
        if chat:
            return render_lines(lines)
        return template.render(
            {**values, "conversation": render_lines(lines), "activity_opener": opener}
        ).strip()

    def render(policy: ContextPolicy) -> tuple[str, tuple[int, ...]]:
        context = build_context(
            speaker,
            names,
            view.events,
            persona=system,
            policy=policy,
            seqs=view.seqs,
            current_turn=current,
            max_turns=max_turns,
            costs=view.costs or None,
        )
        lines = _turn_records(view, context.positions)
        opener = view.events[context.opener] if context.opener is not None else None
        return fill(lines, opener.content if opener is not None else None), tuple(context.saw)

    def empty() -> str:
        opener_at = opener_index(names, view.events)
        return fill([], view.events[opener_at].content if opener_at is not None else None)

    user, saw = _fitted(frame.policy, budget, system, render, empty)
    return TurnPrompt(system, user, saw)


def _template_values(
    names: Sequence[str],
    speaker: str,
    current: int,
    max_turns: int | None,
    feedback: str | None,
    addressee: str | None,
) -> dict[str, Any]:
    """The room template's values for ``speaker``'s turn (the conversation aside)."""
    return {
        "speaker_name": speaker,
        "agent_names": list(names),
        # past the last turn (a preview of an ended room): the last turn, never "9 of 8"
        "current_turn": min(current, max_turns - 1) if max_turns else current,
        "max_turns": max_turns,
        "turns_left": max(max_turns - current, 0) if max_turns else None,
        "feedback": feedback,
        "addressee": addressee,
    }


def _turn_records(view: RoomState, positions: Sequence[int]) -> list[str]:
    """``_turn_record`` of each position (a C-speed lookup when the view keeps its lines)."""
    if view.lines:
        return list(map(view.lines.__getitem__, positions))
    return [event_line(view.seqs[p], view.events[p]) for p in positions]


def _turn_record(view: RoomState, position: int) -> str:
    """An event's transcript line: rendered once per room by its RoomLog (``view.lines``) when
    the view comes from one, else now (``event_line``, the same rendering)."""
    if view.lines:
        return view.lines[position]
    return event_line(view.seqs[position], view.events[position])


def _fitted(
    policy: ContextPolicy,
    budget: int | None,
    system: str,
    render: Any,
    empty: Callable[[], str] | None = None,
) -> tuple[str, tuple[int, ...]]:
    """``render(policy)`` with the room's policy, narrowed until both prompts fit ``budget``
    (the window minus the output limit) when they do not (the estimate errs high; a few
    narrowings at most). ``empty()`` renders the user prompt with no message shown (``render``
    is used when not given)."""
    if budget is None:
        return render(policy)
    # Usually everything the policy shows fits: one render, checked.
    user, saw = render(policy)
    if prompt_tokens(system, user) <= budget:
        return user, saw
    # What the template and the persona take with no message shown; the rest is the window's.
    if empty is None:
        blank, _ = render(ContextPolicy(max_messages=1, max_tokens=1))
    else:
        blank = empty()
    fixed = prompt_tokens(system, blank) - estimate_tokens(EMPTY_TRANSCRIPT)
    room = budget - fixed - estimate_tokens(TRANSCRIPT_HEADER)
    # build_context counts the persona inside max_tokens as well: give it back
    allowed = max(1, room + estimate_tokens(system))
    if policy.max_tokens is None or policy.max_tokens > allowed:
        policy = dataclasses.replace(policy, max_tokens=allowed)
    user, saw = render(policy)
    for _ in range(4):
        excess = prompt_tokens(system, user) - budget
        if excess <= 0 or policy.max_tokens is None or policy.max_tokens <= 1:
            break
        policy = dataclasses.replace(policy, max_tokens=max(1, policy.max_tokens - excess))
        user, saw = render(policy)
    return user, saw


def build_pick_prompt(
    config: RoomConfig, view: RoomState, coordinator: str, eligible: Sequence[str]
) -> TurnPrompt:
    """The prompt that asks the room's coordinator agent to pick the next speaker."""
    return _coordinator_prompt(
        config, view, coordinator, PICK_PROMPT, eligible=json.dumps(list(eligible))
    )


def build_candidates_prompt(
    config: RoomConfig, view: RoomState, coordinator: str, candidates: Sequence[Mapping[str, Any]]
) -> TurnPrompt:
    """The prompt that asks the coordinator agent to pick one of the drafted candidates (a
    coordinator-after turn), within the model's window."""
    drafts = render_lines(
        [render_record({"speaker": c["speaker"], "text": c["text"]}) for c in candidates],
        header=False,
    )
    return _coordinator_prompt(config, view, coordinator, CANDIDATES_PROMPT, drafts=drafts)


def _coordinator_prompt(
    config: RoomConfig, view: RoomState, coordinator: str, form: str, **fields: str
) -> TurnPrompt:
    """``form`` filled with the messages and notices the coordinator may see (within the
    model's window) and ``fields``."""
    spec = config.spec(coordinator)
    system = persona(spec.name, spec.traits, spec.instruction)

    def render(policy: ContextPolicy) -> tuple[str, tuple[int, ...]]:
        context = build_context(
            coordinator,
            config.names,
            view.events,
            persona=system,
            policy=policy,
            seqs=view.seqs,
            costs=view.costs or None,
        )
        lines = [
            _turn_record(view, position)
            for position in context.positions
            if view.events[position].kind in ("message", "system")
        ]
        return form.format(conversation=render_lines(lines), **fields), tuple(context.saw)

    budget = config.call_settings(coordinator).prompt_budget
    user, saw = _fitted(config.context_policy(), budget, system, render)
    return TurnPrompt(system, user, saw)


def build_summary_prompt(config: RoomConfig, view: RoomState) -> TurnPrompt | None:
    """The prompt that summarises what fell out of the context window, or None when nothing
    needs summarising (see ``context.summary_request``)."""
    request = summary_request(
        config.names, view.events, config.context_policy(), costs=view.costs or None
    )
    if request is None:
        return None
    saw = tuple(view.seqs[i] for i in request.positions)
    return TurnPrompt(SUMMARY_SYSTEM, SUMMARY_PROMPT.format(text=request.text), saw)


__all__ = [
    "CANDIDATES_PROMPT",
    "CHAT_ROOM_PROMPT",
    "SINGLE_STRING_SERVICES",
    "chat_shaped",
    "build_candidates_prompt",
    "SUMMARY_PROMPT",
    "build_summary_prompt",
    "PICK_PROMPT",
    "build_pick_prompt",
    "DEFAULT_ROOM_PROMPT",
    "PASS_WORDS",
    "SpeakerFrame",
    "TurnPrompt",
    "build_turn_prompt",
    "turn_prompt",
    "denial_feedback",
    "is_pass",
    "room_template",
]
