"""The Results page's "Judges" tab: pick or write a rubric (from the experiment's codebook, or by
hand: dimensions, scales, anchors), pick a panel of models, score the experiment's rooms with
progress and spend, chart the scores by condition with intervals and n, retry failures, download
the scores; the agreement view (``ui.results.agreement_view``) sits under it. Rubric text, labels and the
judges' reasons are a person's or a model's text: shown in dataframes, select-box options,
``st.text``, or escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from conversation.access import Action
from conversation.analysis import coding, judges
from conversation.analysis.judges.rubrics import Rubric
from conversation.models import default_model
from ui.access import current_actor
from ui.access import note as role_note
from ui.widgets import escape_markdown, model_picker, progress_bar, spec_label

from .charts import plain
from .condition_charts import n_ticks

MAX_PANEL = 4
LEVEL_KINDS = ["nominal", "ordinal", "interval", "ratio"]
ROW_COLUMNS = ["name", "description", "kind", "levels", "anchors", "minimum", "maximum"]
NONE_LABEL = "none"


# --- rubric <-> editable rows ---------------------------------------------------------------------


def rubric_rows(rubric: Rubric | None) -> pd.DataFrame:
    """A rubric's dimensions as editable rows: ``levels`` are labels (comma separated) or the
    number of points; ``anchors`` are ``level: text`` pairs separated by ``;``."""
    rows = []
    for d in rubric.dimensions if rubric is not None else []:
        scale = d.scale.model_dump()
        levels = ", ".join(scale.get("labels") or []) or str(scale.get("points") or "")
        anchors = "; ".join(f"{k}: {v}" for k, v in d.anchors.items())
        rows.append((d.name, d.description, d.scale.kind, levels, anchors,
                     scale.get("minimum"), scale.get("maximum")))  # fmt: skip
    if not rows:
        rows.append(("tone", "How friendly is the message?", "ordinal", "5", "1: hostile; 5: warm", None, None))  # fmt: skip
    return pd.DataFrame(rows, columns=ROW_COLUMNS).astype({"minimum": float, "maximum": float})


def _scale(kind: str, levels: str, minimum: Any, maximum: Any) -> dict[str, Any]:
    if kind in ("interval", "ratio"):
        bounds = {k: float(v) for k, v in (("minimum", minimum), ("maximum", maximum)) if pd.notna(v)}  # fmt: skip
        return {"kind": kind, **bounds}
    text = (levels or "").strip()
    if kind == "ordinal" and text.isdigit():
        return {"kind": kind, "points": int(text)}
    return {"kind": kind, "labels": [p.strip() for p in text.split(",") if p.strip()]}


def rubric_from_rows(name: str, unit: str, description: str, rows: pd.DataFrame) -> Rubric:
    """The rubric the editor describes (``ConversationValueError`` naming the field)."""
    dimensions = []
    for row in rows.to_dict("records"):
        if not str(row.get("name") or "").strip():
            continue
        anchors = {}
        for pair in str(row.get("anchors") or "").split(";"):
            level, _, text = pair.partition(":")
            if level.strip() and text.strip():
                anchors[level.strip()] = text.strip()
        dimensions.append({
            "name": str(row["name"]).strip(),
            "description": str(row.get("description") or "").strip(),
            "scale": _scale(str(row.get("kind") or "nominal"), str(row.get("levels") or ""),
                            row.get("minimum"), row.get("maximum")),
            "anchors": anchors,
        })  # fmt: skip
    return Rubric.from_dict(
        {"name": name, "unit": unit, "description": description, "dimensions": dimensions}
    )


# --- the tab ------------------------------------------------------------------------------------


def rubric_editor(db: Any, experiment_id: int, current: judges.StoredRubric | None) -> None:
    """Create a rubric from the codebook, or write / edit one by hand (a save is a new version)."""
    me = current_actor()
    with st.expander("Create or edit a rubric", expanded=current is None):
        labels = coding.codebook(db, experiment_id=experiment_id)
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        book_name = c1.text_input(
            "Name of a rubric from the codebook", "codebook", key="jd-book-name"
        )
        if c2.button("From the codebook", key="jd-from-book", disabled=len(labels) < 1):
            try:
                rubric = Rubric.from_codebook(
                    book_name.strip() or "codebook", labels, none_label=NONE_LABEL
                )
                _saved(db, rubric, experiment_id, me)
            except ValueError as exc:
                st.error(escape_markdown(exc))
        if not labels:
            st.caption("The experiment's codebook is empty (add labels when tagging messages).")
        base = current.rubric if current is not None else None
        name = st.text_input("Rubric name", base.name if base else "rubric", key="jd-name")
        unit = st.radio("Unit", ["message", "room"], horizontal=True, key="jd-unit",
                        index=0 if base is None or base.unit == "message" else 1)  # fmt: skip
        description = st.text_input("Description (optional)", base.description if base else "", key="jd-desc")  # fmt: skip
        st.caption("Levels: labels separated by commas, or the number of points (ordinal 1..k). "
                   "Anchors: `level: meaning; level: meaning`. Min/max: interval and ratio.")  # fmt: skip
        rows = st.data_editor(
            rubric_rows(base), num_rows="dynamic", hide_index=True, key="jd-rows",
            column_config={"kind": st.column_config.SelectboxColumn("kind", options=LEVEL_KINDS, required=True)},
        )  # fmt: skip
        if st.button("Save rubric (a new version)", key="jd-save", type="primary"):
            try:
                _saved(
                    db, rubric_from_rows(name.strip(), unit, description, rows), experiment_id, me
                )
            except ValueError as exc:
                st.error(escape_markdown(exc))


def _saved(db: Any, rubric: Rubric, experiment_id: int, me: Any) -> None:
    rubric_id = judges.save_rubric(db, rubric, experiment_id=experiment_id, actor=me)
    st.session_state["jd-pick-next"] = rubric_id
    st.session_state["jd-notice"] = f"Rubric saved (version {rubric.version})."
    st.rerun()


def panel_picker() -> tuple[list[judges.Judge], str | None]:
    """The judges: how many, then a model (and a name) for each."""
    count = int(st.number_input("Judges on the panel", 1, MAX_PANEL, 1, key="jd-count"))
    panel, problems = [], []
    for i in range(count):
        c1, c2 = st.columns([2, 1])
        with c1:
            spec, problem = model_picker(f"Judge {i + 1} model", key=f"jd-model-{i}")
        name = c2.text_input(f"Judge {i + 1} name", key=f"jd-jname-{i}",
                             placeholder=spec_label(spec))  # fmt: skip
        if problem:
            problems.append(problem)
            continue
        chosen = spec if spec is not None else default_model()  # "App default": the app's model
        panel.append(judges.Judge(name.strip() or f"{spec_label(spec)} #{i + 1}", chosen))
    return panel, "; ".join(problems) or None


def _run(db: Any, stored: judges.StoredRubric, panel: list[judges.Judge], room_ids: Sequence[int],
         experiment_id: int, rescore: bool) -> None:  # fmt: skip
    show = progress_bar("Scoring…", "{n} of {total} units scored")
    try:
        run = judges.run_judges(db, stored.rubric, panel, room_ids, experiment_id=experiment_id,
                                rescore=rescore, progress=show, actor=current_actor())  # fmt: skip
    except ValueError as exc:
        st.error(escape_markdown(exc))
        return
    st.session_state["jd-notice"] = run.describe()
    st.rerun()


@st.fragment
def render(db: Any, experiment_id: int | None, room_ids: Sequence[int], names: Mapping[str, str]) -> None:  # fmt: skip
    """The tab for the selected rooms of an experiment (``names``: short condition names). A
    fragment: its widgets rerun this tab only, not the tables and charts above."""
    from . import agreement_view

    if experiment_id is None:
        st.info("Pick an experiment above: judges score its rooms with a rubric.")
        return
    me = current_actor()
    if not me.can(Action.RUN_ANALYSIS):
        role_note(Action.RUN_ANALYSIS)
        return
    notice = st.session_state.pop("jd-notice", None)
    if notice:
        st.success(escape_markdown(notice))
    stored = {r.id: r for r in judges.stored_rubrics(db, experiment_id=experiment_id)}
    if st.session_state.get("jd-pick-next") in stored:
        st.session_state["jd-pick"] = st.session_state.pop("jd-pick-next")
    picked = st.selectbox("Rubric", list(stored), format_func=lambda r: stored[r].label,
                          key="jd-pick", placeholder="no rubric yet")  # fmt: skip
    current = stored.get(picked) if picked is not None else None
    rubric_editor(db, experiment_id, current)
    if current is None:
        return
    st.text(f"Dimensions: {', '.join(d.name for d in current.rubric.dimensions)} "
            f"({current.rubric.unit} units)")  # fmt: skip
    panel, problem = panel_picker()
    rescore = st.checkbox("Ask again what is already scored (answers come from the model cache)", key="jd-rescore")  # fmt: skip
    if st.button(f"Score {len(room_ids)} room(s)", key="jd-run", type="primary", disabled=bool(problem)):  # fmt: skip
        _run(db, current, panel, room_ids, experiment_id, rescore)
    if problem:
        st.error(escape_markdown(problem))
    scores_section(db, current, room_ids, names)
    agreement_view.render(db, current, room_ids)


def scores_section(db: Any, stored: judges.StoredRubric, room_ids: Sequence[int], names: Mapping[str, str]) -> None:  # fmt: skip
    """The latest run, a retry of failures, scores by condition and the scores download."""
    from conversation.analysis.judges import tables as judge_tables

    runs = judges.runs(db, stored.id)
    if not runs:
        st.caption("No scores yet for this rubric version: pick a panel and score the rooms.")
        return
    latest = runs[0]
    st.text(latest.describe())
    if latest.failed and st.button(f"Retry {latest.failed:d} failed score(s)", key="jd-retry"):
        done = judges.retry_failed_scores(db, latest.run_id, actor=current_actor())
        st.session_state["jd-notice"] = done.describe()
        st.rerun()
    frame = judge_tables.scores_frame(db, stored.id, room_ids=room_ids)
    d1, d2 = st.columns(2)
    dimension = d1.selectbox("Dimension", [d.name for d in stored.rubric.dimensions], key="jd-dim")
    raters = [judges.PANEL, *sorted(r for r in set(frame["rater"]) if r != judges.PANEL)]
    rater = d2.selectbox("Rater", raters, key="jd-rater")
    level = stored.rubric.dimension(dimension).level
    per = judge_tables.by_condition(frame, dimension, level, rater=rater)
    st.plotly_chart(condition_chart(per, dimension, rater, names), key="jd-chart")
    st.dataframe(frame, hide_index=True, width="stretch", key="jd-scores")
    st.download_button(
        "Scores (CSV)",
        lambda: judge_tables.export_scores_csv(db, stored.id, room_ids=room_ids),
        file_name=f"scores-{stored.id}.csv", mime="text/csv", key="jd-dl-scores", on_click="ignore",
    )  # fmt: skip


def condition_chart(per: pd.DataFrame, dimension: str, rater: str, names: Mapping[str, str]) -> go.Figure:  # fmt: skip
    """Scores by condition: the mean (numbers) or each label's share, with 95% intervals and the
    n of each condition under its tick."""
    fig = go.Figure()
    title = f"{plain(dimension)} by condition ({plain(rater)}; 95% CI)"
    if per.empty:
        fig.update_layout(title=title, height=320)
        fig.add_annotation(text="No scores yet.", showarrow=False)
        return fig
    per = per.assign(condition=per["condition"].map(lambda c: names.get(c, c)))
    order = list(dict.fromkeys(per["condition"]))
    groups = [(None, per)] if per["label"].isna().all() else list(per.groupby("label", sort=True))
    for label, part in groups:
        fig.add_bar(
            x=[plain(c) for c in part["condition"]], y=part["estimate"],
            name=plain(label) if label is not None else "mean",
            error_y={"type": "data", "symmetric": False,
                     "array": (part["high"] - part["estimate"]).fillna(0).clip(lower=0).tolist(),
                     "arrayminus": (part["estimate"] - part["low"]).fillna(0).clip(lower=0).tolist()},
        )  # fmt: skip
    counts = dict(zip(per["condition"], per["n"], strict=False))
    fig.update_layout(title=title, barmode="group", height=380, xaxis=n_ticks(order, counts))
    return fig


__all__ = ["condition_chart", "panel_picker", "render", "rubric_editor", "rubric_from_rows", "rubric_rows", "scores_section"]  # fmt: skip
