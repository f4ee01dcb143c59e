"""An exception on one rank aborts the whole job, a full disk ends the run, an unwritable
directory is refused; every finished result stays readable (runs ended from outside:
tests/mpi/test_stops.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from beff.results import watch
from beff.results.archive import load
from tests.mpirun import (
    is_open_mpi_cached,
    mpirun,
    stored_status,
)

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]  # also in the Open MPI tier of the tests
QUICK = ["-msglog", "0:4", "-time", "0.2", "-iter", "20"]


@pytest.mark.parametrize("nprocs,rank", [(2, 1), (3, 2), (4, 0)])
def test_exception_on_one_rank_aborts_the_job(nprocs: int, rank: int, tmp_path: Path) -> None:
    out = tmp_path / "abort.h5"
    start = time.monotonic()
    r = mpirun(nprocs, "imb", "mpi1", *QUICK, "PingPong", "Sendrecv", "-o", str(out),
               env={"BEFF_TEST_FAIL": f"{rank}:Sendrecv"}, timeout=60)
    assert time.monotonic() - start < 30
    assert r.returncode == 1, r.stderr  # the failing rank's code, not SIGTERM's 143
    assert f"beff: error on rank {rank}: RuntimeError: injected failure" in r.stderr
    if rank != 0:  # rank 0 ends the job and names the rank that failed
        assert f"beff: rank {rank} failed: the job ends, results so far are kept" in r.stderr
    assert "aborts the job" in r.stderr
    # Results measured before the failure stay in the file.
    record = load(out)
    assert [m.benchmark for m in record.measurements] == ["PingPong"]
    assert record.attrs["status"] == "aborted"  # rank 0 was told before MPI_Abort


def test_failure_on_a_rank_that_cannot_reach_rank_0_still_marks_the_file(tmp_path: Path) -> None:
    """As when the failing rank is on another host: rank 0 gets no warning, MPI_Abort kills
    it with SIGKILL, and the file's watcher marks the file aborted."""
    out = tmp_path / "remote.h5"
    r = mpirun(2, "imb", "mpi1", *QUICK, "PingPong", "Sendrecv", "-o", str(out), timeout=60,
               env={"BEFF_TEST_FAIL": "1:Sendrecv", "BEFF_TEST_ROOT_ELSEWHERE": "1"})
    assert r.returncode != 0 and "injected failure" in r.stderr
    status, note = stored_status(out)
    # hydra ends rank 0 with SIGKILL (the watcher marks the file); PRRTE sends SIGTERM first
    # (rank 0 marks it itself, without the note)
    assert status == "aborted", status
    assert note == ("" if is_open_mpi_cached() else watch.NOTE), note
    assert [m.benchmark for m in load(out).measurements] == ["PingPong"]


def _small_filesystem(path: Path, size_kib: int) -> bool:
    """Mount a small tmpfs on ``path`` (root only)."""
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(path)],
                       capture_output=True, timeout=30)
    return r.returncode == 0


def test_a_disk_filling_up_keeps_the_finished_benchmarks(tmp_path: Path) -> None:
    """About 1 MiB free: the file takes a few results, then the run stops with "disk full",
    and every result written before stays readable."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _small_filesystem(disk, 2048):
        pytest.skip("needs root to mount a small tmpfs (CI runs as root)")
    try:
        free = shutil.disk_usage(disk).free
        (disk / "filler").write_bytes(b"\0" * max(0, free - (1000 << 10)))
        names = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband", "Biband",
                 "Allreduce", "Reduce", "Bcast", "Gather", "Scatter", "Alltoall", "Allgather",
                 "Barrier"] * 1
        start = time.monotonic()
        r = mpirun(2, "imb", "mpi1", *QUICK, "--batches", "200", *names, "-o",
                   str(disk / "out.h5"), timeout=120)
        assert time.monotonic() - start < 60
        assert r.returncode != 0
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("beff: error on rank 0:")]
        assert len(errors) == 1 and "disk full:" in errors[0], r.stderr
        assert str(disk) in errors[0] and "stay readable" in errors[0]
        record = load(disk / "out.h5")
        assert 1 <= len(record.measurements) < len(names), len(record.measurements)
        assert [m.benchmark for m in record.measurements] == names[:len(record.measurements)]
        assert record.attrs["status"] == "aborted"
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=30)


def test_unwritable_output_directory_exits_2(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as root: permissions do not stop writes (see the full-disk test)")
        r = mpirun(2, "imb", "mpi1", *QUICK, "PingPong", "-o", str(locked / "out.h5"),
                   timeout=30)
        assert r.returncode == 2 and "cannot write to" in r.stderr
    finally:
        locked.chmod(0o700)
