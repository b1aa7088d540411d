"""The replication package from the monitor: *Write the replication package* runs
``conversation.study.package.package_study`` (the same as ``python -m conversation.study package
CODE --out DIR``: docs/studies.md) into a temporary folder and offers its zip for download.
Scrubbed by default; leaving personal data in is an explicit box, and the package's README says
so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import streamlit as st

from ui.widgets import escape_markdown

#: A package kept for download in the session: (study code, zip name, bytes, summary lines).
PACKAGE_KEY = "_study-package"


def build_package(db: Any, code: str, *, scrub: bool) -> tuple[str, bytes, list[str]]:
    """Write the study's package in a temporary folder: the zip's name, bytes and what to say
    about it (rooms, calls, size, time). The folder is removed after."""
    from conversation.study.package import package_study

    with tempfile.TemporaryDirectory(prefix="study-package-") as scratch:
        out = Path(scratch) / f"study-{code}-package"
        written = package_study(db, code, out, scrub=scrub)
        summary = [
            f"{written.rooms} room(s), {written.calls} model call(s) cached, "
            f"{written.zip_bytes:,} bytes zipped, written in {written.seconds:.1f} s",
            f"Differences from the stored rooms when they were run again: "
            f"{written.source_differences}",
        ]
        return written.zip.name, written.zip.read_bytes(), summary


def package_controls(db: Any, code: str) -> None:
    """The box, the button, then the download of the package just written."""
    unscrubbed = st.checkbox(
        "Leave personal data unscrubbed (recorded in the package's README)",
        key=f"package-no-scrub-{code}",
    )
    if st.button("Write the replication package", key=f"package-write-{code}"):
        try:
            with st.spinner("Writing the package (each room is run again from its cache)..."):
                name, data, lines = build_package(db, code, scrub=not unscrubbed)
        except (ValueError, PermissionError, OSError) as exc:
            st.error("No package: " + escape_markdown(exc))
            return
        st.session_state[PACKAGE_KEY] = (code, name, data, lines)
    kept = st.session_state.get(PACKAGE_KEY)
    if not kept or kept[0] != code:
        return
    _, name, data, lines = kept
    for line in lines:
        st.text(line)
    st.download_button(
        "Download the package (zip)",
        data,
        file_name=name,
        mime="application/zip",
        key=f"package-download-{code}",
        on_click="ignore",
    )


__all__ = ["PACKAGE_KEY", "build_package", "package_controls"]
