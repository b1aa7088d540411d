"""The Results page's Analysis tab: ask a question about the selected rooms' transcripts, follow
the answers as they come, chart a stored analysis's answers by condition, retry failed ones.

"Run analysis" only stores the analysis with its planned rooms and returns
(``conversation.analysis.start_analysis``): the background runner asks them
(``conversation.worker.analyses``), so the page stays usable. While answers are to come a small
fragment redraws the progress every ``ANALYSIS_POLL_SECONDS`` and reruns the page whenever more
answers are in, so the chart and the table fill in chunk by chunk. Counts come from storage
(``progress_of``), never from what this session remembers. Names and answers are shown as text
(``escape_markdown``, dataframes), never as Markdown.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from conversation import analysis, browse
from conversation.access import Action
from settings import SETTINGS
from ui.access import note
from ui.bootstrap import wake_runner
from ui.widgets import escape_markdown, model_picker

from . import condition_charts, tables

#: Seconds between looks at a running analysis's answers.
ANALYSIS_POLL_SECONDS = SETTINGS.analysis_poll_seconds


def render(
    db: Any, me: Any, experiment_id: int | None, selected: list[int], names: dict[str, str]
) -> None:
    """The whole tab: the form, the stored analyses, the chosen one's progress and answers."""
    st.markdown(
        "Ask a question about each selected room's transcript (for example *Was a deal "
        "reached?*). It is asked in the background; answers are stored and charted by condition."
    )
    start_form(db, me, experiment_id, selected)
    notice = st.session_state.pop("results_notice", None)
    if notice:
        st.success(notice)  # markup-ok: written by this module, with numbers only
    stored_analyses(db, me, experiment_id, names)


def start_form(db: Any, me: Any, experiment_id: int | None, selected: list[int]) -> None:
    """The question form; "Run analysis" stores the analysis and returns at once."""
    with st.form("analysis-form"):
        kind = st.selectbox("Question type", list(tables.QUESTION_TYPES), key="an-kind")
        text = st.text_area("Question", value="Was a deal reached?", key="an-text")
        options = st.text_input(
            "Options (multiple choice; comma separated)",
            key="an-options",
            placeholder="e.g. deal, no deal, walked away",
        )
        model, model_problem = model_picker("Model", key="an-model")
        allowed = me.can(Action.RUN_ANALYSIS)
        if not allowed:
            note(Action.RUN_ANALYSIS)
        run = st.form_submit_button("Run analysis", type="primary", disabled=not allowed)
    if not run:
        return
    try:
        question = tables.question_spec(kind, text, options)
        if model_problem:
            raise ValueError(model_problem)
    except ValueError as exc:
        st.error(escape_markdown(exc))
        return
    analysis_id = analysis.start_analysis(
        db, question, selected, model=model, experiment_id=experiment_id, actor=me
    )
    wake_runner()
    st.session_state["results_notice"] = (
        f"Analysis #{analysis_id} started: {len(selected)} room(s) to ask. The answers appear "
        "below as they come; the page stays usable meanwhile."
    )
    st.session_state["an-pick-next"] = analysis_id
    st.rerun()


def stored_analyses(db: Any, me: Any, experiment_id: int | None, names: dict[str, str]) -> None:
    """Pick a stored analysis (each labelled with its state), follow or retry it, chart it."""
    found = browse.list_analyses(db, experiment_id=experiment_id, limit=20)
    if not found:
        return
    progress = analysis.progress_of_many(db, [int(a.id or 0) for a in found])
    labels = {int(a.id or 0): f"#{a.id} {a.name} ({progress[int(a.id or 0)].state})" for a in found}
    if st.session_state.get("an-pick-next") in labels:
        st.session_state["an-pick"] = st.session_state.pop("an-pick-next")
    aid = int(
        st.selectbox(
            "Stored analyses", list(labels), format_func=lambda a: labels[a], key="an-pick"
        )
    )
    shown = progress[aid]
    if shown.to_come:
        live_progress(db, aid, shown.answered + shown.failed)
    elif shown.total:
        st.caption(escape_markdown(shown.summary()))
    if shown.failed and not shown.to_come:
        retry_failed(db, me, aid, shown.failed)
    answers = browse.analysis_frame(db, aid)
    st.plotly_chart(
        condition_charts.outcomes_by_condition(
            answers,
            question=browse.get_analysis(db, aid).name,
            names=names,
            planned=tables.planned_by_label(answers, names) if not answers.empty else None,
        ),
        key="chart-analysis",
    )
    st.dataframe(answers, hide_index=True, width="stretch")
    st.download_button(
        "Download answers (CSV)",
        answers.to_csv(index=False),
        file_name=f"analysis-{aid}.csv",
        mime="text/csv",
    )


def live_progress(db: Any, analysis_id: int, seen: int) -> None:
    """The running analysis's progress, redrawn every ``ANALYSIS_POLL_SECONDS``; the page is
    rerun when more answers are in than it shows (``seen``), so the chart fills in."""

    def watch() -> None:
        now = analysis.progress_of(db, analysis_id)
        came = now.answered + now.failed
        st.progress(came / max(now.total, 1), text=escape_markdown(now.summary()))
        st.caption(
            "Asked in the background (the app's runner, or a `python -m conversation.worker` "
            "process): you can use other tabs or leave the page meanwhile."
        )
        if came != seen:
            st.rerun()  # the whole page: the chart and the table show the new answers

    st.fragment(watch, run_every=ANALYSIS_POLL_SECONDS)()


def retry_failed(db: Any, me: Any, analysis_id: int, failed: int) -> None:
    """Offer to ask the failed answers again (in the background, like a new analysis)."""
    st.warning(f"{failed:d} answer(s) failed; their reasons are in the table.")
    if st.button(
        f"Retry {failed:d} failed answer(s)",
        key="an-retry",
        disabled=not me.can(Action.RUN_ANALYSIS),
    ):
        planned = analysis.retry_failed_answers(db, analysis_id, wait=False, actor=me)
        wake_runner()
        st.session_state["results_notice"] = (
            f"Analysis #{analysis_id}: {planned} failed answer(s) are being asked again."
        )
        st.session_state["an-pick-next"] = analysis_id
        st.rerun()


__all__ = ["ANALYSIS_POLL_SECONDS", "render"]
