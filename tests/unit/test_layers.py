"""The import contracts of pyproject.toml ([tool.importlinter]): data flows one way, and the
families (imb, effbw, io) are siblings that never import each other."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    return subprocess.run([exe, "--config", str(root / "pyproject.toml")], cwd=root,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_the_import_contracts_hold() -> None:
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout


def test_a_family_importing_another_breaks_the_contract(tmp_path: Path) -> None:
    """The contract bites: a copy of the package where b_eff imports b_eff_io fails it."""
    shutil.copytree(ROOT / "beff", tmp_path / "beff",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    view = tmp_path / "beff" / "effbw" / "view.py"
    view.write_text(view.read_text() + "\nfrom beff.io import record as _io_record  # noqa\n")
    r = lint(tmp_path)
    assert r.returncode != 0
    assert "beff.effbw.view -> beff.io.record" in r.stdout, r.stdout
