"""Follow-up EDSL questions over many transcripts ("was a deal reached?"), as a tidy table.

``analyze(questions, scenarios)`` runs one ordinary EDSL job (questions x scenarios x one model)
and returns both EDSL's ``Results`` (for export) and one row per scenario (for pandas and charts).
Answers are kept one by one: EDSL 1.0.9 reports a failed answer (a model error, or a reply its
validation refused) as ``None`` instead of raising, so such an answer never enters a row; it is
listed in ``Analysis.failures`` (scenario, question, reason, the raw reply) and every valid answer
is kept. Answers are strict, so that a chart never counts a reply that did not answer:

- a reply that reproduces the transcript it was shown (its header, or a message of it word for
  word: a small model often echoes its prompt) is refused, even where EDSL parsed an option out of
  it (``reproduces_transcript``);
- otherwise EDSL's parsed answer counts (EDSL itself reads "No\n\nYes" and ``{"answer": "Yes"}``);
- where EDSL refused the reply and the question has fixed options, the reply counts only when its
  answer *is* an option: its first line is the option, or it begins with the option's words
  ("Yes, at $7."; an "Answer:" label before it is allowed), with a comment saying it was read so
  (``answer_from_reply``). An option named anywhere else ("no doubt about it", "I'd say yes")
  is not an answer: the reply is a failure, with its raw text.

Only a job that returns nothing at all raises ``ModelCallError(code="analysis_failed")``.

Scenario values are neutralised (``safety.neutralize_value``) before they enter EDSL, which renders
question text as Jinja, and a ``transcript`` given as a list of records is shown to the model as
JSON lines (``transcript.render_transcript``); the rows carry the caller's original values. ``question_from_spec`` builds a
question from a web form, with every field validated.

Where the job runs: the offline model (and EDSL's test model) and models with local provider keys
run locally with EDSL's remote cache off (transcripts are not uploaded); a model marked for Expected
Parrot's remote inference (see ``models.providers``) runs as a remote job.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conversation.access.roles import Action, Actor, require
from conversation.analysis.question_schema import QUESTION_TYPES as QUESTION_TYPES
from conversation.analysis.question_schema import (
    ROW_FIELD,
    TRANSCRIPT_FIELD,
    QuestionSpecIn,
    question_place,
    variables_used,
)
from conversation.exceptions import ConversationValueError, ModelCallError
from conversation.text.copies import MIN_WORDS, copy_words
from conversation.text.limits import check_depth
from conversation.text.safety import neutralize_value
from conversation.text.schema import validated
from conversation.text.transcript import TRANSCRIPT_HEADER, parse_transcript, render_transcript

_ROW_FIELD = ROW_FIELD
_EDSL_NAMES = frozenset({"scenario", "agent", "question", "answer", "loop", "range"})


@dataclass(frozen=True)
class AnswerFailure:
    """One answer that could not be had: which scenario and question, why, and the raw reply."""

    scenario_index: int
    question: str
    reason: str
    raw: str | None = None
    code: str = "invalid_answer"

    def to_error(self) -> dict[str, Any]:
        """The ``{type, code, message, raw}`` stored with the room's answer."""
        return {
            "type": "AnswerFailure",
            "code": self.code,
            "message": self.reason[:1000],
            "raw": None if self.raw is None else self.raw[:1000],
        }


@dataclass(frozen=True)
class Analysis:
    """EDSL ``Results``, one tidy row per scenario (in the order the scenarios were given) and
    the answers that failed; iterating it yields the rows.

    A row holds ``scenario_index``, the scenario's fields except the transcript, each valid
    answer under its question's name and its comment under ``<name>_comment`` (a failed answer
    is left out of the row and listed in ``failures``).
    """

    results: Any
    rows: list[dict[str, Any]]
    failures: list[AnswerFailure] = dataclasses.field(default_factory=list)

    # It also reads as the list of rows: ``for row in analyze(...)``, ``len(...)``, ``[i]``.
    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.rows[index]


