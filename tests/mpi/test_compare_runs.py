"""`beff compare` of real runs: a run against itself is no different anywhere, and a run at
other ranks names that difference before any figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.mpirun import beff, mpirun

pytestmark = pytest.mark.mpi

PINGPONG = ("imb", "mpi1", "PingPong", "-msglog", "0:4", "-time", "0.2")


def test_compare_a_run_with_itself_and_with_a_run_at_three_ranks(tmp_path: Path) -> None:
    a, c = tmp_path / "a.h5", tmp_path / "c.h5"
    run = mpirun(2, *PINGPONG, "-o", str(a), timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    same = beff("compare", str(a), str(a), "--format", "json")
    assert same.returncode == 0, same.stderr
    doc = json.loads(same.stdout)
    # 0, 1, 2, 4, 8 and 16 bytes, less those a busy machine timed out
    assert doc["differences"] == [] and 1 <= doc["tested"] == len(doc["rows"]) <= 6
    assert {r["verdict"] for r in doc["rows"]} == {"no significant difference"}
    assert all(r["a_batches"] == 10 and r["ratio_low"] <= 1 <= r["ratio_high"]
               for r in doc["rows"])
    run = mpirun(3, *PINGPONG, "-npmin", "2", "-o", str(c), timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    other = beff("compare", str(a), str(c), env={"COLUMNS": "200"})
    assert other.returncode == 0, other.stderr
    lines = other.stdout.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("t_avg per iteration"))
    assert "warning: nprocs differs: 2 vs 3" in lines[:title]
    assert lines[0].startswith("The runs differ in settings")
