"""``--report FILE.html`` of a measuring command: rank 0 writes the page once the result file
is complete; without it, the run names the command that would."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.mpirun import mpirun

pytestmark = pytest.mark.mpi


def test_a_run_writes_its_report_or_names_the_command(tmp_path: Path) -> None:
    out, page = tmp_path / "pp.h5", tmp_path / "pp.html"
    r = mpirun(2, "imb", "mpi1", "PingPong", "-msglog", "0:4", "-time", "0.2", "-o", str(out),
               "--report", str(page), "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert f"report written to {page}" in r.stderr
    text = page.read_text(encoding="utf-8")
    assert re.findall(r'data-chart="([^"]+)"', text) == ["mpi1/PingPong/time",
                                                          "mpi1/PingPong/bandwidth"]
    assert "<th>status</th><td>complete</td>" in text and "--report" in text
    r = mpirun(1, "imb", "mpi1", "Barrier", "-time", "0.1", "-o", str(tmp_path / "b.h5"),
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"its report page: beff report {tmp_path / 'b.h5'} -o b.html" in r.stderr
    assert not (tmp_path / "b.html").exists()


def test_without_matplotlib_the_hint_says_how_to_add_it(tmp_path: Path) -> None:
    """matplotlib not importable (a site hook hides it, as an install without it would):
    the last line says how to add it instead of naming a command that would fail."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['matplotlib'] = None\n")
    r = mpirun(1, "imb", "mpi1", "Barrier", "-time", "0.1", "-o", str(tmp_path / "b.h5"),
               cwd=tmp_path, env={"PYTHONPATH": str(hide)})
    assert r.returncode == 0, r.stderr
    assert "its report page:" not in r.stderr
    assert (f"for its report page, add matplotlib (pip install matplotlib), then: beff "
            f"report {tmp_path / 'b.h5'} -o b.html") in " ".join(r.stderr.split())
