"""EDSL's structured questions, as the offline model sees them: recognise the form, answer it.

EDSL turns a question into a user prompt from per-type templates (``edsl/questions/templates``):
the question text, then the options, then fixed answering instructions. ``read_form`` recognises
yes/no, multiple choice (options as text, codes or letters), linear scale and numerical questions
from those fixed lines; anything else (free text included) is ``None``. ``answer_form`` answers in
the shape EDSL's parser accepts: the answer on the first line, a short comment on the next.

Answers are sensible rather than random: "was a deal reached?" is Yes exactly when a message in the
transcript says a deal phrase; a multiple-choice question picks the option the transcript mentions
most; a numerical question takes the last number said. Ties and open choices use the seeded RNG.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from conversation.models.offline.reading import Message, transcript_messages, without_records

FormKind = Literal["yes_no", "multiple_choice", "linear_scale", "numerical"]

_ONE_OPTION = "Only 1 option may be selected."
_NUMERICAL = "This question requires a numerical response in the form of an integer or decimal"
_LETTERS = "Respond only with the letter corresponding to one of the options"
_CODES = "Respond only with the code corresponding to one of the options"
_SCALE_HINT = 'E.g., "1" or "5" by itself.'
_CODED_OPTION = re.compile(r"^(-?\d+)\s?:\s?(.*)$")
_LETTERED_OPTION = re.compile(r"^([A-Za-z]): (.*)$")
_BOUND = re.compile(r"^(Minimum|Maximum) answer value: (-?\d+(?:\.\d+)?)$")
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")
_DEAL_TOPIC = re.compile(r"\b(deal|agree\w*|settle\w*|accept\w*|bargain\w*)\b", re.IGNORECASE)
_DEAL_SAYINGS = re.compile(r"\b(it'?s a deal|we have a deal|we'?ve got a deal)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class QuestionForm:
    """A structured EDSL question read back from its prompt."""

    kind: FormKind
    question: str
    options: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def reply(self, index: int) -> str:
        """What to write to choose option ``index``: its code when the question uses codes."""
        return self.codes[index] if self.codes else self.options[index]


def read_form(user_prompt: str) -> QuestionForm | None:
    """The structured question ``user_prompt`` asks, or ``None`` (free text, or not EDSL's)."""
    lines = user_prompt.splitlines()
    stripped = [line.strip() for line in lines]
    for index, line in enumerate(stripped):
        if line.startswith(_NUMERICAL):
            return _numerical(lines[:index])
    if _ONE_OPTION not in stripped:
        return None
    index = len(stripped) - 1 - stripped[::-1].index(_ONE_OPTION)
    instructions = "\n".join(stripped[index + 1 :])
    block = lines[:index]
    if _LETTERS in instructions:
        return _coded(block, _LETTERED_OPTION, "multiple_choice")
    if _CODES in instructions:
        kind: FormKind = "linear_scale" if _SCALE_HINT in instructions else "multiple_choice"
        return _coded(block, _CODED_OPTION, kind)
    return _listed(block)


def _numerical(block: list[str]) -> QuestionForm:
    bounds: dict[str, float] = {}
    kept: list[str] = []
    for line in block:
        match = _BOUND.match(line.strip())
        if match:
            bounds[match.group(1)] = float(match.group(2))
        else:
            kept.append(line)
    return QuestionForm(
        kind="numerical",
        question="\n".join(kept).strip(),
        minimum=bounds.get("Minimum"),
        maximum=bounds.get("Maximum"),
    )


def _coded(block: list[str], pattern: re.Pattern[str], kind: FormKind) -> QuestionForm | None:
    codes: list[str] = []
    options: list[str] = []
    first = len(block)
    for position in range(len(block) - 1, -1, -1):
        line = block[position].strip()
        if not line:
            continue
        match = pattern.match(line)
        if match is None:
            break
        codes.insert(0, match.group(1))
        options.insert(0, match.group(2).strip())
        first = position
    if not codes:
        return None
    question = "\n".join(block[:first]).strip()
    return QuestionForm(kind=kind, question=question, options=tuple(options), codes=tuple(codes))


def _listed(block: list[str]) -> QuestionForm | None:
    # EDSL writes each option after a whitespace-only line ("    "); the question text ends
    # with an empty line. Walking back from the end, an option is a line whose previous line is
    # whitespace-only but not empty.
    options: list[str] = []
    first = len(block)
    position = len(block) - 1
    while position >= 0:
        line = block[position]
        if not line.strip():
            position -= 1
            continue
        previous = block[position - 1] if position > 0 else ""
        if not (previous and not previous.strip()):
            break
        options.insert(0, line.strip())
        first = position - 1
        position -= 2
    if not options:
        return None
    kind: FormKind = "yes_no" if sorted(options) == ["No", "Yes"] else "multiple_choice"
    question = "\n".join(block[:first]).strip()
    return QuestionForm(kind=kind, question=question, options=tuple(options))


def says_deal(text: str, phrase: str | None) -> bool:
    """True when ``text`` announces a deal: the configured phrase (as a word), or a common saying."""
    if phrase and re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text):
        return True
    return bool(_DEAL_SAYINGS.search(text))


