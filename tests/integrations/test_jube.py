"""beff's JUBE benchmark (share/integrations/jube/beff.yaml) under the real JUBE: ``jube run``,
``jube analyse`` and ``jube result`` give a table whose every figure is the figure ``beff show
FILE -f lines`` gives for the result files the run kept.

In CI (``CI`` set) this test fails, it does not skip, when JUBE is missing (.ci/run installs
Debian's ``jube``). Elsewhere it skips, saying how to install it.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.mpirun import BIN, ROOT, beff, mpi_env

pytestmark = [pytest.mark.mpi, pytest.mark.timeout(300)]

DEFINITION = ROOT / "share" / "integrations" / "jube" / "beff.yaml"


def jube() -> str:
    found = shutil.which("jube")
    if found is None:
        message = "JUBE is missing: apt-get install jube (or pip install JUBE)"
        if not os.environ.get("CI"):
            pytest.skip(message)
        raise AssertionError(message)
    return found


def lines_of(path: Path) -> dict[str, str]:
    """``beff show PATH -f lines`` as {name: value}; the run's live lines (PATH with the
    suffix .lines, which JUBE read) must be the same text."""
    shown = beff("show", str(path), "-f", "lines")
    assert shown.returncode == 0, shown.stderr
    assert path.with_suffix(".lines").read_text() == shown.stdout
    return {name: value for name, value, _ in (ln.split(" ") for ln in shown.stdout.splitlines())}


def test_the_result_table_holds_beff_show_figures(tmp_path: Path) -> None:
    command = jube()
    env = mpi_env()
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # beff and mpiexec of the venv
    out = tmp_path / "out"
    for args in (["run", str(DEFINITION), "-o", str(out), "-e"], ["analyse", str(out)],
                 ["result", str(out), "-i", "last"]):
        done = subprocess.run([command, *args], capture_output=True, text=True, timeout=240,
                              cwd=tmp_path, env=env)
        assert done.returncode == 0, (args, done.stdout[-4000:], done.stderr[-4000:])
    text = done.stdout[done.stdout.index("nprocs,bytes,"):]
    rows = list(csv.DictReader(io.StringIO(text.strip())))
    assert [int(r["bytes"]) for r in rows] == [0, 1024, 65536], text
    (work,) = out.glob("*/000000_run/work")
    imb, run = lines_of(work / "imb.h5"), lines_of(work / "beff.h5")
    for row in rows:
        size = f"{row['bytes']}B"
        assert row["nprocs"] == "2" and row["imb_status"] == row["beff_status"] == "complete"
        expected = {
            "pingpong_t_us": imb[f"mpi1.PingPong.np2.{size}.t_max_us"],
            "pingpong_MBps": imb[f"mpi1.PingPong.np2.{size}.mbytes_per_sec"],
            "allreduce_t_avg_us": imb[f"mpi1.Allreduce.np2.{size}.t_avg_us"],
            "b_eff_MBps": run["beff.b_eff_MBps"],
            "latency_us": run["beff.latency_us"],
        }
        for column, value in expected.items():
            assert float(row[column]) == float(value), (size, column, row, value)
