"""No text a person or a model wrote reaches Streamlit's Markdown renderer unescaped.

Streamlit renders Markdown (images included: the browser fetches them) in titles, headers,
captions, alerts, ``st.markdown``, toasts, widget labels and help texts, radio options, tab and
expander labels, metric labels, progress texts and button labels (checked in Chromium by
``tests/browser/test_no_markup.py``). This test reads ``app.py``, ``pages/`` and ``ui/`` and checks
every such argument: it must be program text, i.e. built only from

- literals (an f-string's numeric fields with a format spec, such as ``{cost:.4f}``, included),
- calls of ``escape_markdown`` / ``plain`` (text made literal), ``len``, ``int``, ``float``,
- module constants (upper-case names) and the names and functions listed in ``PROGRAM_TEXT``
  and ``PROGRAM_CALLS`` below, each with the reason it never holds user text,

or the call carries a ``# markup-ok: <reason>`` comment. New code that passes, say, a room name
to ``st.caption`` fails here before it ships.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [
        ROOT / "app.py",
        ROOT / "streamlit_app.py",
        *(ROOT / "pages").glob("*.py"),
        *(ROOT / "ui").rglob("*.py"),
    ],
    key=str,
)

# Elements whose first argument (or ``body``) is Markdown.
TEXT_ELEMENTS = {
    "title", "header", "subheader", "caption", "info", "warning", "error", "success",
    "markdown", "toast", "write",
}  # fmt: skip
# Widgets and containers whose label (first argument or ``label=``) is Markdown.
LABELLED = {
    "button", "download_button", "form_submit_button", "checkbox", "toggle", "radio",
    "selectbox", "multiselect", "text_input", "text_area", "number_input", "file_uploader",
    "expander", "metric", "page_link", "slider", "select_slider", "color_picker", "date_input",
    "time_input", "popover", "link_button", "pills", "segmented_control", "feedback",
}  # fmt: skip
MARKDOWN_KEYWORDS = ("label", "body", "help")
# Receivers that are not Streamlit (a logger, the engine's experiments API).
NOT_STREAMLIT = {"log", "logging", "ex", "warnings", "repo", "rooms", "results", "frames"}
SAFE_CALLS = {"escape_markdown", "plain", "len", "int", "float", "round"}
# Functions of the app that return fixed words.
PROGRAM_CALLS = {
    "state_note": "rooms.engine.kinds.showing: ' · answering…', ' · failed', ...",
    "line_with": "Shown.line_with: a handler's fixed words, every text in it escaped",
}
# Names that only ever hold program text (numbers, ids, statuses, fixed sentences).
PROGRAM_TEXT = {
    "linked.problem": "ui.params.parse_id's fixed sentences (the raw value is never quoted)",
    "refused": "ui.widgets.keep_if_too_long's sentence (numbers only)",
    "label": "ui.room.live: the escaped speaker; elsewhere a label a helper passes through",
    "notice": "Results: 'Analysis #<id> stored.' (pages/results.py)",
    "current": "an experiment id (int)",
    "room_id": "a room id (int)",
    "experiment_id": "an experiment id (int)",
    "total": "a count",
    "hidden": "a count",
    "event.seq": "a sequence number",
    "event.activity": "an activity number",
    "row.activity": "an activity number",
    "look.line": "a Shown's fixed words (the handler's; names and bodies are its texts)",
    "icon": "ui.room.live: a Material icon shortcode a handler names (program text)",
    "linked.value": "an id (int)",
    "done": "a count",
    "key": "a widget key made by the program",
    "span": "'of #<seq>-#<seq>' (numbers)",
    "how": "'skipped' or 'abandoned'",
    "status": "a room or experiment status (a fixed set of words)",
    "now.finished": "a count",
    "now.planned": "a count",
    "now.created": "a count",
    "setting": "a planner setting name of the shipped planners (max_rounds, max_messages)",
    "choice": "a model picker choice that passes a literal label",
    "i": "a loop index",
}


def _safe(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(_safe(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return node.format_spec is not None or _safe(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _safe(node.left) and _safe(node.right)
    if isinstance(node, ast.IfExp):
        return _safe(node.body) and _safe(node.orelse)
    if isinstance(node, ast.Call):
        return _dotted(node.func).split(".")[-1] in SAFE_CALLS | set(PROGRAM_CALLS)
    if isinstance(node, ast.Name) and node.id.isupper():
        return True  # a module constant (FROM_TEMPLATE, NEW): program text by convention
    if isinstance(node, ast.Name | ast.Attribute):
        return _dotted(node) in PROGRAM_TEXT
    if isinstance(node, ast.List | ast.Tuple):
        return all(_safe(e) for e in node.elts)
    return False


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _root(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else "?"


def markup_arguments(path: Path) -> list[tuple[int, str, ast.AST]]:
    """(line, call, argument) for every argument Streamlit would render as Markdown."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        if _root(node.func) in NOT_STREAMLIT or name not in TEXT_ELEMENTS | LABELLED | {"tabs"}:
            continue
        arguments: list[ast.AST] = list(node.args[:1])
        arguments += [k.value for k in node.keywords if k.arg in MARKDOWN_KEYWORDS]
        if name == "progress":
            arguments = [k.value for k in node.keywords if k.arg == "text"]
        if name == "radio" and len(node.args) > 1:
            arguments.append(node.args[1])  # radio options are Markdown too
        for argument in arguments:
            found.append((node.lineno, name, argument))
    return found


