"""An exception on one rank aborts the whole job; killed runs leave a readable archive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beff.store import load
from tests.mpirun import launcher, mpi_env, mpirun

pytestmark = pytest.mark.mpi
QUICK = ["-msglog", "0:4", "-time", "0.2", "-iter", "20"]


@pytest.mark.parametrize("nprocs,rank", [(2, 1), (3, 2), (4, 0)])
def test_exception_on_one_rank_aborts_the_job(nprocs: int, rank: int, tmp_path: Path) -> None:
    out = tmp_path / "abort.h5"
    start = time.monotonic()
    r = mpirun(nprocs, "imb", "mpi1", *QUICK, "PingPong", "Sendrecv", "-o", str(out),
               env={"BEFF_TEST_FAIL": f"{rank}:Sendrecv"}, timeout=60)
    assert time.monotonic() - start < 30
    assert r.returncode != 0
    assert f"beff: error on rank {rank}: RuntimeError: injected failure" in r.stderr
    assert "aborts the job" in r.stderr
    # Results measured before the failure stay in the file.
    record = load(out)
    assert [m.benchmark for m in record.measurements] == ["PingPong"]
    assert record.attrs["status"] in ("running", "aborted")


def test_sigkill_halfway_leaves_every_completed_benchmark(tmp_path: Path) -> None:
    out = tmp_path / "killed.h5"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "mpi1", "-msglog", "0:8",
           "-time", "0.3", "-iter", "100", "--format", "csv", "-o", str(out),
           "PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband", "Biband"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=mpi_env(), start_new_session=True)
    assert proc.stdout is not None
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    try:
        for line in proc.stdout:
            parts = line.split(",")
            if len(parts) > 2 and parts[0] == "mpi1":
                seen.add(parts[1])
            if len(seen) >= 3 or time.monotonic() > deadline:
                break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert len(seen) >= 3
    record = load(out)
    done = [m.benchmark for m in record.measurements]
    assert done[:3] == ["PingPong", "PingPing", "Sendrecv"]
    assert record.attrs["status"] == "running"  # killed: never marked complete
    for m in record.measurements:
        assert m.times.shape[0] == len(m.sizes)
