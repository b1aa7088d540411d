"""Experiments: design a batch from a template room (conditions x replicates), see the planned rooms
and calls, run it with progress and live counts, stop it. It resumes after a server restart."""

import zlib

import pandas as pd
import streamlit as st

from conversation import browse, worker
from conversation.access import Action
from conversation.vocabulary import ExperimentStatus
from ui import experiments as ex
from ui import manage, widgets
from ui.access import note
from ui.bootstrap import (
    actor,
    database,
    human_name,
    model_summary,
    once,
    page_setup,
    request_id,
    wake_runner,
)
from ui.browser import open_at_top
from ui.params import parse_id
from ui.results import condition_charts, tables
from ui.room import rooms
from ui.room.templates import TEMPLATES
from ui.study.editor import study_editor
from ui.widgets import (
    escape_markdown,
    model_choices,
    offline_spec,
    progress_bar,
    spec_for_choice,
    spec_label,
)

page_setup()
db = database()
me = actor()
PROGRESS_SECONDS = 1.0
ROOM_CHOICES = 100  # rooms the template-room picker lists at once

st.title("Experiments")
with st.expander("Study with participants: edit, validate, launch", icon=":material/diversity_3:"):
    study_editor(db, me)  # ui.study.editor (docs/studies.md)

if ex.catch_up(db, speaker=human_name()):  # resumes experiments a restart cut short
    wake_runner()
show_archived = st.toggle("Show archived experiments", key="exp-show-archived")
linked = parse_id(st.query_params.get("experiment"), "experiment")
if linked.problem:
    st.warning(escape_markdown(linked.problem))
current = linked.value
# No status in the labels: the picker is drawn once per page run, so a status in it would go
# stale while the progress panel below follows the rooms. An archived experiment
# stays reachable by its link.
labels = ex.experiment_labels(db, show_archived=show_archived, linked=current)
if current is not None and current not in labels:
    st.error(f"There is no experiment {current}. Pick another one or design a new one.")
    current = None
manage.show_notice()
options = [None, *labels]
picked = widgets.synced_selectbox(
    "Experiment",
    options,
    current,
    format_func=lambda e: "+ New experiment" if e is None else labels[e],
    key="exp-pick",
)
if picked != current:
    if picked is None:
        st.query_params.pop("experiment", None)
    else:
        st.query_params["experiment"] = str(picked)
    st.rerun()

