"""Below the families, no module names one by string either: import-linter's layers contract
(test_layers) sees imports, not ``importlib.import_module("beff.io...")`` or a
``"module:attribute"`` string; those come from the suites' declarations (beff.core.suite)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

BEFF = Path(__file__).resolve().parents[2] / "beff"
BELOW = ("bench", "render", "results", "patterns", "core")
FAMILY = re.compile(r"\bbeff\.(imb|effbw|io|netmap)\b")


def code_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are no docstring (prose may name a family)."""
    tree = ast.parse(path.read_text())
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs]


def test_no_module_below_the_families_names_one_by_string() -> None:
    found = [f"{p.relative_to(BEFF.parent)}:{line}: {text!r}"
             for layer in BELOW for p in sorted((BEFF / layer).rglob("*.py"))
             for line, text in code_strings(p) if FAMILY.search(text)]
    assert not found, "\n".join(found)


def test_the_check_sees_such_a_string(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Prose may say beff.io."""\nVIEW = "beff.io.view:VIEW"\n')
    assert [text for _, text in code_strings(module) if FAMILY.search(text)] == [
        "beff.io.view:VIEW"]
