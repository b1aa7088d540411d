"""The study editor of the Experiments page: edit a study definition (TOML or JSON), validate it
with one clear error per field, launch it and get the participant and monitor links; or freeze
it first (a frozen bundle: its hash shown, offered for download, launched from; the monitor's
``ui.study.preregistration`` lists its amendments).

The definition is the same file ``python -m conversation.study validate FILE`` reads
(docs/studies.md); the editor starts from the shipped ``examples/study.toml``, or from a file the
researcher uploads, and offers the edited text for download (the study's file of record).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import streamlit as st

from ui.widgets import escape_markdown

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "study.toml"
TEXT_KEY = "study-definition"
BUNDLE_KEY = "_study-bundle"
MAX_DEFINITION_BYTES = 200_000


def _example() -> str:
    try:
        return EXAMPLE.read_text(encoding="utf-8")
    except OSError:
        return ""


def _fmt(text: str) -> str:
    return "json" if text.lstrip().startswith("{") else "toml"


def validate(text: str) -> tuple[Any | None, str | None]:
    """(the definition, None) or (None, every problem, one line per bad field)."""
    from conversation import study

    if len(text.encode("utf-8")) > MAX_DEFINITION_BYTES:
        return None, f"The definition is over {MAX_DEFINITION_BYTES:,} bytes."
    problems = study.definition_problems(text, fmt=_fmt(text))
    if problems:
        return None, "\n".join(problems)
    return study.load_definition(text, fmt=_fmt(text)), None


def summary(definition: Any) -> str:
    """One line: name, conditions, groups (program text built from the definition's fields)."""
    data = definition.to_dict()
    experiment = data.get("experiment") or {}
    conditions = experiment.get("conditions") or []
    return (
        f"Valid: {data.get('name', '')} (version {data.get('version', '?')}), "
        f"{len(conditions)} condition(s), {experiment.get('groups', '?')} group(s) each."
    )


def study_editor(db: Any, actor: Any) -> None:
    """The editor: upload or edit, validate, download, launch; freeze, or open a frozen bundle
    and launch from it."""
    upload = st.file_uploader("Open a definition file", type=["toml", "json"], key="study-upload")
    if upload is not None and st.session_state.get("_study-upload-seen") != upload.file_id:
        st.session_state["_study-upload-seen"] = upload.file_id
        st.session_state[TEXT_KEY] = upload.getvalue().decode("utf-8", errors="replace")
    st.session_state.setdefault(TEXT_KEY, _example())
    text = st.text_area("Study definition (TOML or JSON)", key=TEXT_KEY, height=400)
    c1, c2, c3, c4 = st.columns(4)
    checked = c1.button("Validate", key="study-validate", width="stretch")
    frozen = c4.button(
        "Freeze (preregister)",
        key="study-freeze",
        width="stretch",
        help="A frozen bundle: the definition, every model's identity, the rendered prompts, "
        "the seeds and the analysis plan, with a content hash. A study launched from it "
        "changes its frozen fields only by an amendment with a reason.",
    )
    c2.download_button(
        "Download the file",
        text,
        file_name=f"study.{_fmt(text)}",
        key="study-download",
        on_click="ignore",
        width="stretch",
    )
    launch = c3.button("Launch the study", type="primary", key="study-launch", width="stretch")
    if (checked or launch or frozen) and is_bundle_text(text):
        _opened_bundle(db, text, actor, launch=launch)
    elif checked or launch or frozen:
        definition, problem = validate(text)
        if problem is not None:
            st.error("The definition is not valid:")
            st.code(problem, language=None, wrap_lines=True)
            return
        st.success(escape_markdown(summary(definition)))
        if launch:
            _launch(db, definition, actor)
        if frozen:
            _freeze(definition, text)
    bundle_controls(db, text, actor)


def is_bundle_text(text: str) -> bool:
    """Whether the editor holds a frozen bundle (a file ``freeze`` wrote) rather than a
    definition."""
    from conversation.study.preregistration.bundle import BUNDLE_FORMAT

    return text.lstrip().startswith("{") and f'"{BUNDLE_FORMAT}"' in text[:4096]


def _opened_bundle(db: Any, text: str, actor: Any, *, launch: bool) -> None:
    """A bundle opened in the editor: its hash checked against its content (an edited bundle
    is refused), kept for *Launch the frozen study*; *Launch the study* launches it frozen."""
    from conversation import study

    if len(text.encode("utf-8")) > 4 * MAX_DEFINITION_BYTES:
        st.error(f"The bundle is over {4 * MAX_DEFINITION_BYTES:,} bytes.")
        return
    try:
        bundle = study.load_bundle(json.loads(text))
    except (ValueError, PermissionError) as exc:
        st.error("Not a usable frozen bundle: " + escape_markdown(exc))
        return
    st.session_state[BUNDLE_KEY] = (text, bundle)
    st.success(escape_markdown("A frozen bundle. " + summary(bundle.definition)))
    if launch:
        _launch_frozen(db, bundle, actor)


def _freeze(definition: Any, text: str) -> None:
    try:
        freeze_definition(definition, text)
    except (ValueError, PermissionError) as exc:
        st.error("Not frozen: " + escape_markdown(exc))


def freeze_definition(definition: Any, text: str) -> Any:
    """Freeze ``definition`` (typed as ``text``): the bundle, kept for this text so that
    launching it needs no second freeze (a new seed would make another hash)."""
    from conversation import study

    bundle = study.freeze(definition)
    st.session_state[BUNDLE_KEY] = (text, bundle)
    return bundle


def frozen_for(text: str) -> Any | None:
    """The bundle frozen from exactly ``text`` in this session, or None (edited since)."""
    kept = st.session_state.get(BUNDLE_KEY)
    return kept[1] if kept and kept[0] == text else None


def bundle_controls(db: Any, text: str, actor: Any) -> None:
    """Under the editor, once the text was frozen: its hash, the download, Launch frozen."""
    bundle = frozen_for(text)
    if bundle is None:
        return
    st.text(f"Frozen bundle, hash {bundle.hash}")
    c1, c2 = st.columns(2)
    c1.download_button(
        "Download the frozen bundle (JSON)",
        json.dumps(bundle.to_dict(), indent=1, ensure_ascii=False),
        file_name=f"study-bundle-{bundle.hash[:12]}.json",
        mime="application/json",
        key="study-bundle-download",
        on_click="ignore",
        width="stretch",
    )
    if c2.button("Launch the frozen study", key="study-launch-frozen", width="stretch"):
        _launch_frozen(db, bundle, actor)


def _launch_frozen(db: Any, bundle: Any, actor: Any) -> None:
    from conversation import study

    try:
        launched = study.launch_frozen(db, bundle, actor=actor)
    except (ValueError, PermissionError) as exc:
        st.error("Not launched: " + escape_markdown(exc))
        return
    launched_links(launched)


def _launch(db: Any, definition: Any, actor: Any) -> None:
    from conversation import study

    try:
        launched = study.launch_study(db, definition, actor=actor)
    except (ValueError, PermissionError) as exc:
        st.error("Not launched: " + escape_markdown(exc))
        return
    launched_links(launched)


def launched_links(launched: Any) -> None:
    """What a launch says: the participant link to send, the monitor's link."""
    from conversation import study

    links = study.study_links(launched.code, base_url=base_url())
    st.success("Launched. Send the participant link to your participants.")
    st.text("Participant link: " + links.participant)
    st.text("Monitor: " + links.monitor)
    st.page_link(
        "pages/study_monitor.py", label="Open the monitor", query_params={"study": launched.code}
    )


def base_url() -> str:
    """The address this app is reached at (scheme and host of the browser's URL)."""
    from urllib.parse import urlsplit

    url = str(getattr(st.context, "url", "") or "")
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return "http://localhost:8501"


__all__ = ["EXAMPLE", "base_url", "launched_links", "study_editor", "summary", "validate"]
