"""Every rank's start-up, measured and stored (issue: start-up and memory at scale, item 3):
the interpreter and imports, MPI_Init, until the timed loops are ready, the first barrier;
``beff show``, its JSON, the report and ``beff info`` give each phase's median, maximum and
slowest rank with its host."""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beff.results.archive import load
from tests.mpirun import beff, is_open_mpi_cached, launcher, mpi_env, mpirun

pytestmark = pytest.mark.mpi

PHASES = ("startup_imports_s", "startup_mpi_init_s", "startup_setup_s", "startup_barrier_s")
ARGS = ["imb", "mpi1", "PingPong", "-msglog", "0:2", "-iter", "20", "-iter_policy", "off"]


def test_each_ranks_start_up_is_stored_and_shown(tmp_path: Path) -> None:
    out = tmp_path / "s.h5"
    began = time.monotonic()
    r = mpirun(2, *ARGS, "-o", str(out))
    wall = time.monotonic() - began
    assert r.returncode == 0, r.stderr
    record = load(out)
    for rank in record.ranks:
        values = [float(rank[k]) for k in PHASES]
        assert all(math.isfinite(v) and v >= 0 for v in values), rank
        assert values[0] > 0.01, rank  # an interpreter and beff's imports take time
        assert sum(values) < wall + 0.02, (rank, wall)  # within the launch (10 ms ticks)
    shown = beff("show", str(out))
    assert shown.returncode == 0, shown.stderr
    header = [ln for ln in shown.stdout.splitlines() if ln.startswith("start-up")]
    assert len(header) == 1 and "MPI_Init" in header[0] and "(rank " in header[0], shown.stdout
    doc = json.loads(beff("show", str(out), "-f", "json").stdout)
    assert sorted(doc["startup"]) == ["barrier", "imports", "mpi_init", "setup"]
    imports = doc["startup"]["imports"]
    slowest = max(record.ranks, key=lambda rank: float(rank["startup_imports_s"]))
    assert imports["max_s"] == float(slowest["startup_imports_s"])
    assert imports["slowest_rank"] == int(slowest["rank"]) and imports["host"] == slowest["host"]
    page = tmp_path / "s.html"
    assert beff("report", str(out), "-o", str(page)).returncode == 0
    assert "start-up" in page.read_text()


def test_a_rank_that_starts_late_is_named(tmp_path: Path) -> None:
    """Rank 1 starts 1.5 s late (a shell sleeps before it execs Python: a slow node's
    file system, say): its own start-up is the slowest, and rank 0 waits for it in
    MPI_Init."""
    if is_open_mpi_cached():
        pytest.skip("MPICH's MPI_Init waits for every rank; Open MPI's may return first")
    out = tmp_path / "late.h5"
    beff_cmd = [sys.executable, "-m", "beff", *ARGS, "-o", str(out)]
    late = f"sleep 1.5; exec {shlex.join(beff_cmd)}"
    cmd = [launcher(), "-n", "1", *beff_cmd, ":", "-n", "1", "sh", "-c", late]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_env())
    assert r.returncode == 0, r.stderr
    ranks = {int(rank["rank"]): rank for rank in load(out).ranks}
    # Rank 1's start holds the sleep; rank 0 cannot leave MPI_Init before rank 1 came in
    # (lower bounds only: a loaded machine makes both longer)
    assert float(ranks[1]["startup_imports_s"]) > 1.4, ranks
    assert float(ranks[0]["startup_imports_s"]) + float(ranks[0]["startup_mpi_init_s"]) > 1.4
    assert float(ranks[0]["startup_mpi_init_s"]) > float(ranks[1]["startup_mpi_init_s"])
    doc = json.loads(beff("show", str(out), "-f", "json").stdout)
    assert doc["startup"]["imports"]["slowest_rank"] == 1
    assert doc["startup"]["mpi_init"]["slowest_rank"] == 0


def test_info_gives_the_start_up_first() -> None:
    r = mpirun(2, "info")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert lines[0].strip() == "start-up of 2 ranks", r.stdout
    table = "\n".join(lines[:8])
    for phase in ("interpreter and imports", "MPI_Init", "until the loops were ready",
                  "first barrier"):
        assert phase in table, r.stdout
