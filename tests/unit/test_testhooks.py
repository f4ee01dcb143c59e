"""The test hooks (``BEFF_TEST_*``) stay behind one module, beff.core.testhooks, which imports
nothing heavy (kernels and early start-up ask it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from beff.core import testhooks

BEFF = Path(__file__).resolve().parents[2] / "beff"
HOOKS = BEFF / "core" / "testhooks.py"


def test_only_testhooks_names_the_variables() -> None:
    sources = sorted(BEFF.rglob("*.py"))
    assert HOOKS in sources
    assert "BEFF_TEST_" in HOOKS.read_text()  # the positive control: the grep finds them
    elsewhere = [str(p.relative_to(BEFF.parent)) for p in sources
                 if p != HOOKS and "BEFF_TEST_" in p.read_text()]
    assert not elsewhere, f"BEFF_TEST_ outside beff/core/testhooks.py: {elsewhere}"


def test_testhooks_imports_only_the_smallest_modules() -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(HOOKS.read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported <= {"__future__", "os", "collections.abc"}, imported


def test_unset_hooks_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in dir(testhooks):
        value = getattr(testhooks, name)
        if isinstance(value, str) and value.startswith("BEFF_TEST_"):
            monkeypatch.delenv(value, raising=False)
    assert not testhooks.corrupt()
    assert testhooks.count_limit() is None
    assert testhooks.fail(1, "PingPong") is None
    assert testhooks.hidden_mpi() == set()
    assert not testhooks.no_space_check()
    assert not testhooks.root_elsewhere()
    assert not testhooks.shm_keep()
    assert testhooks.slow_create() is None and testhooks.slow_merge() is None
    assert testhooks.slow_ready() == 0.0
    assert not testhooks.stop("init", lambda: 0)


def test_hooks_read_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEFF_TEST_CORRUPT", "1")
    monkeypatch.setenv("BEFF_TEST_COUNT_LIMIT", "0")
    monkeypatch.setenv("BEFF_TEST_FAIL", "1:pingpong")
    monkeypatch.setenv("BEFF_TEST_HIDE_MPI", "Win_flush,,Ibcast")
    monkeypatch.setenv("BEFF_TEST_SLOW_MERGE", "2.5")
    monkeypatch.setenv("BEFF_TEST_STOP", "1:init")
    assert testhooks.corrupt()
    assert testhooks.count_limit() == 1
    assert testhooks.fail(1, "PingPong") == "1:pingpong" and testhooks.fail(0, "PingPong") is None
    assert testhooks.hidden_mpi() == {"Win_flush", "Ibcast"}
    assert testhooks.slow_merge() == 2.5
    assert not testhooks.stop("init", lambda: 0)
    assert testhooks.stop("init", lambda: 1)
    assert not testhooks.stop("init", lambda: 1)  # once