def answer_form(form: QuestionForm, *, rng: random.Random, deal_phrase: str | None) -> str:
    """The answer line (and a comment line) for ``form``, in EDSL's expected format."""
    messages = transcript_messages(form.question)
    asking = without_records(form.question)
    if form.kind == "yes_no":
        return _yes_no(form, messages, asking, rng, deal_phrase)
    if form.kind == "numerical":
        return _number(form, messages, rng)
    if form.kind == "linear_scale":
        middle = len(form.options) // 2
        index = min(max(middle + rng.choice((-1, 0, 0, 1)), 0), len(form.options) - 1)
        return f"{form.reply(index)}\nOffline model: a seeded point near the middle of the scale."
    return _choice(form, messages, rng)


def _yes_no(
    form: QuestionForm,
    messages: Sequence[Message],
    asking: str,
    rng: random.Random,
    deal_phrase: str | None,
) -> str:
    yes, no = form.options.index("Yes"), form.options.index("No")
    if _DEAL_TOPIC.search(asking):
        texts = [(m.speaker, m.text) for m in messages] or [("", form.question)]
        for speaker, text in texts:
            if says_deal(text, deal_phrase or "DEAL"):
                who = f" ({speaker})" if speaker else ""
                return f"{form.reply(yes)}\nA message{who} announces a deal."
        return f"{form.reply(no)}\nNo message announces a deal."
    index = rng.choice((yes, no))
    return f"{form.reply(index)}\nOffline model: a seeded choice."


def _choice(form: QuestionForm, messages: Sequence[Message], rng: random.Random) -> str:
    corpus = " ".join(m.text for m in messages) if messages else form.question
    speakers = [m.speaker for m in messages]
    scores = []
    for option in form.options:
        pattern = r"(?<!\w)" + re.escape(option) + r"(?!\w)"
        mentioned = len(re.findall(pattern, corpus, re.IGNORECASE)) if option else 0
        scores.append(mentioned + speakers.count(option))
    best = max(scores)
    candidates = [i for i, score in enumerate(scores) if score == best]
    index = rng.choice(candidates)
    reason = "mentioned most in the transcript" if best else "a seeded choice"
    return f"{form.reply(index)}\nOffline model: {reason}."


def _number(form: QuestionForm, messages: Sequence[Message], rng: random.Random) -> str:
    corpus = [m.text for m in messages] if messages else [form.question]
    numbers = [float(n.replace(",", "")) for text in corpus for n in _NUMBER.findall(text)]
    low = form.minimum if form.minimum is not None else 0.0
    high = form.maximum if form.maximum is not None else max(low + 10.0, 10.0)
    if numbers:
        value, reason = numbers[-1], "the last number in the transcript"
    else:
        value, reason = float(rng.randint(int(low), int(max(low, high)))), "a seeded number"
    if form.minimum is not None:
        value = max(value, form.minimum)
    if form.maximum is not None:
        value = min(value, form.maximum)
    shown = str(int(value)) if value == int(value) else f"{value:g}"
    return f"{shown}\nOffline model: {reason}."


__all__ = ["QuestionForm", "read_form", "answer_form", "says_deal"]