if current is None:
    st.subheader("Design")
    name_slot = st.container()  # the name is drawn here once the template is known
    source = st.radio(
        "Template room", ["A shipped template", "An existing room"], horizontal=True, key="exp-src"
    )
    suggested: dict = {}
    if source == "A shipped template":
        tkey = st.selectbox(
            "Template",
            list(TEMPLATES),
            index=list(TEMPLATES).index("mug_negotiation"),
            format_func=lambda k: TEMPLATES[k].title,
            key="exp-tpl",
        )
        template = ex.template_from_room_template(TEMPLATES[tkey])
        suggested = dict(TEMPLATES[tkey].conditions)
        st.caption(escape_markdown(TEMPLATES[tkey].description))
        origin = f"tpl-{tkey}"
        suggested_name = TEMPLATES[tkey].title
    else:
        # The Room page's picker search (name, condition or #id): any room can be found, and
        # the list stays bounded (the first ROOM_CHOICES matches, newest first).
        find = st.text_input(
            "Find a room",
            key="exp-room-find",
            placeholder="name, condition or #id",
            icon=":material/search:",
        )
        choices, matching = rooms.picker_labels(db, search=find, page_size=ROOM_CHOICES)
        if not choices:
            if find.strip():
                st.info("No room matches this search.")
            else:
                st.info("No rooms yet: use a shipped template.")
            st.stop()
        if matching > len(choices):
            st.caption(
                f"The newest {len(choices):d} of {matching:d} matching rooms: search to find others."
            )
        rid = st.selectbox("Room", list(choices), format_func=lambda r: choices[r], key="exp-room")
        template = ex.template_from_room(db, int(rid))
        origin = f"room-{rid}"
        suggested_name = choices[rid].split(" ", 1)[-1]  # "#7 name" -> "name"
    # The name follows the template (as the opening does) until the person types their own.
    if st.session_state.get("exp-name") in (None, st.session_state.get("_exp-name-suggested")):
        st.session_state["exp-name"] = suggested_name
    st.session_state["_exp-name-suggested"] = suggested_name
    name = name_slot.text_input("Experiment name", key="exp-name")
    # Widgets whose value comes from the template are keyed by it (``origin``): Streamlit keeps a
    # keyed widget's value when its default changes, so one key for every template would carry
    # the previous template's opening into the new rooms.
    model = template.get("model")
    if (model or {}).get("service") == "offline" or (model is None and model_summary()[1]):
        # The pace control applies to every room the offline stand-in answers, including a
        # template on the app's default model when that default is the offline model.
        template["model"] = offline_spec(
            f"exp-offline-{origin}", model or {"service": "offline", "model": "offline"}
        )
    template["opening"] = st.text_area(
        "Opening message of every room", value=template["opening"], key=f"exp-opening-{origin}"
    )
    roster = [a["name"] for a in template["agents"]]

    st.markdown("**Conditions**")
    conditions: list[ex.Condition]
    use_suggested = bool(suggested) and st.checkbox(
        "Use the template's conditions (" + escape_markdown(", ".join(suggested)) + ")",
        value=True,
        key="exp-suggested",
    )
    if use_suggested:
        conditions = [ex.Condition(label, traits) for label, traits in suggested.items()]
    else:
        factors = []
        for i in range(2):
            c1, c2, c3 = st.columns([1, 1, 2])
            agent = c1.selectbox(f"Vary agent {i + 1}", roster, key=f"exp-f{i}-agent-{origin}")
            known = next(a for a in template["agents"] if a["name"] == agent).get("traits") or {}
            trait = c2.selectbox(
                "trait", sorted(known) or ["role"], key=f"exp-f{i}-trait-{origin}-{agent}"
            )
            values = c3.text_area(
                "values (one per line; empty: not varied)",
                key=f"exp-f{i}-values-{origin}",
                height=80,
            )
            factors.append((agent, trait, [v for v in values.splitlines() if v.strip()]))
        conditions = ex.crossed_conditions(factors)
    models = st.multiselect(
        "Also vary the model",
        [c for c in model_choices() if c not in ("App default", "Other model…")],
        key="exp-models",
    )
    if models:
        specs = []
        for choice in models:
            spec, problem = spec_for_choice(choice)
            if spec is None:
                st.error(escape_markdown(f"{choice}: {problem}"))
            else:
                specs.append((spec_label(spec), spec))
        conditions = ex.with_models(conditions, specs)

    def numbers(label: str, key: str) -> list[int]:
        text = st.text_input(label, key=key)
        try:
            return [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            st.error(f"{label}: whole numbers separated by commas, please.")
            return []

    conditions = ex.with_turn_limits(
        conditions,
        template,
        numbers("Also vary 'stop after N agent turns' (comma separated, e.g. 4, 8)", "exp-limits"),
    )
    for setting in ("max_rounds", "max_messages"):
        if setting in template["planner"]:
            conditions = ex.with_planner_setting(
                conditions,
                template,
                setting,
                numbers(f"Also vary the planner's {setting} (comma separated)", f"exp-{setting}"),
            )
    prompts = st.text_area(
        "Also vary the prompt template (variants separated by a line with ---)",
        key="exp-prompts",
        help="Jinja, rendered in a sandbox; variables as on the Room page.",
    )
    variants = [v.strip() for v in prompts.split("\n---\n") if v.strip()]
    conditions = ex.with_prompts(conditions, variants)
    replicates = st.number_input(
        "Replicates per condition", 1, ex.MAX_REPLICATES, 4, key="exp-reps"
    )
    b1, b2 = st.columns(2)
    budget = ex.budget_from_inputs(
        b1.number_input("Budget, US dollars (0: none)", 0.0, step=0.5, key="exp-budget-usd"),
        b2.number_input("Budget, tokens (0: none)", 0, step=10_000, key="exp-budget-tokens"),
    )

    try:
        plan = ex.plan(conditions, int(replicates))
    except ValueError as exc:
        st.error(escape_markdown(exc))
        st.stop()
    calls = ex.estimate_calls(template, plan)
    m1, m2, m3 = st.columns(3)
    m1.metric("Conditions", len(conditions))
    m2.metric("Planned rooms", len(plan))
    m3.metric("Model calls (at most)", "unbounded" if calls is None else f"{calls:,}")
    if calls is None:
        st.warning(
            "Some rooms have no turn limit: set 'stop after N agent turns' or a planner cap."
        )
    # Short names label the Results tables and chart axes: derived from what differs, editable.
    # Keyed by the conditions themselves, so a new design starts from its own derived names.
    derived = ex.short_names(conditions)
    names_key = f"exp-shorts-{zlib.crc32(chr(0).join(c.label for c in conditions).encode())}"
    edited = st.data_editor(
        pd.DataFrame(
            {
                "condition": [c.label for c in conditions],
                "short name": derived,
                "rooms": [int(replicates)] * len(conditions),
            }
        ),
        hide_index=True,
        width="stretch",
        disabled=["condition", "rooms"],
        key=names_key,
        column_config={
            "short name": st.column_config.TextColumn(
                "short name",
                max_chars=ex.MAX_SHORT_NAME,
                help="Shown in Results tables and chart axes; unique, at most 24 characters.",
            )
        },
    )
    conditions = [
        c.named(None if str(short or "").strip() == d else str(short or ""))
        for c, short, d in zip(conditions, edited["short name"], derived, strict=True)
    ]
    try:
        ex.check_short_names(conditions)
    except ValueError as exc:
        st.error(escape_markdown(exc))
        st.stop()
    slot = "experiment-create"
    request_id(slot)  # drawn with the button: a double click makes one experiment
    if not me.can(Action.CREATE_EXPERIMENT):
        note(Action.CREATE_EXPERIMENT)
    if st.button(
        "Create and run",
        type="primary",
        key="exp-run",
        disabled=calls is None or not me.can(Action.CREATE_EXPERIMENT),
    ):
        progress = progress_bar("Creating the rooms...", "Created {n:,} of {total:,} rooms")
        try:
            made = once(
                slot,
                lambda: ex.create(
                    db,
                    name.strip() or "experiment",
                    ex.design(template, conditions, int(replicates), budget=budget),
                    speaker=human_name(),
                    actor=me,
                    progress=progress,
                ),
            )
        except ValueError as exc:
            st.error("Not created: " + escape_markdown(exc))
        else:
            wake_runner()
            st.query_params["experiment"] = str(made)
            open_at_top(f"experiment-{made}")  # its progress, not the form's scroll position
            st.rerun()
    st.stop()

# --- one experiment ---------------------------------------------------------------------------
assert current is not None  # the design form above ends with st.stop()
experiment_id = current
experiment = browse.get_experiment(db, experiment_id)

st.subheader(escape_markdown(experiment.name))
c1, c3, c2 = st.columns([1, 2, 2])
if c1.button(
    "Stop",
    key="exp-stop",
    disabled=experiment.status != ExperimentStatus.RUNNING or not me.can(Action.CONTROL),
):
    ex.stop(
        db,
        experiment_id,
        actor=me,
        progress=progress_bar("Stopping the rooms...", "Stopped {n:,} of {total:,} rooms"),
    )
    st.rerun()
rerun_slot = f"experiment-rerun-{experiment_id}"
request_id(rerun_slot)  # drawn with the button: a double click makes one re-run
if c3.button(
    "Re-run from cache",
    key="exp-rerun",
    disabled=not me.can(Action.CREATE_EXPERIMENT),
    help="The same design as a new experiment, each room with its original seed: every answer "
    "the model gave comes from the model cache, so the transcripts repeat exactly, at no cost.",
):
    rerun = once(rerun_slot, lambda: ex.rerun_experiment(db, experiment_id, actor=me))
    wake_runner()
    st.query_params["experiment"] = str(rerun)
    st.rerun()
c2.page_link(
    "pages/results.py",
    label="Open in Results",
    icon=":material/monitoring:",
    query_params={"experiment": str(experiment_id)},
)


short_names = tables.condition_names(db, experiment_id)  # {condition: short name}, in order


def progress_panel() -> None:
    now = ex.progress(db, experiment_id)
    status = browse.get_experiment(db, experiment_id).status
    if status == ExperimentStatus.RUNNING and ex.mark_done_if_finished(db, experiment_id, now):
        st.rerun()
    if status != experiment.status:  # finished (or stopped) elsewhere: redraw the whole page
        st.rerun()
    table = browse.rooms_summary(db, experiment_id=experiment_id, limit=None)
    st.progress(now.fraction, text=f"{now.finished} of {now.planned} rooms finished ({status})")
    recovery = (
        worker.recovering(db, experiment_id=experiment_id)
        if status == ExperimentStatus.RUNNING
        else None
    )
    if recovery is not None:  # a crashed server's turns, taken over in seconds
        said = recovery.sentence()
        st.warning(escape_markdown(said[0].upper() + said[1:] + "."), icon=":material/restart_alt:")
    k1, k2, k3, k4 = st.columns(4)
    k1.metric("Rooms created", f"{now.created} / {now.planned}")
    k2.metric("Running", now.running)
    k3.metric("Messages", int(table["messages"].sum()) if not table.empty else 0)
    # A tile cuts a long value ("unknown (1…"): the short form there, the whole one in its help
    # and in the spend line below.
    k4.metric("Cost", now.spent.cost_short, help=escape_markdown(now.cost_text))
    st.caption(escape_markdown(ex.spend_line(now)))
    table = rooms.with_status_words(db, table)
    st.caption(escape_markdown(rooms.status_counts(table, now.by_status)))
    if not table.empty:
        # Each room's condition by its short name (as in Results), in the design's order.
        labelled, order = condition_charts.condition_labels(table, short_names)
        rank = {label: i for i, label in enumerate(order)}
        shown = (
            labelled.assign(
                condition=labelled["label"],
                _rank=labelled["label"].map(rank),
                cost=rooms.cost_texts(labelled),
            )
            .sort_values(["_rank", "replicate", "room_id"], kind="stable")[
                ["room_id", "condition", "replicate", "status", "stop_reason", "messages", "cost"]
            ]
            .reset_index(drop=True)
        )
        picked = st.dataframe(
            shown,
            hide_index=True,
            width="stretch",
            on_select="rerun",
            selection_mode="single-row",
            key="exp-rooms",
            column_config={
                "room_id": st.column_config.NumberColumn("room", format="#%d"),
            },
        )
        if picked.selection.rows:
            chosen = int(shown.iloc[picked.selection.rows[0]]["room_id"])
            st.switch_page("pages/room.py", query_params={"room": str(chosen)})
        st.caption("Select a row to open the room (watch it live, post a message).")


if experiment.status == ExperimentStatus.RUNNING:
    st.fragment(progress_panel, run_every=PROGRESS_SECONDS)()
else:
    progress_panel()

with st.expander("Manage (rename, archive, delete)", icon=":material/tune:"):
    manage.experiment_panel(db, experiment)

with st.expander("Design", icon=":material/schema:"):
    st.json(experiment.config, expanded=False)
