"""``python -m conversation.study validate FILE``, ``freeze FILE [--out BUNDLE]``, ``launch
FILE [--db URL]``, ``package CODE --out DIR`` and ``replicate DIR``.

``validate`` prints one line saying what the definition holds, or every bad field (exit status
1). ``freeze`` writes the frozen bundle (``FILE.frozen.json`` by default) and prints its hash.
``launch`` stores the study in the app's database (``ROOMS_DATABASE_URL``, else the data
folder's ``rooms.db``: the one ``streamlit run app.py`` and the monitor use) or in ``--db``, and
prints the database it used, the participant link and the researcher's monitor link; given a
frozen bundle, the study is preregistered. ``package`` and ``replicate`` are the replication
package's (``conversation.replication``; ``study.package``).
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
from conversation.study.package_cli import (
    PACKAGE_COMMANDS,
    add_package_commands,
    run_package_command,
)
from conversation.study.preregistration import Bundle, freeze, is_bundle_file, read_bundle


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
    frozen = commands.add_parser("freeze", help="freeze a study definition into a bundle")
    frozen.add_argument("file")
    frozen.add_argument("--out", default=None, help="the bundle's file (default FILE.frozen.json)")
    launch = commands.add_parser(
        "launch", help="launch a study (a definition, or a frozen bundle) and print its links"
    )
    launch.add_argument("file")
    launch.add_argument(
        "--db",
        default=None,
        help="database URL (default: the app's, ROOMS_DATABASE_URL or the data folder's file)",
    )
    launch.add_argument("--base-url", default="http://localhost:8501", help="the app's address")
    add_package_commands(commands)
    args = parser.parse_args(argv)
    if args.command == "validate":
        return _validate(args.file)
    try:
        if args.command == "freeze":
            return _freeze(args.file, args.out)
        if args.command in PACKAGE_COMMANDS:
            return run_package_command(args)
        if is_bundle_file(args.file):
            bundle = read_bundle(args.file)
            return _launch(bundle.definition, args.db, args.base_url, bundle=bundle)
        definition = read_definition(args.file)
        return _launch(definition, args.db, args.base_url)
    except ConversationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _freeze(path: str, out: str | None) -> int:
    """Write the frozen bundle of the definition at ``path``; print where and its hash."""
    import json
    from pathlib import Path

    bundle = freeze(read_definition(path))
    target = Path(out) if out else Path(path).with_suffix(".frozen.json")
    target.write_text(json.dumps(bundle.to_dict(), ensure_ascii=False, indent=1), "utf-8")
    print(summary(bundle.definition))
    print(f"frozen: {target}")
    print(f"master seed: {bundle.seed}")
    print(f"bundle hash: {bundle.hash}")
    return 0


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


def _launch(
    definition: StudyDefinition, url: str | None, base_url: str, *, bundle: Bundle | None = None
) -> int:
    import storage
    from conversation.study.researcher.launch import launch_study, study_links

    url = url or storage.database_url()
    with storage.Database(url) as db:
        study = launch_study(db, definition, bundle=bundle)
    links = study_links(study.code, base_url)
    print(summary(definition))
    if bundle is not None:
        print(f"preregistered: bundle {bundle.hash}")
    print(f"database: {storage.display_url(url)}")
    print(f"study code: {study.code}")
    print(f"participant link: {links.participant}")
    print(f"monitor link: {links.monitor}")
    return 0


__all__ = ["main", "summary"]
