"""The web app's pure helpers: chart builders, agent-library rules, experiment designs, templates.

No Streamlit session here: these are plain functions from data to data (or to plotly figures).
"""

from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import pytest

from conversation import library
from ui import experiments
from ui.results import charts, condition_charts
from ui.room.templates import TEMPLATES


def _events() -> pd.DataFrame:
    rows = [
        # room, seq, kind, speaker, state, words, latency, in, out, cost
        (1, 1, "human", "user", None, 4, None, None, None, None),
        (1, 2, "agent", "Buyer", "done", 10, 0.2, 30, 10, 0.001),
        (1, 3, "agent", "Seller", "done", 6, 0.4, 35, 6, 0.002),
        (1, 4, "agent", "Buyer", "failed", 0, 0.1, 5, 0, 0.0),
        (2, 1, "human", "user", None, 3, None, None, None, None),
        (2, 2, "agent", "Buyer", "done", 8, 0.3, 28, 8, 0.001),
        (2, 3, "pass", "Seller", "done", 0, 0.1, 10, 1, 0.0),
    ]
    cols = ["room_id", "seq", "kind", "speaker", "state", "words", "latency", "input_tokens",
            "output_tokens", "cost"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def _bar_values(fig: go.Figure, name: str) -> dict[str, float]:
    trace = next(t for t in fig.data if t.name == name)
    return dict(zip(trace.x, trace.y, strict=True))


def test_speaker_activity_counts_only_messages() -> None:
    fig = charts.speaker_activity(_events())
    # Buyer: two done messages (the failed turn is not a message); Seller: one (the pass is not).
    assert _bar_values(fig, "messages") == {"Buyer": 2, "Seller": 1, "user": 2}
    assert _bar_values(fig, "words") == {"Buyer": 18, "Seller": 6, "user": 7}


def test_every_chart_builds_and_empty_frames_say_so() -> None:
    events = _events()
    rooms = pd.DataFrame(
        {"room_id": [1, 2, 3], "status": ["terminated", "terminated", "running"],
         "stop_reason": ["'DEAL' mentioned by Buyer", "max_turns reached (8)", None]}
    )  # fmt: skip
    for fig in (
        charts.speaker_activity(events),
        charts.message_length(events),
        charts.latency(events),
        charts.tokens_and_cost(events),
        charts.stop_reasons(rooms),
    ):
        assert isinstance(fig, go.Figure) and fig.data
    empty = events.iloc[0:0]
    for builder in (charts.speaker_activity, charts.message_length, charts.latency,
                    charts.tokens_and_cost):  # fmt: skip
        fig = builder(empty)
        assert not fig.data and fig.layout.annotations
    reasons = charts.stop_reasons(rooms)
    assert dict(zip(reasons.data[0].y, reasons.data[0].x, strict=True))["(running)"] == 1


def test_outcomes_by_condition_yes_rate_numeric_and_categorical() -> None:
    yes_no = pd.DataFrame(
        {"room_id": [1, 2, 3, 4], "condition": ["a", "a", "b", "b"],
         "answer": ["Yes", "No", "Yes", "Yes"]}
    )  # fmt: skip
    fig = condition_charts.outcomes_by_condition(yes_no, question="deal")
    assert dict(zip(fig.data[0].x, fig.data[0].y, strict=True)) == {"a": 0.5, "b": 1.0}
    numbers = yes_no.assign(answer=[3, 5, 7, 9])
    assert condition_charts.answer_kind(numbers["answer"]) == "numeric"
    assert len(condition_charts.outcomes_by_condition(numbers).data) == 3  # two boxes and the means
    words = yes_no.assign(answer=["deal", "walk", "deal", "deal"])
    assert condition_charts.answer_kind(words["answer"]) == "categorical"
    fig = condition_charts.outcomes_by_condition(words)
    assert {t.name for t in fig.data} == {"deal", "walk"}
    assert condition_charts.outcomes_by_condition(yes_no.iloc[0:0]).layout.annotations


def test_charts_leave_room_for_the_top_point_its_interval_and_the_bar_labels() -> None:
    """Issue 19: "100% of 5" over a full bar was clipped, and the top point of the means plot sat
    above the axis. The y range now holds every point and interval end with room to spare."""
    yes_no = pd.DataFrame(
        {"room_id": [1, 2, 3], "condition": ["a", "a", "a"], "answer": ["Yes", "Yes", "Yes"]}
    )
    fig = condition_charts.outcomes_by_condition(yes_no, question="deal")
    assert fig.data[0].text == ("100% of 3",)
    top = fig.layout.yaxis.range[1]
    assert top >= 1.25 and max(fig.layout.yaxis.tickvals) == 1  # label room, no 125% tick
    rooms = pd.DataFrame(
        {"room_id": [1, 2, 3, 4], "condition": ["a", "a", "b", "b"], "messages": [2, 4, 10, 30]}
    )
    fig = condition_charts.metric_by_condition(rooms, "messages")
    means = fig.data[-1]
    highest = max(m + p for m, p in zip(means.y, means.error_y.array, strict=True))
    lowest = min(m - p for m, p in zip(means.y, means.error_y.arrayminus, strict=True))
    low, high = fig.layout.yaxis.range
    assert high > max(30, highest) and low < min(2, lowest)
    assert condition_charts.padded_range([5, 5]) == [
        4.0,
        6.0,
    ]  # one value: a visible span around it
    assert condition_charts.padded_range([None]) is None


def test_clicked_values_reads_customdata() -> None:
    selection = {"selection": {"points": [{"customdata": ["Buyer", 1]}, {"customdata": ["Buyer", 2]},
                                          {"customdata": ["Seller", 1]}, {"x": 3}]}}  # fmt: skip
    assert charts.clicked_values(selection) == ["Buyer", "Seller"]
    assert charts.clicked_values(selection, 1) == [1, 2]
    assert charts.clicked_values(None) == []
    assert charts.clicked_values({"selection": {"points": []}}) == []


def test_a_chart_click_outlives_its_chart_until_the_chart_clears_it() -> None:
    """Results' tabs are lazy: a chart of a closed tab loses its selection, its filter stays."""
    keys = ("chart-reasons", "chart-outcomes")
    state: dict = {"chart-reasons": {"selection": {"points": [{"customdata": ["deal"]}]}}}
    assert charts.kept_clicks(state, keys, "kept") == {
        "chart-reasons": ["deal"],
        "chart-outcomes": [],
    }
    del state["chart-reasons"]  # the Charts tab closed: Streamlit dropped the chart's state
    assert charts.kept_clicks(state, keys, "kept")["chart-reasons"] == ["deal"]
    state["chart-reasons"] = {"selection": {"points": []}}  # drawn again, background clicked
    assert charts.kept_clicks(state, keys, "kept")["chart-reasons"] == []


@pytest.mark.parametrize(
    ("name", "ok"),
    [("Alice", True), ("brother-in-law", True), ("a.b_c", True), ("", False),
     ("two words", False), ("_hidden", False), ("<script>", False), ("x" * 65, False)],
)  # fmt: skip
def test_agent_names(name: str, ok: bool) -> None:
    assert (library.check_name(name) is None) is ok


def test_agent_names_unique_case_insensitively() -> None:
    assert "already exists" in (library.check_name("alice", ["Alice"]) or "")


def test_traits_rows_name_the_row_and_problem() -> None:
    traits, problem = library.traits_from_rows(
        [{"key": "role", "value": "buyer"}, {"key": "", "value": ""}, {"key": "budget", "value": 5}]
    )
    assert traits == {"role": "buyer", "budget": "5"} and problem is None
    _, problem = library.traits_from_rows(
        [{"key": "role", "value": "a"}, {"key": "role", "value": "b"}]
    )
    assert problem and "Row 2" in problem and "twice" in problem
    _, problem = library.traits_from_rows([{"key": "", "value": "orphan"}])
    assert problem and "needs a key" in problem
    _, problem = library.traits_from_rows([{"key": "bad key", "value": "x"}])
    assert problem and "'bad key'" in problem


def test_library_round_trips_json_and_edsl_agent_list() -> None:
    drafts = [library.AgentDraft("Buyer", {"role": "buyer"}, "Be terse."),
              library.AgentDraft("Seller", {"role": "seller"})]  # fmt: skip
    assert library.read_agents_file(library.export_json(drafts)) == drafts
    again = library.read_agents_file(library.export_agent_list(drafts))
    assert [(d.name, dict(d.traits), d.instruction) for d in again] == [
        ("Buyer", {"role": "buyer"}, "Be terse."),
        ("Seller", {"role": "seller"}, ""),
    ]


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ("not json", "not valid JSON"),
        ('{"format": "conversation-rooms/agents", "version": 9, "agents": []}', "version 9"),
        ('[{"name": "A", "api_key": "sk-123"}]', "unknown field"),
        ('[{"name": "two words"}]', "not a usable name"),
        ('[{"name": "A"}, {"name": "a"}]', "already exists"),
        ('[{"name": "A", "traits": {"x": NaN}}]', "NaN"),
        ('[{"name": "A", "traits": {"x": {"deep": 1}}}]', "must be text"),
        ('{"hello": 1}', "Not an agents file"),
    ],
)
def test_hostile_imports_are_rejected_with_the_reason(payload: str, fragment: str) -> None:
    with pytest.raises(library.AgentsFileRejected, match=fragment):
        library.read_agents_file(payload)


