"""No MPICH shared-memory segment of a beff job is left in /dev/shm, however it ends, and
the segments of other jobs on the node are left alone (beff.core.shm).

Each job ends in one of four ways: a watchdog abort (a rank stopped), an exception on a rank,
SIGINT to the launcher, SIGKILL of rank 0. By default beff unlinks the segment's name right
after MPI_Init; with ``BEFF_TEST_SHM_KEEP=1`` it keeps the name as MPICH does, and what
removes it is the clean-up of the aborting rank, of rank 0's signal handler, or of the
result file's watcher (SIGKILL: nothing in the job is left to do it).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from beff.core import shm
from tests.mpirun import (
    is_open_mpi_cached,
    kill_group,
    launcher,
    mpi_env,
    only_waits,
    process_state,
    rank_pids,
)

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(
    is_open_mpi_cached(), reason="MPICH's segments (Open MPI names its own otherwise)")]
GONE_WAIT_S = 45.0  # the watcher waits for the job's last rank, then removes the segment
# half a second per size (IMB's calibration), at any load: the job is still running when
# the test acts, and a size never comes near the watchdog's stall limit
STALL_S = 4
SLOW = ["-msglog", "0:8", "-time", "0.5"]
BENCHMARKS = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband", "Biband"]


@pytest.fixture(scope="module")
def other_job() -> Iterator[list[Path]]:
    """A plain mpi4py job holding its segment for the whole module; yields its paths."""
    proc = subprocess.Popen([launcher(), "-n", "2", sys.executable, "-m", "tests.mpi.shm_holder"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=mpi_env(), start_new_session=True)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        line = proc.stdout.readline()
        assert line.startswith("segments:"), line
        paths = [shm.SHM_DIR / name for name in line.split()[1:]]
        assert paths and all(p.exists() for p in paths), line
        yield paths
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        finally:
            kill_group(proc)


@pytest.fixture(scope="module")
def stale_segment() -> Iterator[Path]:
    """A segment a dead job left, named like MPICH's: not this job's, so it stays."""
    path = shm.SHM_DIR / f"mpich_shm_{secrets.token_hex(4)}_0"
    path.write_bytes(b"\0" * 4096)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def job_segments(marker: str, proc: subprocess.Popen[str]) -> list[str]:
    """The MPICH segments the job's ranks map (named or already unlinked), once they do."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        names = sorted({n for pid in rank_pids(marker).values()
                        for n in shm.mapped(pid, unlinked=True)})
        if names:
            return names
        time.sleep(0.05)
    raise AssertionError("the job's ranks never mapped an MPICH segment")


@pytest.mark.parametrize("keep", [False, True], ids=["unlinked-at-start", "kept-until-end"])
@pytest.mark.parametrize("end", ["watchdog", "exception", "sigint", "sigkill-rank-0"])
def test_no_segment_of_the_job_is_left(end: str, keep: bool, tmp_path: Path,
                                       other_job: list[Path], stale_segment: Path) -> None:
    out = tmp_path / "shm.h5"
    env: dict[str, str | None] = {shm.KEEP_ENV: "1" if keep else None}
    args = [*SLOW, "--format", "csv", "-o", str(out), *BENCHMARKS]
    if end == "watchdog":
        args = ["--stall-timeout", str(STALL_S), *args]
    if end == "exception":
        env["BEFF_TEST_FAIL"] = "1:PingPing"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "mpi1", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=mpi_env(env), start_new_session=True)
    assert proc.stdout is not None
    paths: list[Path] = []
    try:
        try:
            paths = [shm.SHM_DIR / n for n in job_segments(str(out), proc)]
            if end != "exception":
                for line in proc.stdout:  # the first result: rank 0's file and watcher exist
                    if line.startswith("mpi1,PingPong"):
                        break
                pids = rank_pids(str(out))
                assert proc.poll() is None, proc.communicate()[1]
                assert set(pids) == {0, 1}, pids
                # the name is gone already unless the test hook keeps it
                assert [p.exists() for p in paths] == [keep] * len(paths), paths
                if end == "watchdog":
                    os.kill(pids[1], signal.SIGSTOP)
                    only_waits(str(out))
                elif end == "sigint":
                    proc.send_signal(signal.SIGINT)
                else:
                    os.kill(pids[0], signal.SIGKILL)
            _, err = proc.communicate(timeout=90)
        finally:
            kill_group(proc)
        assert proc.returncode != 0, err
        if end == "watchdog":
            assert f"made no progress for {STALL_S} s" in err, err
        if end == "exception":
            assert "injected failure" in err, err
        deadline = time.monotonic() + GONE_WAIT_S
        while any(p.exists() for p in paths) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [p.name for p in paths if p.exists()] == [], err
    finally:  # a failed test leaves no segment either (they are this job's)
        for p in paths:
            p.unlink(missing_ok=True)
    # another job's live segment, and a dead job's, are not this job's
    assert all(p.exists() for p in other_job)
    assert stale_segment.exists()


def _segments() -> set[str]:
    return {p.name for p in shm.SHM_DIR.glob("mpich_*")}


@pytest.fixture(scope="module")
def stopped_in_mpi_init(tmp_path_factory: pytest.TempPathFactory, other_job: list[Path],
                        stale_segment: Path) -> tuple[dict[int, tuple[int, str, Path]],
                                                      set[str]]:
    """A job with rank 0, and one with rank 1, stopped just before MPI_Init, run together
    (the second started once the first's rank is stopped: its waiting rank sits in MPI_Init,
    a stopped one needs no CPU): {stopped rank: (exit code, stderr, result file)}, and the
    segments that either left, once their watchers had the time to remove them."""
    before = _segments()
    jobs = {}
    for rank in (0, 1):
        out = tmp_path_factory.mktemp(f"init-{rank}") / "init.h5"
        cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "mpi1", "-msglog",
               "0:2", "--stall-timeout", str(STALL_S), "-o", str(out), "PingPong"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=mpi_env({"BEFF_TEST_STOP": f"{rank}:mpi_init"}),
                                start_new_session=True)
        jobs[rank] = (proc, out)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline and \
                process_state(rank_pids(str(out)).get(rank, 0)) != "T":
            time.sleep(0.05)
        only_waits(str(out))
    ended = {}
    for rank, (proc, out) in jobs.items():
        try:
            _, err = proc.communicate(timeout=120)
        finally:
            kill_group(proc)
        ended[rank] = (proc.returncode, err, out)
    deadline = time.monotonic() + GONE_WAIT_S
    while (new := _segments() - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    for name in new:  # a failed test leaves none either
        (shm.SHM_DIR / name).unlink(missing_ok=True)
    return ended, new


@pytest.mark.parametrize("rank", [0, 1])
def test_a_job_stopped_in_mpi_init_leaves_no_segment(
        rank: int, stopped_in_mpi_init: tuple[dict[int, tuple[int, str, Path]], set[str]],
        other_job: list[Path], stale_segment: Path) -> None:
    """A rank stopped just before MPI_Init: the others wait inside it (the node's segment
    made by whichever rank came first), until the backstop of --stall-timeout ends them.
    Rank 0's watcher saw the segment in its maps or its sibling ranks' and removes it. (The
    two jobs run together: neither may leave a segment.)"""
    ended, new = stopped_in_mpi_init
    code, err, out = ended[rank]
    assert "beff: test hook: rank stops at mpi_init" in err, err
    assert code != 0
    assert new == set(), err
    assert not out.exists()
    assert all(p.exists() for p in other_job)
    assert stale_segment.exists()
