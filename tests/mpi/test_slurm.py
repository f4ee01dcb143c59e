"""beff under Slurm's srun (MPICH over PMI-2). Skipped where no Slurm answers: CI has none;
a workstation with a one-node Slurm runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from beff.results.archive import load
from tests.mpirun import (
    assert_watchdog_fired,
    is_open_mpi_cached,
    mpi_env,
    stop_a_rank_of,
)


def _slurm_up() -> bool:
    if shutil.which("srun") is None or shutil.which("sinfo") is None:
        return False
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%a"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "up" in out.split()


pytestmark = [pytest.mark.mpi,
              pytest.mark.skipif(not _slurm_up() or is_open_mpi_cached(),
                                 reason="needs a running Slurm and MPICH (srun --mpi=pmi2)")]


def command(nprocs: int, *args: str) -> list[str]:
    return ["srun", "-n", str(nprocs), "--mpi=pmi2", sys.executable, "-m", "beff", *args]


def srun(nprocs: int, *args: str, stdout: int | None = None, timeout: float = 180,
         env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(nprocs, *args),
                          stdout=stdout if stdout is not None else subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, env=mpi_env(env))


def test_srun_run_to_a_file_with_progress_lines(tmp_path: Path) -> None:
    """Plain srun hands ranks pipes and relays whole lines: --progress gives lines on stderr,
    and the data in the file have no colour."""
    out, text = tmp_path / "s.h5", tmp_path / "out.txt"
    with text.open("w") as fh:
        r = srun(2, "imb", "mpi1", "PingPong", "-msglog", "0:4", "-time", "0.1",
                 "--progress", "-o", str(out), stdout=fh.fileno())
    assert r.returncode == 0, r.stderr
    data = text.read_text()
    assert "PingPong" in data and "\x1b[" not in data
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("progress: 1/")]
    rec = load(out)
    assert rec.attrs["status"] == "complete" and rec.attrs["nprocs"] == 2


def test_srun_bad_input_is_one_line_and_exit_2() -> None:
    r = srun(2, "imb", "mpi1", "-msglog", "9:3", timeout=60)
    assert r.returncode == 2
    ours = [ln for ln in r.stderr.splitlines() if not ln.startswith("srun: ")]
    assert len(ours) == 1 and ours[0].startswith("beff: error: "), r.stderr


def test_srun_exception_on_one_rank_aborts_and_keeps_results(tmp_path: Path) -> None:
    out = tmp_path / "abort.h5"
    r = srun(2, "imb", "mpi1", "-msglog", "0:4", "-time", "0.2", "-iter", "20", "PingPong",
             "Sendrecv", "-o", str(out), env={"BEFF_TEST_FAIL": "1:Sendrecv"}, timeout=60)
    assert r.returncode != 0
    assert "beff: error on rank 1: RuntimeError: injected failure" in r.stderr
    record = load(out)
    assert [m.benchmark for m in record.measurements] == ["PingPong"]
    assert record.attrs["status"] == "aborted"


def test_srun_stopped_rank_trips_the_watchdog(tmp_path: Path) -> None:
    out = tmp_path / "stopped.h5"
    cmd = command(2, "imb", "mpi1", "-msglog", "0:12", "-time", "1", "--stall-timeout", "4",
                  "--format", "csv", "-o", str(out), "PingPong", "Sendrecv", "Exchange",
                  "Allreduce", "Alltoall", "Bcast")
    proc, err, waited = stop_a_rank_of(cmd, str(out), ready_line="mpi1,PingPong")
    assert_watchdog_fired(proc, err, waited, 4)
    record = load(out)
    assert record.measurements[0].benchmark == "PingPong"
    assert record.attrs["status"] == "aborted"