def test_import_size_cap() -> None:
    big = json.dumps([{"name": "A", "instruction": "x" * (library.MAX_IMPORT_BYTES + 1)}])
    with pytest.raises(library.AgentsFileRejected, match="1,000,000 bytes"):
        library.read_agents_file(big)


def test_unique_copy_name() -> None:
    assert library.unique_copy_name("Bob", ["Bob"]) == "Bob_copy"
    assert library.unique_copy_name("Bob", ["Bob", "bob_copy"]) == "Bob_copy2"


def test_experiment_design_crosses_factors_and_estimates_calls() -> None:
    template = TEMPLATES["mug_negotiation"]
    conditions = experiments.crossed_conditions(
        [("Buyer", "private_value", ["$10", "$6"]), ("Seller", "private_cost", ["$4", "$9", " "])]
    )
    assert [c.label for c in conditions] == [
        "Buyer.private_value=$10, Seller.private_cost=$4",
        "Buyer.private_value=$10, Seller.private_cost=$9",
        "Buyer.private_value=$6, Seller.private_cost=$4",
        "Buyer.private_value=$6, Seller.private_cost=$9",
    ]
    rooms = experiments.plan(conditions, 3)
    assert len(rooms) == 12 and len({r.request_id for r in rooms}) == 12
    data = {"agents": template.agent_dicts(), "planner": dict(template.planner),
            "termination": dict(template.termination or {})}  # fmt: skip
    # "DEAL" | max_turns 8: at most 8 calls per room.
    assert experiments.estimate_calls(data, rooms) == 96
    agents = experiments.room_agents(data, conditions[3])
    assert (
        agents[0]["traits"]["private_value"] == "$6" and agents[1]["traits"]["private_cost"] == "$9"
    )
    assert agents[0]["traits"]["role"] == "buyer of a coffee mug"


