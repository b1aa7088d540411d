"""The study picker the monitor and the Results page share: every study with its counts, newest
first (or a code typed in while there is none)."""

from __future__ import annotations

from typing import Any

import streamlit as st


def _study():  # type: ignore[no-untyped-def]
    from conversation import study

    return study


def pick_study(db: Any, *, key: str = "monitor", wanted: str = "") -> tuple[str, str]:
    """The study to show: picked from every study (each with its counts, newest first) or, with
    no study stored yet, a code typed in; and what to say while there is none. ``wanted`` (a
    link's ``?study=CODE``) is picked already. ``key``: the widgets' prefix (the monitor's, the
    Results page's)."""
    studies = _study().list_studies(db)
    if not studies:
        typed = st.text_input("Study code", value=wanted, key=f"{key}-code")
        return typed, "Enter a study's code (it is in the participant link: ?study=CODE)."
    lines = {s.code: s.line() for s in studies}
    codes = list(lines) if wanted in lines or not wanted else [wanted, *lines]
    picked = st.selectbox(
        "Study",
        codes,
        index=codes.index(wanted) if wanted else None,
        format_func=lambda code: str(lines.get(code, code)),  # options are drawn as plain text
        placeholder="Pick a study",
        key=f"{key}-pick",
    )
    return str(picked or ""), "Pick a study above to see its participants and groups."


__all__ = ["pick_study"]
