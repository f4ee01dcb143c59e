"""An exception on one rank aborts the whole job; killed runs leave a readable archive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beff.results.archive import load
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


def _small_filesystem(path: Path) -> bool:
    """Mount a 96 KiB tmpfs on ``path`` (root only)."""
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(path)],
                       capture_output=True, timeout=30)
    return r.returncode == 0


def test_full_disk_aborts_with_a_clear_message(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _small_filesystem(disk):
        pytest.skip("needs root to mount a small tmpfs (CI runs as root)")
    try:
        (disk / "filler").write_bytes(b"\0" * (64 << 10))
        start = time.monotonic()
        r = mpirun(2, "imb", "mpi1", *QUICK, "PingPong", "PingPing", "Sendrecv", "-o",
                   str(disk / "out.h5"), timeout=60)
        assert time.monotonic() - start < 30
        assert r.returncode != 0
        errors = [ln for ln in r.stderr.splitlines() if ln.startswith("beff: error on rank 0:")]
        assert len(errors) == 1, r.stderr
        assert "No space left on device" in r.stderr, r.stderr
        assert "aborts the job" in r.stderr
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
