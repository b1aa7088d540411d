"""ui/manage.py: the room and the experiment panels (rename / archive / delete with
confirmation) are one function, so a fix to one reaches the other; their behaviour is tested in
tests/app/test_research.py."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "ui" / "manage.py"


def test_the_room_and_experiment_panels_are_served_by_one_function() -> None:
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    called = set()
    for name in ("room_panel", "experiment_panel"):
        body = [s for s in functions[name].body if not isinstance(s, ast.Expr)
                or not isinstance(s.value, ast.Constant)]  # fmt: skip
        assert len(body) == 1, f"{name} does more than hand over to the shared panel"
        [statement] = body
        assert isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
        assert isinstance(statement.value.func, ast.Name)
        called.add(statement.value.func.id)
    [shared] = called
    # The shared panel draws the widgets; neither public function does.
    assert "st.button" not in ast.unparse(functions["room_panel"])
    assert "button" in ast.unparse(functions[shared])
