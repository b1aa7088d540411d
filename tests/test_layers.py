"""The layers of docs/architecture.md, enforced by folder: imports flow
``app/pages -> ui -> conversation -> storage``; inside ``conversation`` each concept folder may use
only the folders below it; the pure folders import no edsl, database or UI code and read no clock;
only ``conversation/models`` (and the analysis built on it) reach EDSL's model machinery; only
``storage`` speaks SQL; no module imports another that imports it back (no cycles); nothing is
rendered as HTML. Pages and ui helpers reach storage only through ``conversation`` (one database
door aside), and no module a worker can load imports pandas, plotly or streamlit.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONVERSATION = ROOT / "conversation"

#: The concept folders (and shared top-level modules) of ``conversation`` and what each may import
#: from the others. A folder always may import itself; ``conversation/__init__.py`` and thin
#: re-export modules at the top are the public face and may import anything.
ALLOWED: dict[str, set[str]] = {
    "exceptions": set(),
    # The one place storage errors become the project's (conversation/boundary.py).
    "boundary": {"exceptions"},
    "vocabulary": set(),
    "access": {"exceptions"},
    "sync": {"exceptions"},
    "text": {"exceptions"},
    "planning": {"exceptions", "text"},
    "termination": {"exceptions", "planning"},
    "context": {"exceptions", "planning", "text"},
    "models": {"exceptions", "boundary", "text"},
    "dialogue": {"exceptions", "text", "planning", "termination", "models", "sync"},
    "analysis": {"exceptions", "boundary", "vocabulary", "text", "models", "access", "rooms"},
    "library": {"exceptions", "boundary", "access", "text", "models"},
    # Personal data out of exported text (issue 34): Presidio, nothing of the project's.
    "privacy": {"exceptions"},
    "rooms": {
        "exceptions",
        "boundary",
        "vocabulary",
        "sync",
        "text",
        "planning",
        "termination",
        "context",
        "models",
        "dialogue",
        "access",
    },
    "experiments": {
        "exceptions",
        "boundary",
        "vocabulary",
        "text",
        "rooms",
        "planning",
        "termination",
        "access",
        # its CLI's package and replicate (issue 34)
        "replication",
    },
    # The worker also asks the analyses' planned answers (worker/analyses.py, issue 24) and
    # runs the studies' clock (worker/studies.py, issue 31).
    "worker": {
        "exceptions",
        "boundary",
        "vocabulary",
        "rooms",
        "experiments",
        "models",
        "analysis",
        "study",
    },
    # Replication packages (issue 34): rooms re-run or replayed offline from a package's
    # cache, an analysis plan computed again, the differences listed; studies and experiments
    # package themselves through it (it knows neither package: an experiment's rooms are read
    # from storage).
    "replication": {
        "exceptions",
        "boundary",
        "vocabulary",
        "sync",  # rooms run again synchronously, on the engine's loop (as Room.run does)
        "text",
        "rooms",
        "models",
        "analysis",
        "access",
        "privacy",
    },
    # Studies with real participants (issue 21): experiments whose rooms have human seats.
    "study": {
        "exceptions",
        "boundary",
        "vocabulary",
        "text",
        "rooms",
        "experiments",
        "access",
        "models",
        "replication",
        "privacy",
    },
    # The pages' read side: nothing below may import it (the worker never loads it).
    "browse": {"exceptions", "vocabulary"},
}
PUBLIC_FACE = {"__init__", "next_speaker_utilities"}
#: Folders of plain functions and frozen dataclasses over events: no edsl, no database, no UI,
#: no clock, no global random.
PURE = ("exceptions", "vocabulary", "text", "planning", "termination", "context", "access")
HEAVY = {"edsl", "sqlmodel", "sqlalchemy", "storage", "streamlit", "pandas", "ui", "plotly"}
MODEL_MACHINERY = ("edsl.language_models", "edsl.inference_services", "edsl.caching")
PROJECT = ("vocabulary", "settings", "conversation", "storage", "ui", "pages")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(path: Path, package: str | None = None) -> set[str]:
    """Absolute module names a file imports anywhere (function-level imports included: a lazy
    import hides a cycle, it does not remove it), except under ``if TYPE_CHECKING``. For
    ``from pkg import name`` where ``pkg.name`` is a module of the project, the module is named."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if package is None:
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            submodules = [
                f"{module}.{alias.name}"
                for alias in node.names
                if _module_path(f"{module}.{alias.name}") is not None
            ]
            names.update(submodules or [module])
            if len(submodules) < len(node.names):
                names.add(module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def _module_path(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def top(name: str) -> str:
    return name.split(".")[0]


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def concept(path_or_name: Path | str) -> str:
    """The concept folder (or top-level module) of ``conversation`` a file or module belongs to."""
    name = module_name(path_or_name) if isinstance(path_or_name, Path) else path_or_name
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_concept_folder_has_rules() -> None:
    found = {concept(p) for p in python_files("conversation")} - PUBLIC_FACE
    assert found == set(ALLOWED), "add the new folder to ALLOWED with what it may import"


@pytest.mark.parametrize("path", python_files("conversation"), ids=lambda p: module_name(p))
def test_concept_folders_import_only_the_folders_below_them(path: Path) -> None:
    own = concept(path)
    if own in PUBLIC_FACE:
        return
    used = {concept(n) for n in imported(path) if top(n) == "conversation" and n != "conversation"}
    assert used - {own} <= ALLOWED[own], f"{module_name(path)} imports {sorted(used - {own})}"
    assert "conversation" not in imported(path), "import the module, not the package's face"


@pytest.mark.parametrize(
    "path",
    [
        p
        for f in PURE
        for p in [*python_files(f"conversation/{f}"), CONVERSATION / f"{f}.py"]
        if p.is_file()
    ],
    ids=lambda p: module_name(p),
)
def test_pure_folders_import_nothing_heavy(path: Path) -> None:
    names = imported(path)
    assert not {n for n in names if top(n) in HEAVY}
    # no clock and no global random in the core: randomness comes from seeded Random objects
    source = path.read_text(encoding="utf-8")
    assert "random.choice(" not in source and "random.random(" not in source
    assert "time.time(" not in source and "datetime.now(" not in source


def _import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for folder in PROJECT:
        for path in python_files(folder):
            graph[module_name(path)] = {
                n for n in imported(path) if top(n) in PROJECT and _module_path(n) is not None
            }
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), and self-imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def connect(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycles() -> None:
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_can_fail() -> None:
    """A negative control: two modules importing each other (lazily or not) are one cycle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "p": {"p.x"}, "p.x": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"p": {"p.x"}, "p.x": {"p"}}) == [["p", "p.x"]]


def test_nothing_below_the_ui_imports_streamlit() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("conversation", "storage", "examples", "benchmarks")
        for path in python_files(folder)
        if any(top(n) == "streamlit" for n in imported(path))
    ]
    assert offenders == []


def test_only_the_models_layer_reaches_edsl_model_machinery() -> None:
    offenders = []
    for path in python_files("conversation"):
        if concept(path) in ("models", "analysis"):
            continue
        if any(n.startswith(MODEL_MACHINERY) for n in imported(path)):
            offenders.append(module_name(path))
    assert offenders == []


def test_only_storage_speaks_sql() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("conversation", "pages", "ui")
        for path in python_files(folder)
        if any(top(n) in {"sqlmodel", "sqlalchemy", "sqlite3", "alembic"} for n in imported(path))
    ]
    assert offenders == []


def test_the_vocabulary_imports_nothing_of_the_project_or_beyond_the_standard_library() -> None:
    """The words sit below storage and the engine alike: no project package, no third party."""
    offenders = {
        module_name(path): sorted(n for n in imported(path) if top(n) != "vocabulary")
        for path in python_files("vocabulary")
    }
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    assert {m: [n for n in names if top(n) not in stdlib] for m, names in offenders.items()} == {
        m: [] for m in offenders
    }


#: What the settings package may import besides the standard library: pydantic and its parts.
SETTINGS_LIBRARIES = {"pydantic", "pydantic_core", "pydantic_settings"}


def test_the_settings_import_nothing_of_the_project_but_pydantic_and_the_standard_library() -> None:
    """``settings/`` is a bottom layer beside the vocabulary: everything may read it, it reads
    nothing of the project (only pydantic, pydantic-settings and the standard library)."""
    allowed = set(sys.stdlib_module_names) | {"__future__", "settings"} | SETTINGS_LIBRARIES
    offenders = {
        module_name(path): sorted(n for n in imported(path) if top(n) not in allowed)
        for path in python_files("settings")
    }
    assert offenders and {k: v for k, v in offenders.items() if v} == {}


#: Reading a setting from the environment (what ``shape-figures`` counts as SETTINGS_READERS):
#: ``os.environ.get(``, ``os.getenv(``, ``os.environ[...]`` not assigned to.
ENV_READ = re.compile(r"(os\.environ\.get\(|os\.getenv\(|os\.environ\[[^\]]+\](?!\s*=[^=]))")


def test_only_the_settings_package_reads_the_environment() -> None:
    """Every ``ROOMS_*`` setting is declared in ``settings.Settings`` and read through it: no
    other module of the app reads ``os.environ`` for a setting (provider keys are read by EDSL,
    and by ``conversation.models`` through a mapping it is handed)."""
    files = [*(p for f in PROJECT for p in python_files(f)), ROOT / "app.py"]
    files.append(ROOT / "streamlit_app.py")
    offenders = [
        str(path.relative_to(ROOT))
        for path in files
        if path.is_file()
        and "settings" not in path.relative_to(ROOT).parts[:1]
        and ENV_READ.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    assert ENV_READ.search('x = os.environ.get("ROOMS_X")')  # the pattern can fail
    assert not ENV_READ.search('os.environ["ROOMS_X"] = "1"')  # setting is not reading


def test_storage_imports_nothing_above_it() -> None:
    offenders = [
        module_name(path)
        for path in python_files("storage")
        if any(top(n) in {"conversation", "ui", "pages", "streamlit"} for n in imported(path))
    ]
    assert offenders == []


def test_conversation_never_imports_the_ui() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in python_files("conversation")
        if any(top(n) in {"ui", "pages", "app"} for n in imported(path))
    ]
    assert offenders == []


def test_the_worker_process_loads_no_ui_or_dataframe_library() -> None:
    """``python -m conversation.worker`` on a worker machine: no pandas, plotly or streamlit."""
    probe = (
        "import sys, conversation.worker, conversation.worker.cli;"
        "print(sorted(m for m in ('pandas', 'plotly', 'streamlit') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


#: A face's name that is also one of its package's modules (the function wins the attribute):
#: ``experiments.design`` the function is what the README and every caller use.
FACE_SHADOWS_ALLOWED = {"conversation.experiments": {"design"}}


def _faces() -> list[Path]:
    return [*sorted(CONVERSATION.rglob("__init__.py")), *sorted((ROOT / "ui").rglob("__init__.py"))]


@pytest.mark.parametrize("path", _faces(), ids=lambda p: module_name(p))
def test_every_package_face_is_curated(path: Path) -> None:
    """A short face: imports from its own modules (no star imports) and an ``__all__`` that
    names only what it defines or imports, shadowing none of its modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert not [
        n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.names[0].name == "*"
    ], "import the names, not *"
    exported = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    ]
    assert len(exported) == 1 and isinstance(exported[0], ast.List), "one literal __all__"
    names = [ast.literal_eval(e) for e in exported[0].elts]
    assert len(names) == len(set(names))
    modules = {p.stem for p in path.parent.glob("*.py")} | {
        p.parent.name for p in path.parent.glob("*/__init__.py")
    }
    bound = {
        alias.asname or alias.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom | ast.Import)
        for alias in n.names
    }
    package = module_name(path)
    assert set(names) <= bound | modules, "export only what the face imports (or its modules)"
    shadowed = {n for n in names if n in modules and n in bound}
    assert shadowed <= FACE_SHADOWS_ALLOWED.get(package, set()), f"{shadowed} hide modules"


