"""The participant's forms: consent and the pre/post surveys, drawn from EDSL question kinds.

A survey is a list of questions as the study definition writes them (EDSL's fields:
``question_name``, ``question_text``, ``question_type`` one of ``free_text``,
``multiple_choice``, ``linear_scale``, with ``question_options`` and, for a scale, ``option_labels``)
or EDSL ``Question`` objects (the same attributes). Every text here was written by the researcher,
so it is drawn literally (``st.text``, or escaped where a widget label renders Markdown).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from ui.widgets import escape_markdown

#: The question kinds a participant's survey may hold.
KINDS = ("free_text", "multiple_choice", "linear_scale")
MAX_ANSWER_CHARS = 5_000


def _field(question: Any, name: str, default: Any = None) -> Any:
    if isinstance(question, Mapping):
        return question.get(name, default)
    return getattr(question, name, default)


def _options(question: Any) -> list[Any]:
    return list(_field(question, "question_options") or [])


def _scale_label(question: Any, value: Any) -> str:
    labels = _field(question, "option_labels") or {}
    label = labels.get(value, labels.get(str(value))) if isinstance(labels, Mapping) else None
    return f"{value} ({label})" if label else str(value)


def _question_widget(question: Any, key: str) -> Any:
    kind = str(_field(question, "question_type", "free_text"))
    label = escape_markdown(_field(question, "question_text", ""))
    options = _options(question)
    if kind == "multiple_choice":
        # markup-ok: each option is drawn through escape_markdown (format_func)
        return st.radio(label, options, index=None, key=key, format_func=escape_markdown)
    if kind == "linear_scale":
        return st.radio(  # markup-ok: each option is drawn through escape_markdown (format_func)
            label,
            options,
            index=None,
            key=key,
            horizontal=True,
            format_func=lambda v: escape_markdown(_scale_label(question, v)),
        )
    return st.text_area(label, key=key, max_chars=MAX_ANSWER_CHARS)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def survey_form(questions: Sequence[Any], *, key: str) -> dict | None:
    """One form with every question; returns ``{question_name: answer}`` once each question is
    answered and the form submitted (else None, with what is missing said above the button)."""
    with st.form(key, border=False):
        answers = {}
        for question in questions:
            name = str(_field(question, "question_name"))
            answers[name] = _question_widget(question, f"{key}:{name}")
        sent = st.form_submit_button("Continue", type="primary")
    if not sent:
        return None
    missing = [
        str(_field(q, "question_text", ""))
        for q in questions
        if _blank(answers[str(_field(q, "question_name"))])
    ]
    if missing:
        st.error("Please answer every question: " + escape_markdown("; ".join(missing)))
        return None
    return answers


def consent_form(text: str, *, key: str) -> bool | None:
    """The researcher's consent text and two buttons: True (agrees), False (declines), None."""
    with st.container(border=True):
        st.text(text)
    c1, c2 = st.columns(2)
    if c1.button("I agree", type="primary", key=f"{key}:agree", width="stretch"):
        return True
    if c2.button("I do not agree", key=f"{key}:decline", width="stretch"):
        return False
    return None


__all__ = ["KINDS", "MAX_ANSWER_CHARS", "consent_form", "survey_form"]
