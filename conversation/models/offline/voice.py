"""The offline model's own words: a short, persona-flavoured reply built from the prompts.

Pure and deterministic: the same prompts, seed and settings give the same reply. The reply reads
the speaker's name and traits from the system prompt, the transcript records from the user prompt,
answers the last other speaker by name (sometimes with an ``@``-mention), picks its tone from the
traits, reacts to a number in the last message (a counter-offer), and says the deal phrase when the
settings ask for it. Without a speaker name (an analysis question rather than a turn) it gives a
plain summary of the transcript. It is a stand-in for demos and tests, not an imitation of an LLM.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from conversation.models.offline.reading import (
    Message,
    persona_traits,
    speaker_name,
    transcript_messages,
)

_MENTIONABLE = re.compile(r"^[A-Za-z0-9][\w\-]*$")
# An amount as people write it: "24,000", "24000", "7.50", with an optional currency mark before
# ("$24,000", "USD 24000") or after ("24,000 dollars"). A bare four-digit year is not an amount.
_AMOUNT = re.compile(
    r"(?P<mark>[$€£]\s?|\b(?:USD|EUR|GBP)\s?)?"
    r"(?<![\w.,])(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w,]\d)"
    r"(?P<unit>\s?(?:dollars|euros|pounds|bucks|usd|eur|gbp)\b)?",
    re.IGNORECASE,
)
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_QUOTED = re.compile(r"\"[^\"]*\"|(?<=said )'[^']*'")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_DESCRIPTIVE = frozenset(
    {"persona", "motivation", "role", "description", "personality", "background", "occupation"}
)
_PRIVATE = ("private", "secret", "hidden", "value", "reserve")
_YOU_ARE_A = re.compile(r"^\s*(?:you are|you're|i am|i'm)\s+", re.IGNORECASE)

_TONES: dict[str, tuple[str, ...]] = {
    "skeptical": ("skeptic", "doubt", "cautious", "suspicious", "critical", "philosopher"),
    "curious": ("curious", "scientist", "inquisitive", "question", "research", "student"),
    "firm": ("tough", "firm", "aggressive", "hard", "stubborn", "demanding", "seller", "sales"),
    "warm": ("friendly", "warm", "kind", "cheerful", "optimistic", "helpful", "generous"),
}
_PHRASES: dict[str, tuple[str, ...]] = {
    "skeptical": (
        "I'm not convinced yet.",
        "I'd want to see that checked before I agree.",
        "That sounds too good to be true.",
    ),
    "curious": (
        "What makes you say that?",
        "I'd like to understand your reasoning.",
        "Interesting. Can you tell me more?",
    ),
    "firm": (
        "That doesn't work for me.",
        "I need a better offer than that.",
        "Let's be realistic here.",
    ),
    "warm": (
        "I appreciate you saying that.",
        "I think we can find something that works for both of us.",
        "Thanks, that's helpful.",
    ),
    "plain": (
        "Let's keep going.",
        "I see where you're coming from.",
        "Here's what I think.",
    ),
}


@dataclass(frozen=True, slots=True)
class VoiceSettings:
    """The settings of ``compose_reply`` (the offline model's parameters)."""

    deal_phrase: str | None = None
    deal_after: int | None = None
    deal_probability: float = 0.0
    mention_probability: float = 0.3
    max_words: int = 60


def compose_reply(
    system_prompt: str, user_prompt: str, settings: VoiceSettings, rng: random.Random
) -> str:
    """A turn in the persona's voice, or (no speaker named) a summary of the transcript."""
    name = speaker_name(system_prompt, user_prompt)
    messages = transcript_messages(user_prompt)
    if name is None:
        return _summary(messages, settings)
    traits = persona_traits(system_prompt)
    tone = _tone(traits)
    others = _others(messages, name)
    parts: list[str] = []
    if not messages or not others:
        parts.append(f"Hello, {_listing(others) if others else 'everyone'}. I'm {name}.")
        persona = _persona_line(traits, rng)
        if persona:
            parts.append(persona)
        parts.append(rng.choice(_PHRASES[tone]))
    else:
        last = next(m for m in reversed(messages) if m.speaker != name)
        parts.append(f'{_address(last.speaker, settings, rng)}, you said "{_snippet(last.text)}".')
        parts.append(rng.choice(_PHRASES[tone]))
        counter, accepted = _counter_offer(last.text, tone, traits, settings.deal_phrase)
        if counter:
            parts.append(counter)
        elif len(others) > 1:
            third = next(o for o in others if o != last.speaker)
            parts.append(f"{third}, what do you think?")
        if accepted:
            parts.append(f"{settings.deal_phrase}!")
            return _limit(" ".join(parts), settings.max_words, settings.deal_phrase)
    if not others or not messages:
        opening = _opening_offer(traits)
        if opening:
            parts.append(opening)
    if _says_deal(len(messages), settings, rng):
        parts.append(f"{settings.deal_phrase}!")
    return _limit(" ".join(parts), settings.max_words, settings.deal_phrase)


def _summary(messages: Sequence[Message], settings: VoiceSettings) -> str:
    if not messages:
        return "There is no transcript to comment on."
    speakers = _listing(list(dict.fromkeys(m.speaker for m in messages)))
    last = messages[-1]
    return _limit(
        f"{len(messages)} messages between {speakers}. "
        f'The last, from {last.speaker}, says "{_snippet(last.text)}".',
        settings.max_words,
        None,
    )


def _others(messages: Sequence[Message], name: str) -> list[str]:
    """Other speakers, most recent first."""
    seen: dict[str, None] = {}
    for message in reversed(messages):
        if message.speaker != name:
            seen.setdefault(message.speaker, None)
    return list(seen)


def _address(speaker: str, settings: VoiceSettings, rng: random.Random) -> str:
    if _MENTIONABLE.match(speaker) and rng.random() < settings.mention_probability:
        return f"@{speaker}"
    return speaker


def _tone(traits: Mapping[str, str]) -> str:
    words = " ".join(f"{k} {v}" for k, v in traits.items()).lower()
    for tone, cues in _TONES.items():
        if any(cue in words for cue in cues):
            return tone
    return "plain"


def _persona_line(traits: Mapping[str, str], rng: random.Random) -> str | None:
    """'Speaking as a curious scientist.': from a descriptive trait, first sentence only, never
    from a trait whose name says it is private."""
    usable = [
        v
        for k, v in traits.items()
        if v and k.lower() in _DESCRIPTIVE and not any(w in k.lower() for w in _PRIVATE)
    ]
    if not usable:
        return None
    value = _SENTENCE_END.split(usable[rng.randrange(len(usable))].strip())[0]
    value = _YOU_ARE_A.sub("", value).strip().rstrip(".!?")
    if not value:
        return None
    return f"Speaking as {value[0].lower() + value[1:]}."


def _role(traits: Mapping[str, str], tone: str = "plain") -> str | None:
    words = " ".join(f"{k} {v}" for k, v in traits.items()).lower()
    if "buy" in words:
        return "buyer"
    if "sell" in words or tone == "firm":
        return "seller"
    return None


def amounts(text: str) -> list[float]:
    """The amounts ``text`` names, in order: the currency-marked ones when there are any
    ("$24,000" is 24000, never 0), else every number that is not a bare year (a "2015 Honda"
    names a car, not a price)."""
    found = [
        (m.group("number"), bool(m.group("mark") or m.group("unit")))
        for m in _AMOUNT.finditer(text)
    ]
    marked = [number for number, is_marked in found if is_marked]
    chosen = marked or [number for number, _ in found if not _YEAR.match(number)]
    return [float(number.replace(",", "")) for number in chosen]


def _own_limit(traits: Mapping[str, str]) -> float | None:
    """The persona's own number (a buyer's value, a seller's cost), if its traits state one."""
    for value in traits.values():
        found = amounts(value)
        if found:
            return found[0]
    return None


def _shown(value: float) -> str:
    """An amount as a person writes it: whole above 10, thousands separated ("21,600")."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.2f}".rstrip("0").rstrip(".")


def _opening_offer(traits: Mapping[str, str]) -> str | None:
    role, limit = _role(traits), _own_limit(traits)
    if role is None or limit is None:
        return None
    return f"I could do {_shown(limit * (0.7 if role == 'buyer' else 1.3))}."


def _counter_offer(
    text: str, tone: str, traits: Mapping[str, str], deal_phrase: str | None
) -> tuple[str | None, bool]:
    """A counter-offer to the last number said, within the persona's own limit; accepted (with
    the deal phrase configured) when the offer is already within it."""
    numbers = amounts(text)
    if not numbers:
        return None, False
    offer = numbers[-1]
    role, limit = _role(traits, tone), _own_limit(traits)
    acceptable = limit is not None and (
        (role == "buyer" and offer <= limit) or (role == "seller" and offer >= limit)
    )
    if deal_phrase and acceptable:
        return f"{_shown(offer)} works for me.", True
    if role == "buyer":
        value = min(offer * 0.9, limit) if limit is not None else offer * 0.9
    elif role == "seller":
        value = max(offer * 1.1, limit) if limit is not None else offer * 1.1
    else:
        value = offer
    return f"How about {_shown(value)}?", False


def _says_deal(turns: int, settings: VoiceSettings, rng: random.Random) -> bool:
    if not settings.deal_phrase:
        return False
    if settings.deal_after is not None and turns >= settings.deal_after:
        return True
    return rng.random() < settings.deal_probability


def _snippet(text: str, words: int = 8) -> str:
    """A short quote: the last sentence of ``text`` that is its own (quotes of others removed)."""
    own = _QUOTED.sub("", " ".join(text.split()))
    sentences = [s for s in _SENTENCE_END.split(own) if len(s.split()) >= 2] or [own or text]
    parts = sentences[-1].replace('"', "'").split()
    short = " ".join(parts[:words])
    return short + "..." if len(parts) > words else short.rstrip(".!?,;:")


def _listing(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _limit(text: str, max_words: int, keep: str | None) -> str:
    words = text.split(" ")
    if len(words) <= max_words:
        return text
    ending = f" {keep}!" if keep and text.endswith(f"{keep}!") else ""
    return " ".join(words[:max_words]).rstrip(",;:") + "..." + ending


__all__ = ["VoiceSettings", "compose_reply"]
