"""A rank stopped during start-up, before the first result, trips ``--stall-timeout`` and
``--timeout``: both hold from MPI_Init on, and no call that waits for the stopped rank keeps
the interpreter lock from the watchdog thread (mpi4py's object ``allreduce`` did, in the
backend's start and in IMB's calibration: there the watchdog could not fire, and only its
backstop, a few seconds later and without a word of beff's, ended the job).

The stop is the test hook ``BEFF_TEST_STOP=1:POINT``: rank 1 sends itself SIGSTOP at that
point (``init``: MPI_Init done; ``backend``: before the ranks agree on the timed loops;
``metadata``: before each rank's facts are gathered; ``calibration``: IMB's first one).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mpirun import (
    is_open_mpi_cached,
    kill_group,
    launcher,
    mpi_env,
    process_state,
    rank_pids,
)

pytestmark = pytest.mark.mpi
# Each limit is several times what a loaded node needs to reach the stop point (a quiet one:
# about 0.7 s from launch); a test waits the limit out, so a larger one only costs time.
STALL_S = 6
TIMEOUT_S = 8
# Wall limits are 5x the limit itself, so at least 4x what a quiet machine needs (the
# --timeout tests end at the limit plus a few tenths of a second there): they tell that the
# watchdog fired, not the tests' time-out, and assert no speed (the firing times measured
# on a quiet machine go in benchmarks and notes).
WALL = 5

JOBS = {
    "imb": ["imb", "mpi1", "-msglog", "0:4", "-time", "0.2", "PingPong"],
    "io": ["io", "--quick"],
    "run": ["run", "--quick"],
}


def run_stopped(job: str, point: str, limit: list[str], tmp_path: Path
                ) -> tuple[subprocess.Popen[str], str, float, float]:
    """Run ``job`` on 2 ranks with rank 1 stopping itself at ``point``; returns the job, its
    stderr, and the seconds from its start and from the stop to its end."""
    out = tmp_path / f"{job}-{point}.h5"
    args = [*JOBS[job], *limit, "-o", str(out)]
    if job == "io":
        (tmp_path / "io").mkdir()
        args += ["--dir", str(tmp_path / "io")]
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", *args]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=mpi_env({"BEFF_TEST_STOP": f"1:{point}"}),
                            start_new_session=True)
    stopped = None
    try:
        while proc.poll() is None and stopped is None and time.monotonic() - started < 120:
            pid = rank_pids(str(out)).get(1)
            if pid is not None and process_state(pid) == "T":
                stopped = time.monotonic()
            time.sleep(0.05)
        _, err = proc.communicate(timeout=120)
    finally:
        kill_group(proc)
    ended = time.monotonic()
    assert stopped is not None, f"rank 1 was never seen stopped; stderr:\n{err}"
    return proc, err, ended - started, ended - stopped


def assert_fired(proc: subprocess.Popen[str], err: str, point: str, message: str) -> None:
    """Rank 0's own watchdog (not its backstop) ended the job: its line, its stacks, exit 3."""
    assert f"beff: test hook: rank stops at {point}" in err, err
    assert f"beff: watchdog on rank 0: {message}" in err, err
    assert "most recent call first" in err, err  # the stacks
    assert "Timeout (" not in err, err  # faulthandler's backstop did not have to act
    assert proc.returncode == 3 or (is_open_mpi_cached() and proc.returncode != 0), \
        proc.returncode


@pytest.mark.parametrize("job,point", [("imb", "calibration"), ("io", "backend"),
                                       ("run", "metadata")])
def test_stall_timeout_holds_during_start_up(job: str, point: str, tmp_path: Path) -> None:
    proc, err, _, waited = run_stopped(job, point, ["--stall-timeout", str(STALL_S)],
                                       tmp_path)
    assert_fired(proc, err, point, "start-up (" if point != "calibration" else
                 "PingPong at 2 processes, 0 bytes")
    assert f"made no progress for {STALL_S} s" in err, err
    print(f"{job} stopped at {point}: --stall-timeout {STALL_S} fired {waited:.1f} s after")
    assert waited < WALL * STALL_S, waited


@pytest.mark.parametrize("job,point", [("imb", "backend"), ("io", "init"), ("run", "init")])
def test_timeout_holds_during_start_up(job: str, point: str, tmp_path: Path) -> None:
    proc, err, elapsed, _ = run_stopped(job, point, ["--timeout", str(TIMEOUT_S)], tmp_path)
    assert_fired(proc, err, point, f"the run exceeded --timeout {TIMEOUT_S} s")
    print(f"{job} stopped at {point}: --timeout {TIMEOUT_S} ended it {elapsed:.1f} s in")
    assert TIMEOUT_S <= elapsed < WALL * TIMEOUT_S, elapsed  # never before --timeout


def test_the_config_file_sets_the_start_up_limit(tmp_path: Path) -> None:
    """``stall_timeout`` from the TOML file holds from MPI_Init too (every rank reads it
    before MPI starts)."""
    config = tmp_path / "limits.toml"
    config.write_text(f"stall_timeout = {STALL_S}\n")
    proc, err, _, waited = run_stopped("imb", "backend", ["--config", str(config)], tmp_path)
    assert_fired(proc, err, "backend", "start-up (selecting the timed-loop backend)")
    assert waited < WALL * STALL_S, waited


def test_a_rank_stopped_after_its_last_result_trips_the_stall_guard(tmp_path: Path) -> None:
    """The end of the run is guarded too: rank 0 has written every result, then waits for
    the stopped rank in the final barrier until --stall-timeout ends the job; the file stays
    complete."""
    proc, err, _, waited = run_stopped("imb", "end", ["--stall-timeout", str(STALL_S)],
                                       tmp_path)
    assert_fired(proc, err, "end", "the end of the run")
    assert waited < WALL * STALL_S, waited
    from beff.results.archive import load

    record = load(tmp_path / "imb-end.h5")
    assert record.attrs["status"] == "complete" and record.measurements
