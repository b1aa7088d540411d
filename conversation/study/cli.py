"""``python -m conversation.study validate FILE`` and ``launch FILE [--db URL]``.

``validate`` prints one line saying what the definition holds, or every bad field (exit status
1). ``launch`` stores the study in the app's database (``ROOMS_DATABASE_URL``, else the data
folder's ``rooms.db``: the one ``streamlit run app.py`` and the monitor use) or in ``--db``, and
prints the database it used, the participant link and the researcher's monitor link.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conversation.exceptions import ConversationError
from conversation.study.definition.document import (
    StudyDefinition,
    definition_problems,
    load_definition,
    read_definition,
)


def summary(definition: StudyDefinition) -> str:
    """One line: the name, conditions, seats and groups."""
    model = definition.model
    seats = sorted({len(c.seats) for c in model.experiment.conditions})
    return (
        f"ok: {model.name!r}: {len(model.experiment.conditions)} condition(s) x "
        f"{model.experiment.groups} group(s), {'/'.join(map(str, seats))} person(s) per group, "
        f"{len(model.pre_survey)} pre-survey and {len(model.post_survey)} post-survey question(s)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conversation.study")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("validate", help="check a study definition (TOML or JSON)")
    check.add_argument("file")
    launch = commands.add_parser("launch", help="launch a study and print its links")
    launch.add_argument("file")
    launch.add_argument(
        "--db",
        default=None,
        help="database URL (default: the app's, ROOMS_DATABASE_URL or the data folder's file)",
    )
    launch.add_argument("--base-url", default="http://localhost:8501", help="the app's address")
    args = parser.parse_args(argv)
    if args.command == "validate":
        return _validate(args.file)
    try:
        definition = read_definition(args.file)
        return _launch(definition, args.db, args.base_url)
    except ConversationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _validate(path: str) -> int:
    """``ok: ...`` (0), or one ``error: ...`` line per bad field (1)."""
    from pathlib import Path

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot read the study definition {path!r}: {exc.strerror}", file=sys.stderr)
        return 1
    fmt = "json" if Path(path).suffix.lower() == ".json" else "toml"
    problems = definition_problems(text, fmt=fmt)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(summary(load_definition(text, fmt=fmt)))
    return 0


def _launch(definition: StudyDefinition, url: str | None, base_url: str) -> int:
    import storage
    from conversation.study.researcher.launch import launch_study, study_links

    url = url or storage.database_url()
    with storage.Database(url) as db:
        study = launch_study(db, definition)
    links = study_links(study.code, base_url)
    print(summary(definition))
    print(f"database: {storage.display_url(url)}")
    print(f"study code: {study.code}")
    print(f"participant link: {links.participant}")
    print(f"monitor link: {links.monitor}")
    return 0


__all__ = ["main", "summary"]
