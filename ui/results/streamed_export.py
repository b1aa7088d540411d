"""An export too big to build on a click: written to a temporary file piece by piece under a
progress bar (``st.progress``), then offered for download from that file.

The writer is one of the engine's streamed exports (``browse.write_events``,
``analysis.stream_edsl_results``): the page's process holds one piece at a time while writing,
however many rooms. The download itself is Streamlit's: when the button is clicked (never on a
rerun of the page) it reads the finished file into its media store, the one copy of the file the
server holds in memory while it is sent (a 1,000,000-event export: 180 MB of CSV, 640 MB of JSON
lines). A new export of the same kind replaces the file; the files are temporary files of the
server's machine (``tempfile``), one per kind and session.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import streamlit as st

#: ``write(out, progress)``: writes the export to the text file ``out``, calling
#: ``progress(done, total)`` as it goes.
Writer = Callable[[TextIO, Callable[[int, int], None]], Any]


def file_export(
    label: str, *, key: str, write: Writer, file_name: str, mime: str, what: str = "rooms"
) -> None:
    """A "Prepare" button that runs ``write`` into a temporary file under a progress bar, then
    a download button for that file (kept for the session under ``key``)."""
    path_key = f"{key}-file"
    if st.button(f"Prepare {label}", key=f"{key}-prepare"):
        bar = st.progress(0.0, text=f"Writing {label}…")

        def show(done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=f"{label}: {done:,} of {total:,} {what}")

        _forget(st.session_state.pop(path_key, None))
        handle, path = tempfile.mkstemp(prefix="rooms-export-", suffix=f"-{file_name}")
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            write(out, show)
        bar.progress(1.0, text=f"{label}: written ({os.path.getsize(path):,} bytes).")
        st.session_state[path_key] = path
    written = st.session_state.get(path_key)
    if written and os.path.exists(written):
        st.download_button(
            f"Download {label}",
            # Read when clicked, not on every run of the page (a 1,000,000-event CSV is 180 MB).
            lambda: Path(written).read_bytes(),
            file_name=file_name,
            mime=mime,
            key=f"{key}-download",
            on_click="ignore",
        )


def experiment_exports(db: Any, room_ids: list[int], stem: str) -> None:
    """Every event of ``room_ids`` as CSV and as JSON lines, and their agent messages as EDSL
    ``Results``: each prepared into a file under a progress bar, then downloadable."""
    from conversation import analysis, browse

    def events(fmt: Any) -> Writer:
        return lambda out, show: browse.write_events(db, room_ids, out, fmt, progress=show)

    def edsl(out: TextIO, show: Callable[[int, int], None]) -> None:
        out.writelines(analysis.stream_edsl_results(db, room_ids, progress=show))

    kinds = (  # label, key, writer, file name, MIME type
        ("events (CSV)", "xp-events-csv", events("csv"), "events.csv", "text/csv"),
        ("events (JSON lines)", "xp-events-jsonl", events("jsonl"), "events.jsonl",
         "application/x-ndjson"),
        ("EDSL Results (JSON)", "xp-edsl", edsl, "results.json", "application/json"),
    )  # fmt: skip
    for column, (label, key, write, name, mime) in zip(st.columns(3), kinds, strict=True):
        with column:
            file_export(label, key=key, write=write, file_name=f"{stem}-{name}", mime=mime)


def _forget(path: str | None) -> None:
    if path and os.path.exists(path):
        os.unlink(path)


__all__ = ["Writer", "experiment_exports", "file_export"]