def test_experiment_design_limits() -> None:
    with pytest.raises(ValueError, match="Replicates"):
        experiments.plan([experiments.Condition("a", {})], 0)
    with pytest.raises(ValueError, match="unique"):
        experiments.plan([experiments.Condition("a", {}), experiments.Condition("a", {})], 1)
    with pytest.raises(ValueError, match="limit"):
        experiments.plan(
            [experiments.Condition(str(i), {}) for i in range(501)], 50
        )  # 25,050 rooms
    unbounded = {"agents": [{"name": "A"}], "planner": {"kind": "round_robin"}, "termination": None}
    assert experiments.turns_per_room(unbounded) is None
    seed001 = {"agents": [{"name": n} for n in "abc"],
               "planner": {"kind": "round_robin_room", "max_rounds": 3, "max_messages": 20}}  # fmt: skip
    assert experiments.turns_per_room(seed001) == 9


def test_templates_are_valid() -> None:
    from conversation.planning.registry import planner_from_dict
    from conversation.termination.conditions import termination_from_dict

    assert set(TEMPLATES) == {"car_buying", "mug_negotiation", "planner_coder_reviewer"}
    for template in TEMPLATES.values():
        planner_from_dict(template.planner)
        if template.termination:
            termination_from_dict(template.termination)
        for agent in template.agents:
            assert library.validate(agent) == {}
        assert template.opening


def test_experiment_variations_cross_and_label() -> None:
    template = experiments.template_from_room_template(TEMPLATES["planner_coder_reviewer"])
    base = [experiments.Condition(experiments.BASELINE, {})]
    crossed = experiments.with_planner_setting(base, template, "max_rounds", [1, 2])
    crossed = experiments.with_turn_limits(crossed, template, [4])
    crossed = experiments.with_prompts(crossed, ["Be brief, {{ speaker_name }}.", "Be kind."])
    crossed = experiments.with_models(crossed, [("offline", {"service": "offline"})])
    assert [c.label for c in crossed][:2] == [
        "max_rounds=1 | max_turns=4 | prompt 1 | model=offline",
        "max_rounds=1 | max_turns=4 | prompt 2 | model=offline",
    ]
    assert len(crossed) == 4
    first = crossed[0]
    assert first.planner["max_rounds"] == 1 and first.termination == {
        "kind": "max_turns",
        "max_turns": 4,
    }
    assert first.prompt_template == "Be brief, {{ speaker_name }}." and first.model == {
        "service": "offline"
    }
    rooms = experiments.plan(crossed, 2)
    # max_rounds=1 with 3 agents: 3 turns per room; max_rounds=2: 6, cut to 4 by max_turns.
    assert experiments.estimate_calls(template, rooms) == 4 * 3 + 4 * 4
    mug = experiments.template_from_room_template(TEMPLATES["mug_negotiation"])
    (limited,) = experiments.with_turn_limits(base, mug, [3])
    assert limited.termination["kind"] == "any"  # the DEAL condition is kept
    assert {p["kind"] for p in limited.termination["parts"]} == {"text_mention", "max_turns"}