#: The one UI module that reaches storage: it opens the process's ``Database`` from the configured
#: URL (``storage.database``). Every other page and helper reads and writes through ``conversation``.
UI_STORAGE_DOOR = "ui.bootstrap"
UI_STORAGE_DOOR_USES = {"storage", "storage.database"}


def _ui_files() -> list[Path]:
    return [*python_files("ui"), *python_files("pages"), ROOT / "app.py", ROOT / "streamlit_app.py"]


def test_the_ui_reads_and_writes_through_conversation_not_storage() -> None:
    """Pages and ui helpers ask ``conversation``'s services (``conversation.browse`` to read,
    the concept that owns a write to write); only the database door imports storage."""
    offenders = {
        module_name(path): sorted(n for n in imported(path) if top(n) == "storage")
        for path in _ui_files()
        if module_name(path) != UI_STORAGE_DOOR
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    door = {n for n in imported(_module_path(UI_STORAGE_DOOR)) if top(n) == "storage"}  # type: ignore[arg-type]
    assert door <= UI_STORAGE_DOOR_USES, f"{UI_STORAGE_DOOR} opens the database, nothing more"


WORKER_ENTRY = ("conversation.worker", "conversation.worker.cli", "conversation.worker.__main__")
DATAFRAME_LIBRARIES = {"pandas", "plotly", "streamlit"}


def _reachable(starts: tuple[str, ...]) -> set[str]:
    """Every project module that importing ``starts`` can load: their imports (lazy ones
    included: a lazy import runs as soon as its code path does) and every parent package."""
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        name = todo.pop()
        path = _module_path(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += [n for n in imported(path) if top(n) in PROJECT]
    return seen


def test_no_module_the_worker_can_load_imports_a_dataframe_library() -> None:
    """Whatever a worker does (rooms, experiments caught up and marked done, budgets), no
    module it can reach imports pandas, plotly or streamlit, even lazily; the frames of
    ``storage.research`` (pandas) stay out of its reach too."""
    reachable = _reachable(WORKER_ENTRY)
    assert {"conversation.experiments.runs", "conversation.rooms.engine"} <= reachable
    assert not {"storage.research.frames", "storage.research.analysis_frames"} & reachable
    offenders = {
        name: sorted(n for n in imported(_module_path(name)) if top(n) in DATAFRAME_LIBRARIES)  # type: ignore[arg-type]
        for name in reachable
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_worker_process_loads_no_dataframe_library_while_an_experiment_runs(
    tmp_path: Path,
) -> None:
    """``python -m conversation.worker`` run through a small experiment (its rooms driven to the
    end, the experiment caught up and marked done): the process never imported pandas
    (``-X importtime`` lists every module the process imported, lazily or not)."""
    from conversation import experiments as ex
    from storage import Database, get_experiment

    url = f"sqlite:///{tmp_path / 'rooms.db'}"
    template = {
        "agents": [{"name": "Buyer", "traits": {}}, {"name": "Seller", "traits": {}}],
        "planner": {"kind": "round_robin", "transitions": None},
        "termination": {"kind": "max_turns", "max_turns": 2},
        "model": {"service": "offline", "model": "offline", "parameters": {"seed": 1}},
        "opening": "Negotiate the price of a mug.",
    }
    db = Database(url)
    experiment_id = ex.create(db, "mugs", ex.design(template, [ex.Condition("only", {})], 2))
    db.dispose()
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "conversation.worker", "--db", url,
         "--until-idle"],  # fmt: skip
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    loaded = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "|" in line}
    assert "conversation.experiments.runs" in loaded and "conversation.rooms.engine" in loaded
    db = Database(url)
    progress = ex.progress(db, experiment_id)
    assert progress.finished == progress.planned == 2  # its rooms ran to their end there
    assert get_experiment(db, experiment_id).status == "done"  # marked done by the worker
    assert not {m for m in loaded if top(m) in DATAFRAME_LIBRARIES}


def test_no_html_rendering_anywhere() -> None:
    offenders = []
    for path in sorted(ROOT.glob("**/*.py")):
        if "tests" in path.parts or ".git" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        if "unsafe_allow_html" in text or "unsafe_allow_javascript" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_layer_check_itself_can_fail(tmp_path: Path) -> None:
    """A negative control: a file importing streamlit, and a lazy import, are both seen."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import streamlit as st\nfrom .models import ask\ndef f():\n    from storage import x\n",
        encoding="utf-8",
    )
    names = imported(probe, package="conversation")
    assert {"streamlit", "conversation.models", "storage"} <= names


#: The packages whose every module docs/architecture.md names (``settings`` once it exists).
MAPPED = ("vocabulary", "settings", "conversation", "storage", "ui")
ARCHITECTURE = ROOT / "docs" / "architecture.md"
_TREE_LINE = re.compile(r"^( *)(\S+)(.*)$")
_PY_FILE = re.compile(r"(?<![\w/.*])([A-Za-z_]\w*)\.py\b")


def named_in_tree(markdown: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The packages and modules a map's code blocks name: a line whose first word ends with
    ``/`` opens a package (``rooms/``, or a path from the root ``conversation/rooms/engine/``)
    holding the lines indented under it; every ``name.py`` on those lines is a module of the
    innermost package open there. Returns (packages, (package, module) pairs), as paths."""
    packages: set[str] = set()
    modules: set[tuple[str, str]] = set()
    for block in re.findall(r"```[a-z]*\n(.*?)```", markdown, flags=re.S):
        open_: list[tuple[int, str]] = []  # (indent, path) of the packages open at this line
        for line in block.splitlines():
            found = _TREE_LINE.match(line)
            if found is None:
                continue
            indent, first, rest = len(found[1]), found[2].rstrip(","), found[3]
            while open_ and open_[-1][0] >= indent:
                open_.pop()
            text = line
            if first.endswith("/"):
                path = first.strip("/")
                if open_ and "/" not in path:
                    path = f"{open_[-1][1]}/{path}"
                packages.add(path)
                open_.append((indent, path))
                text = rest
            if open_:
                modules.update((open_[-1][1], name) for name in _PY_FILE.findall(text))
    return packages, modules


def _mapped_files() -> list[Path]:
    return [
        path
        for top_folder in MAPPED
        for path in python_files(top_folder)
        if "migrations" not in path.relative_to(ROOT).parts
    ]


@pytest.mark.parametrize("path", _mapped_files(), ids=lambda p: module_name(p))
def test_docs_architecture_names_every_package_and_module(path: Path) -> None:
    """The map is the code: a module (or package) that docs/architecture.md does not name in its
    tree, under its own package, fails here by its file."""
    packages, modules = named_in_tree(ARCHITECTURE.read_text(encoding="utf-8"))
    package = path.parent.relative_to(ROOT).as_posix()
    assert package in packages, f"docs/architecture.md: name the package {package}/ in the tree"
    if path.name != "__init__.py":
        assert (package, path.stem) in modules, (
            f"docs/architecture.md: name {path.relative_to(ROOT)} in the tree, under {package}/"
        )


def test_the_map_reader_can_fail() -> None:
    """A negative control: a module listed under another package, or in prose, is not named."""
    markdown = (
        "Prose naming ghost.py.\n```\nconversation/\n  rooms/     room.py (Room),\n"
        "             turn.py, engine/ (below)\n  models/    calls.py\nstorage/\n  rooms.py\n```\n"
        "```\nconversation/rooms/engine/\n  core.py\n  kinds/\n    base.py\n```\n"
    )
    packages, modules = named_in_tree(markdown)
    assert packages == {
        "conversation",
        "conversation/rooms",
        "conversation/models",
        "storage",
        "conversation/rooms/engine",
        "conversation/rooms/engine/kinds",
    }
    assert modules == {
        ("conversation/rooms", "room"),
        ("conversation/rooms", "turn"),
        ("conversation/models", "calls"),
        ("storage", "rooms"),
        ("conversation/rooms/engine", "core"),
        ("conversation/rooms/engine/kinds", "base"),
    }
