"""Runs ended from outside: SIGKILL halfway, a stopped rank (the watchdog), --timeout, SIGINT
to the launcher and Ctrl-C. Every finished result stays readable. (Apart from
tests/mpi/test_failures.py, so that the two files run on two workers side by side: under Open
MPI, whose tier has four workers, the one file was the tier's longest by some 10 s.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beff.results import watch
from beff.results.archive import load
from tests.mpirun import (
    assert_watchdog_fired,
    is_open_mpi_cached,
    kill_group,
    launcher,
    mpi_env,
    mpirun,
    stop_a_rank_of,
    stored_status,
)

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]  # also in the Open MPI tier of the tests


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
        kill_group(proc)
    assert len(seen) >= 3
    record = load(out)
    done = [m.benchmark for m in record.measurements]
    assert done[:3] == ["PingPong", "PingPing", "Sendrecv"]
    assert stored_status(out) == ("aborted", watch.NOTE)  # by the watcher: never complete
    for m in record.measurements:
        assert m.times.shape[0] == len(m.sizes)


def test_a_stopped_rank_trips_the_watchdog(tmp_path: Path) -> None:
    """SIGSTOP one rank: the other's guard fires, dumps its stack and aborts the job; the
    benchmarks finished before stay in the file."""
    out = tmp_path / "stopped.h5"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "mpi1", "-msglog", "0:12",
           "-time", "1", "--stall-timeout", "4", "--format", "csv", "-o", str(out), "PingPong",
           "PingPing", "Sendrecv", "Exchange", "Allreduce", "Alltoall", "Bcast"]
    # stop a rank after the first finished benchmark
    proc, err, waited = stop_a_rank_of(cmd, str(out), ready_line="mpi1,PingPong")
    assert_watchdog_fired(proc, err, waited, 4)
    assert "most recent call first" in err
    record = load(out)
    assert record.measurements and record.measurements[0].benchmark == "PingPong"


def test_job_timeout_aborts_a_long_run(tmp_path: Path) -> None:
    out = tmp_path / "timeout.h5"
    start = time.monotonic()
    # 2 million iterations per size: longer than 3 s even on a fast machine
    r = mpirun(2, "imb", "mpi1", "-msglog", "0:4", "-iter", "2000000", "-iter_policy", "off",
               "-time", "1000", "--timeout", "3", "PingPong", "-o", str(out), timeout=120)
    assert r.returncode != 0
    assert "the run exceeded --timeout 3 s" in r.stderr
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("to_group", [False, True], ids=["launcher", "ctrl-c"])
def test_sigint_marks_the_file_aborted(tmp_path: Path, to_group: bool) -> None:
    """SIGINT to the launcher, or Ctrl-C (SIGINT to the launcher and every rank, as a
    terminal sends it): rank 0 closes the file as aborted, keeping what it holds; one line,
    exit 130."""
    out = tmp_path / "interrupted.h5"
    # sizes 0 and 1, 100000 iterations each: PingPong ends soon, and the Ctrl-C comes while
    # the others (8 x 200000 iterations: some seconds, more on a loaded node) still run
    benchmarks = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Allreduce", "Reduce",
                  "Allgather", "Bcast", "Alltoall"]
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "mpi1", "-msglog", "0:0",
           "-iter", "100000", "-iter_policy", "off", "-time", "1000", "--format", "csv", "-o",
           str(out), *benchmarks]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=mpi_env(), start_new_session=True)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith("mpi1,PingPong"):
                break
        if to_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        kill_group(proc)
    assert proc.returncode != 0
    if not is_open_mpi_cached():  # prterun stops forwarding output as it tears down
        assert proc.returncode == 130, err
        ours = [line for line in err.splitlines() if line.startswith(("beff:", "Abort("))]
        assert len(ours) == 1, err
        assert ours[0] == ("beff: interrupted (SIGINT): the job ends, results so far are kept "
                           f"in {out} (to measure the rest, launch again: beff imb mpi1 "
                           "-msglog 0:0 -iter 100000 -iter_policy off -time 1000 --format "
                           f"csv {' '.join(benchmarks)} --resume {out})"), err
    record = load(out)
    assert record.attrs["status"] == "aborted"
    assert record.measurements and record.measurements[0].benchmark == "PingPong"