def test_results_filter_rooms_by_text_reason_and_condition() -> None:
    from ui.results.tables import filter_rooms

    rooms = pd.DataFrame(
        {"room_id": [1, 2, 3], "name": ["Mug A", "Mug B", "Car"],
         "condition": ["value $10", None, "budget"], "status": ["terminated", "running", "settled"],
         "stop_reason": ["'DEAL' mentioned by Buyer", None, None]}
    )  # fmt: skip
    assert list(filter_rooms(rooms, text="mug")["room_id"]) == [1, 2]
    assert list(filter_rooms(rooms, text="$10")["room_id"]) == [1]
    assert list(filter_rooms(rooms, stop_reasons=["(running)"])["room_id"]) == [2]
    assert list(filter_rooms(rooms, conditions=["(none)"])["room_id"]) == [2]


@pytest.mark.parametrize(
    "module",
    [
        "results/charts",
        "results/condition_charts",
        "room/templates",
        "experiments",
        "results/tables",
        "room/rooms",
    ],
)
def test_ui_helpers_are_plain_python(module: str) -> None:
    """The helpers hold the logic and stay testable without a Streamlit session: only
    bootstrap, widgets, room.live and room.forms draw anything."""
    import ast
    from pathlib import Path

    source = Path(__file__).resolve().parents[2] / "ui" / f"{module}.py"
    names = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(("." * node.level) + node.module)
    assert not {n for n in names if n.split(".")[0] == "streamlit"}
    assert not {n for n in names if n.split(".")[-1] in {"bootstrap", "widgets", "live", "forms"}}


def test_escape_markdown_leaves_nothing_markdown_could_act_on() -> None:
    import re

    from ui.widgets import WORD_JOINER, escape_markdown

    text = "![x](http://h/i.png) [l](https://h/l) <img src=x> :material/home: www.a.b c@d.e $x$ _i_"
    escaped = escape_markdown(text)
    assert "://" not in escaped and "www." not in escaped and "c@" not in escaped  # autolinks
    assert ":" not in escaped.replace("&#58;", "")  # :material/...: and :color[...] shortcodes
    assert not re.search(r"(?<!\\)[!\[\]()<>$_*`]", escaped)  # every Markdown character escaped
    # What the browser shows once Markdown has read it: the text as typed (word joiners aside).
    shown = re.sub(r"\\(.)", r"\1", escaped.replace("&#58;", ":").replace(WORD_JOINER, ""))
    assert shown == text


def test_escape_markdown_adds_no_invisible_character_where_markdown_links_nothing() -> None:
    """Titles showed ``sqlite:\\u2060////...``: the WORD JOINER, copied with the text, broke a
    pasted path. Only what Markdown would turn into a link gets one."""
    from ui.widgets import WORD_JOINER, escape_markdown

    for text in ("sqlite:////tmp/rooms.db", "postgresql://db.example/rooms", "ratio 3:2, a/b"):
        assert WORD_JOINER not in escape_markdown(text), text
    for text in ("see http://a.b/c", "HTTPS://a.b", "www.a.b", "ann@lab.org"):
        assert WORD_JOINER in escape_markdown(text), text


def test_the_message_length_chart_draws_a_bounded_sample_of_a_long_room() -> None:
    import pandas as pd

    from ui.results import charts

    n = 10_000
    events = pd.DataFrame(
        {
            "room_id": [1] * n,
            "seq": range(1, n + 1),
            "kind": ["agent"] * n,
            "state": ["done"] * n,
            "speaker": ["A", "B"] * (n // 2),
            "words": [5] * n,
        }
    )
    figure = charts.message_length(events)
    drawn = sum(len(trace.x) for trace in figure.data)
    assert drawn <= charts.MAX_POINTS
    assert "n = 10,000 messages in 1 room; every 5th drawn" in figure.layout.title.text