def analyze(
    questions: Any,
    scenarios: Any,
    *,
    model: Any = None,
    cache: Any = None,
    actor: Actor | None = None,
    iteration: int = 0,
) -> Analysis:
    """Ask every question about every scenario with ``model`` (default: ``default_model()``).
    ``actor`` needs the researcher role (``PermissionDenied`` before any model is asked).

    ``iteration``: EDSL's cache iteration of the answers kept (0: the usual one). A panel's
    second judge on the same model asks at iteration 1, so its answers are its own samples, not
    the first judge's cached ones (EDSL runs the iterations before it too: those are the earlier
    judges' answers, from the cache, and are not kept)."""
    require(actor, Action.RUN_ANALYSIS)
    from edsl import Cache, Scenario, ScenarioList, Survey

    from conversation.models import default_model, needs_remote_jobs, resolve_model
    from conversation.models.offline import OFFLINE_SERVICE

    question_list = _questions(questions)
    originals = _scenarios(scenarios)
    _check_variables(question_list, originals)
    chosen = default_model() if model is None else resolve_model(model)
    prepared = [
        Scenario({**{k: _for_edsl(k, v) for k, v in data.items()}, _ROW_FIELD: index})
        for index, data in enumerate(originals)
    ]
    job = Survey(question_list).by(ScenarioList(prepared)).by(chosen)
    remote = needs_remote_jobs(chosen)
    local_only = getattr(chosen, "_inference_service_", None) == OFFLINE_SERVICE or not remote
    if not isinstance(iteration, int) or isinstance(iteration, bool) or iteration < 0:
        raise ConversationValueError(f"iteration must be a whole number >= 0, got {iteration!r}")
    results = job.run(
        n=iteration + 1,
        cache=Cache(data={}) if cache is None else cache,
        disable_remote_inference=local_only,
        disable_remote_cache=local_only,
        progress_bar=False,
        print_exceptions=False,
        stop_on_exception=False,
    )
    names = [q.question_name for q in question_list]
    if results is None or len(results) == 0:
        raise ModelCallError(_failure_message(results, names), code="analysis_failed")
    if iteration:  # the earlier iterations were the earlier judges' answers: not kept
        from edsl import Results

        kept = [result for result in results if result["iteration"] == iteration]
        results = Results(survey=results.survey, data=kept)
    rows, failures = _rows(results, originals, question_list)
    return Analysis(results=results, rows=rows, failures=failures)


def _for_edsl(field: str, value: Any) -> Any:
    """Neutralised value; a transcript given as records is shown as JSON lines, not a Python repr
    (EDSL would print a list with escapes such as ``\\u200b``)."""
    if (
        field == TRANSCRIPT_FIELD
        and isinstance(value, list | tuple)
        and value
        and all(isinstance(r, Mapping) for r in value)
    ):
        value = render_transcript(value)
    return neutralize_value(value)


def question_from_spec(
    spec: Mapping[str, Any], *, variables: Sequence[str] = (TRANSCRIPT_FIELD,)
) -> Any:
    """An EDSL question from a form: ``{"type", "name", "text", "options", "min_value",
    "max_value"}``. The text may use plain ``{{ transcript }}`` placeholders (and the other
    ``variables``), nothing else of Jinja; a text that uses none of them gets the transcript
    prepended, so a plain "Was a deal reached?" works. Options are data: neutralised.
    """
    from edsl import QuestionFreeText, QuestionMultipleChoice, QuestionNumerical, QuestionYesNo

    if not isinstance(spec, Mapping):
        raise ConversationValueError(
            f"question spec must be a dict, got {type(spec).__name__}; e.g. "
            '{"type": "yes_no", "name": "deal", "text": "Was a deal reached?"}'
        )
    checked = validated(
        QuestionSpecIn, spec, place=question_place, context={"variables": tuple(variables)}
    )
    name, text = checked.name, checked.text
    if checked.type == "multiple_choice":
        return QuestionMultipleChoice(
            question_name=name, question_text=text, question_options=checked.options
        )
    if checked.type == "yes_no":
        return QuestionYesNo(question_name=name, question_text=text)
    if checked.type == "free_text":
        return QuestionFreeText(question_name=name, question_text=text)
    return QuestionNumerical(
        question_name=name,
        question_text=text,
        min_value=checked.min_value,
        max_value=checked.max_value,
    )