def _allowed_by_comment(path: Path, line: int) -> bool:
    lines = path.read_text().splitlines()
    window = lines[max(0, line - 2) : line + 1]
    return any(re.search(r"# markup-ok: \S", text) for text in window)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_arguments_are_program_text_or_escaped(path: Path) -> None:
    unsafe = [
        f"{path.relative_to(ROOT)}:{line} st.{name}({ast.unparse(arg)[:80]})"
        for line, name, arg in markup_arguments(path)
        if not _safe(arg) and not _allowed_by_comment(path, line)
    ]
    assert not unsafe, "user text may reach Markdown here; wrap it in escape_markdown():\n" + (
        "\n".join(unsafe)
    )


def test_the_checker_catches_user_text() -> None:
    sample = ROOT / "tests" / "app" / "_markup_sample.py"
    sample.write_text(
        "import streamlit as st\n"
        "st.title(record.name)\n"
        "st.caption(f'Room {record.name}')\n"
        "c1.button('Open ' + name)\n"
        "st.tabs([room.name])\n"
        "st.caption(f'Room {escape_markdown(record.name)} #{room_id}')\n"
        "st.progress(0.5, text=f'{done} of {total}')\n"
    )
    try:
        flagged = [line for line, _, arg in markup_arguments(sample) if not _safe(arg)]
    finally:
        sample.unlink()
    assert flagged == [2, 3, 4, 5]


def test_the_hook_pattern_finds_only_reviewed_calls() -> None:
    """The project's grep hook lists markdown calls fed with non-literal text; each of its hits
    must pass the checker above (so the hook and this test agree)."""
    pattern = (
        r"st\.(title|header|subheader|caption|info|warning|error|success|markdown|toast)"
        r"\(\s*(f[\"']|[a-z_][a-z_0-9.]*[,)])"
    )
    out = subprocess.run(
        [
            "git",
            "grep",
            "-nE",
            pattern,
            "--",
            "pages/*.py",
            "ui/*.py",
            "app.py",
            "streamlit_app.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    hits = {(line.split(":")[0], int(line.split(":")[1])) for line in out.splitlines()}
    assert hits, "the hook pattern should find the app's formatted messages"
    checked = {
        (str(path.relative_to(ROOT)), line): _safe(arg) or _allowed_by_comment(path, line)
        for path in FILES
        for line, _, arg in markup_arguments(path)
    }
    assert all(checked.get(hit, False) for hit in hits), sorted(
        h for h in hits if not checked.get(h, False)
    )
