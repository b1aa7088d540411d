"""Personal data out of exported text: Microsoft Presidio's analyzer finds it, its anonymizer
replaces each finding by its type (``<EMAIL>``, ``<PHONE>``, ...), and a :class:`ScrubReport`
counts the replacements by type.

What is found: Presidio's pattern recognizers for e-mail addresses, phone numbers, credit card
numbers, IP addresses and URLs; recruitment ids by their shape (Prolific's 24 hexadecimal
characters, MTurk's worker ids) and by value (a study's own, passed as ``known_ids``); and
people's names only where a spaCy language model is installed (none is by default: the report
says ``names: false``; ``pip install`` one of ``en_core_web_sm/md/lg`` to add them).

Guarantees: nothing leaves the machine (the e-mail check reads the public suffix list shipped
with ``tldextract``, never the network); the same text gives the same output; the analyzer is
built once per process (a few seconds: spaCy's import) and only when first used.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: Presidio's entity types -> the typed replacement's word (``<EMAIL>``).
LABELS = {
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "CREDIT_CARD": "CREDIT_CARD",
    "IP_ADDRESS": "IP_ADDRESS",
    "URL": "URL",
    "RECRUITMENT_ID": "RECRUITMENT_ID",
    "PERSON": "PERSON",
}
#: The spaCy models that add people's names, the best first.
NAME_MODELS = ("en_core_web_lg", "en_core_web_md", "en_core_web_sm", "en_core_web_trf")
#: Recruitment ids by shape: Prolific's participant ids, MTurk's worker ids (with a digit).
RECRUITMENT_PATTERNS = (
    ("prolific_pid", r"\b[0-9a-f]{24}\b", 0.9),
    ("mturk_worker", r"\bA(?=[0-9A-Z]*[0-9])[0-9A-Z]{11,20}\b", 0.6),
)


@dataclass(slots=True)
class ScrubReport:
    """What a scrubbing pass replaced: counts by type, texts seen and texts changed, and whether
    names were looked for (a spaCy model installed)."""

    counts: Counter[str] = field(default_factory=Counter)
    texts: int = 0
    changed: int = 0
    names: bool = False
    name_model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "replacements": dict(sorted(self.counts.items())),
            "total": sum(self.counts.values()),
            "texts": self.texts,
            "texts_changed": self.changed,
            "names": self.names,
            "name_model": self.name_model,
        }

    def lines(self) -> list[str]:
        """The report in a few plain lines (a package's README, the CLI)."""
        found = ", ".join(f"<{k}> {v}" for k, v in sorted(self.counts.items())) or "nothing"
        names = (
            f"names recognised with spaCy's {self.name_model}"
            if self.names
            else "names NOT recognised (no spaCy language model is installed)"
        )
        return [
            f"scrubbed {self.texts} texts, {self.changed} changed: {found}",
            names,
        ]


class _Engines:
    """Presidio's analyzer and anonymizer, built on first use, once per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._built: tuple[Any, Any, str | None] | None = None

    def get(self) -> tuple[Any, Any, str | None]:
        with self._lock:
            if self._built is None:
                self._built = _build()
            return self._built


def _installed_name_model() -> str | None:
    try:
        import spacy.util
    except ImportError:  # pragma: no cover - presidio requires spaCy
        return None
    return next((m for m in NAME_MODELS if spacy.util.is_package(m)), None)


def _build() -> tuple[Any, Any, str | None]:
    import tldextract
    from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NlpEngineProvider, NoOpNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        SpacyRecognizer,
        UrlRecognizer,
    )
    from presidio_anonymizer import AnonymizerEngine

    # The suffix list shipped with tldextract: its default fetches the current one from the
    # network on first use (a participant's data never waits on, or reaches, another host).
    offline_suffixes = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    class OfflineEmailRecognizer(EmailRecognizer):  # type: ignore[misc]
        def validate_result(self, pattern_text: str) -> bool:
            return bool(offline_suffixes(pattern_text).fqdn)

    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in (
        OfflineEmailRecognizer(),
        PhoneRecognizer(),
        CreditCardRecognizer(),
        IpRecognizer(),
        UrlRecognizer(),
    ):
        registry.add_recognizer(recognizer)
    registry.add_recognizer(
        PatternRecognizer(
            supported_entity="RECRUITMENT_ID",
            patterns=[Pattern(name, regex, score) for name, regex, score in RECRUITMENT_PATTERNS],
        )
    )
    model = _installed_name_model()
    nlp: Any
    if model is None:
        nlp = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    else:
        nlp = NlpEngineProvider(
            nlp_configuration={
                "nlp_engine_name": "spacy",
                "models": [{"lang_code": "en", "model_name": model}],
            }
        ).create_engine()
        registry.add_recognizer(SpacyRecognizer(supported_entities=["PERSON"]))
    analyzer = AnalyzerEngine(registry=registry, nlp_engine=nlp, supported_languages=["en"])
    return analyzer, AnonymizerEngine(), model


_ENGINES = _Engines()


class Scrubber:
    """Scrubs texts one at a time into one :class:`ScrubReport` (``report``). ``known_ids``: the
    recruitment ids of the people concerned, replaced wherever they appear whatever their
    shape."""

    def __init__(self, *, known_ids: Iterable[str] = ()) -> None:
        self._analyzer, self._anonymizer, model = _ENGINES.get()
        self.report = ScrubReport(names=model is not None, name_model=model)
        ids = sorted({i for i in known_ids if isinstance(i, str) and len(i.strip()) >= 4})
        self._known = (
            re.compile("|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True)))
            if ids
            else None
        )

    def scrub(self, text: Any) -> Any:
        """``text`` with its personal data replaced by typed placeholders (anything that is not
        a non-empty string is returned as it is)."""
        if not isinstance(text, str) or not text.strip():
            return text
        from presidio_anonymizer.entities import OperatorConfig

        self.report.texts += 1
        out = text
        known = 0
        if self._known is not None:
            out, known = self._known.subn("<RECRUITMENT_ID>", out)
        findings = self._analyzer.analyze(text=out, language="en")
        if findings:
            operators = {
                kind: OperatorConfig("replace", {"new_value": f"<{label}>"})
                for kind, label in LABELS.items()
            }
            result = self._anonymizer.anonymize(
                text=out, analyzer_results=findings, operators=operators
            )
            out = result.text
            for item in result.items:
                self.report.counts[LABELS.get(item.entity_type, item.entity_type)] += 1
        if known:
            self.report.counts["RECRUITMENT_ID"] += known
        if out != text:
            self.report.changed += 1
        return out

    def scrub_value(self, value: Any) -> Any:
        """Every string inside a JSON value scrubbed (a survey's answers, say)."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, list):
            return [self.scrub_value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.scrub_value(v) for k, v in value.items()}
        return value


def scrub_text(text: str, *, known_ids: Iterable[str] = ()) -> tuple[str, ScrubReport]:
    """One text scrubbed, with its report."""
    scrubber = Scrubber(known_ids=known_ids)
    return scrubber.scrub(text), scrubber.report


__all__ = ["LABELS", "NAME_MODELS", "ScrubReport", "Scrubber", "scrub_text"]