def _questions(questions: Any) -> list[Any]:
    from edsl.questions import QuestionBase

    items = [questions] if isinstance(questions, QuestionBase) else questions
    if not isinstance(items, Iterable) or isinstance(items, str | bytes | Mapping):
        raise ConversationValueError(
            f"questions must be EDSL questions (or a list of them), got {type(questions).__name__}; "
            "build one with question_from_spec(...)"
        )
    found = list(items)
    if not found:
        raise ConversationValueError("questions is empty; pass at least one EDSL question")
    for index, question in enumerate(found):
        if not isinstance(question, QuestionBase):
            raise ConversationValueError(
                f"questions[{index}] must be an EDSL question, got {type(question).__name__}"
            )
    names = [q.question_name for q in found]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConversationValueError(
            f"question names must be unique; {repeated} appear more than once"
        )
    return found


def _scenarios(scenarios: Any) -> list[dict[str, Any]]:
    from edsl import Scenario

    items = [scenarios] if isinstance(scenarios, Scenario | Mapping) else scenarios
    if not isinstance(items, Iterable) or isinstance(items, str | bytes):
        raise ConversationValueError(
            f"scenarios must be a ScenarioList or a list of Scenarios/dicts, got "
            f"{type(scenarios).__name__}; use Conversation.summarize() or ConversationList.summarize()"
        )
    found: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ConversationValueError(
                f"scenarios[{index}] must be a Scenario or a dict, got {type(item).__name__}"
            )
        if _ROW_FIELD in item:
            raise ConversationValueError(
                f"scenarios[{index}] uses the reserved field {_ROW_FIELD!r}; rename it"
            )
        for key, value in item.items():  # before anything walks them (EDSL, neutralising)
            check_depth(value, f"scenarios[{index}].{str(key)[:40]}")
        found.append(dict(item))
    if not found:
        raise ConversationValueError("scenarios is empty; pass at least one transcript")
    return found


def _check_variables(questions: Sequence[Any], scenarios: Sequence[Mapping[str, Any]]) -> None:
    names = {q.question_name for q in questions}
    for question in questions:
        needed = variables_used(question.question_text) - _EDSL_NAMES - names
        for index, scenario in enumerate(scenarios):
            missing = sorted(needed - set(scenario))
            if missing:
                raise ConversationValueError(
                    f"scenarios[{index}] has no field(s) {missing} used by question "
                    f"{question.question_name!r}; add them (fields: {sorted(scenario)})"
                )


def _rows(
    results: Any, originals: Sequence[Mapping[str, Any]], questions: Sequence[Any]
) -> tuple[list[dict[str, Any]], list[AnswerFailure]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    failures: list[AnswerFailure] = []
    transcript_texts = [_message_texts(o.get(TRANSCRIPT_FIELD)) for o in originals]
    for result in results:
        index = int(result["scenario"][_ROW_FIELD])
        answers = result["answer"]
        comments = result.get("comments_dict") or {}
        generated = result.get("generated_tokens") or {}
        spent = result.get("raw_model_response") or {}
        row: dict[str, Any] = {"scenario_index": index}
        row.update({k: v for k, v in originals[index].items() if k != TRANSCRIPT_FIELD})
        for question in questions:
            name = question.question_name
            answer, comment = answers.get(name), comments.get(f"{name}_comment")
            raw = generated.get(f"{name}_generated_tokens")
            raw = raw if isinstance(raw, str) else None
            if raw is not None and reproduces_transcript(raw, transcript_texts[index]):
                failures.append(_echo_failure(index, name, raw))
                continue
            if answer is None and raw is not None:
                answer = answer_from_reply(question, raw)
                if answer is not None:
                    comment = f"read from the start of the reply {raw[:200]!r}"
            if answer is None:
                failures.append(_failure(index, name, comment, raw))
                continue
            row[name] = answer
            row[f"{name}_comment"] = comment
            row[f"{name}_usage"] = {  # EDSL's counts of this call (a cache hit: none spent)
                "input_tokens": spent.get(f"{name}_input_tokens"),
                "output_tokens": spent.get(f"{name}_output_tokens"),
                "cost": spent.get(f"{name}_cost"),
            }
        rows.append((index, row))
    ordered = [row for _, row in sorted(rows, key=lambda pair: pair[0])]
    return ordered, sorted(failures, key=lambda f: (f.scenario_index, f.question))


def _failure(index: int, name: str, comment: Any, raw: str | None) -> AnswerFailure:
    if raw is None or raw in ("None", "") or raw.startswith("[ERROR"):
        return AnswerFailure(
            index,
            name,
            f"no answer to {name!r}: the model call failed"
            + (f" ({str(comment)[:300]})" if comment else ""),
            None,
            code="no_answer",
        )
    first = str(comment or "the reply did not fit the question").splitlines()[:2]
    return AnswerFailure(
        index,
        name,
        f"the reply to {name!r} was refused by EDSL's validation: {' '.join(first)}",
        raw,
    )


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
#: A label a reply may put before its answer ("Answer: No").
_ANSWER_LABEL = re.compile(r"^\W*(?:final\s+)?answer\s*[:\-]\s*", re.IGNORECASE)


def answer_from_reply(question: Any, reply: str) -> Any:
    """The option of ``question`` (yes/no, multiple choice) that ``reply`` answers with: its
    first non-empty line is that option, or begins with its words (markup, quotes and an
    "Answer:" label ignored; the longest option wins) and names no other option after them.
    None when the reply does not start with an option: an option named later is not an answer
    (see the module docstring)."""
    options = getattr(question, "question_options", None)
    if not isinstance(options, list) or not options or not isinstance(reply, str):
        return None
    first = next((line for line in reply.splitlines() if _WORD.search(line)), "")
    words = _WORD.findall(
        _ANSWER_LABEL.sub("", first.replace("*", "").replace("_", " ")).casefold()
    )
    found: list[tuple[int, Any]] = []
    for option in options:
        wanted = _WORD.findall(str(option).casefold())
        if wanted and words[: len(wanted)] == wanted:
            found.append((len(wanted), option))
    if not found:
        return None
    longest = max(size for size, _ in found)
    best = [option for size, option in found if size == longest]
    if len(best) != 1:
        return None
    rest = f" {' '.join(words[longest:])} "
    for option in options:  # "Yes or no, hard to say" is no answer
        other = " ".join(_WORD.findall(str(option).casefold()))
        if option != best[0] and other and f" {other} " in rest:
            return None
    return best[0]


def _message_texts(transcript: Any) -> list[tuple[str, ...]]:
    """The words of each message of a scenario's transcript (records, or text in the shape the
    transcript is shown in), for ``reproduces_transcript``."""
    if isinstance(transcript, list | tuple):
        records = [r for r in transcript if isinstance(r, Mapping)]
        texts = [str(r.get("text") or r.get("content") or "") for r in records]
    elif isinstance(transcript, str):
        parsed = parse_transcript(transcript)
        texts = [str(r.get("text") or "") for r in parsed] or transcript.splitlines()
    else:
        return []
    return [words for words in map(copy_words, texts) if len(words) >= MIN_WORDS]


def reproduces_transcript(reply: str, messages: Sequence[tuple[str, ...]] = ()) -> bool:
    """True when ``reply`` copies the transcript it was shown instead of answering: the
    transcript's header line, or one of its ``messages`` (their words, ``text.copies``) as a
    line of the reply, a message line, or a line after a ``Name:`` label."""
    if TRANSCRIPT_HEADER in reply:
        return True
    known = set(messages)
    if not known:
        return False
    lines = [record.get("text") or "" for record in parse_transcript(reply)]
    for line in reply.splitlines():
        lines += [line, line.partition(":")[2]]  # as written, or after a "Name:" label
    return any(copy_words(str(line)) in known for line in lines)


def _echo_failure(index: int, name: str, raw: str) -> AnswerFailure:
    return AnswerFailure(
        index,
        name,
        f"the reply to {name!r} reproduced the transcript instead of answering the question",
        raw,
        code="reproduced_transcript",
    )


def _failure_message(results: Any, names: Sequence[str]) -> str:
    if results is None:
        return "the analysis job returned nothing; check the model and try again"
    failures: list[str] = []
    history = getattr(results, "task_history", None)
    for entry in getattr(history, "unfixed_exceptions", None) or []:
        for question, errors in entry.items():
            for error in errors:
                exc = getattr(error, "exception", error)
                failures.append(f"{question}: {type(exc).__name__}: {str(exc)[:200]}")
    shown = "; ".join(failures[:5]) or "unknown errors"
    more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
    return f"the analysis job returned no results for {list(names)}: {shown}{more}"


__all__ = [
    "Analysis",
    "AnswerFailure",
    "analyze",
    "answer_from_reply",
    "reproduces_transcript",
    "question_from_spec",
    "QUESTION_TYPES",
]
