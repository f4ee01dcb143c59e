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
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.mpirun import (
    is_open_mpi_cached,
    kill_group,
    launcher,
    mpi_env,
    only_waits,
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


def start_stopped(job: str, point: str, limit: list[str], tmp_path: Path
                  ) -> tuple[subprocess.Popen[str], float, float | None]:
    """Start ``job`` on 2 ranks with rank 1 stopping itself at ``point``; return once rank 1
    is seen stopped (or the job has ended): the job, when it started and when rank 1 was
    seen stopped."""
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
    while proc.poll() is None and stopped is None and time.monotonic() - started < 120:
        pid = rank_pids(str(out)).get(1)
        if pid is not None and process_state(pid) == "T":
            stopped = time.monotonic()
            only_waits(str(out))
        time.sleep(0.05)
    return proc, started, stopped


@dataclass
class Stopped:
    """A job that ended: its process and stderr, the seconds from its start and from the
    stop to its end, and the directory of its files."""

    proc: subprocess.Popen[str]
    err: str
    elapsed: float
    waited: float
    directory: Path


def wait_for_all(jobs: dict[Any, tuple[subprocess.Popen[str], float, float | None, Path]]
                 ) -> dict[Any, Stopped]:
    """Wait for every job to end (whatever is left of one is killed), each in a thread of
    its own, so that each end is timed as it comes."""
    done: dict[Any, Stopped] = {}

    def wait(key: Any) -> None:
        proc, started, stopped, directory = jobs[key]
        try:
            _, err = proc.communicate(timeout=120)
        finally:
            kill_group(proc)
        end = time.monotonic()
        assert stopped is not None, f"rank 1 was never seen stopped; stderr:\n{err}"
        done[key] = Stopped(proc, err, end - started, end - stopped, directory)

    threads = [threading.Thread(target=wait, args=(key,)) for key in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done


Done = dict[tuple[str, str, str], Stopped]
# (job, point, limit) of every test: the jobs are started one after the other, each once
# rank 1 of the one before is stopped (a stopped rank, and its partner waiting for it, need
# no CPU), so their limits run out together: each job's times are its own.
CASES = {
    **{("stall", job, point): (job, point, ["--stall-timeout", str(STALL_S)])
       for job, point in [("imb", "calibration"), ("io", "backend"), ("run", "metadata"),
                          ("imb", "end")]},
    **{("timeout", job, point): (job, point, ["--timeout", str(TIMEOUT_S)])
       for job, point in [("imb", "backend"), ("io", "init"), ("run", "init")]},
    ("config", "imb", "backend"): ("imb", "backend", ["--config", "{tmp}/limits.toml"]),
}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Done:
    jobs = {}
    for key, (job, point, limit) in CASES.items():
        tmp = tmp_path_factory.mktemp("-".join(key))
        (tmp / "limits.toml").write_text(f"stall_timeout = {STALL_S}\n")
        jobs[key] = (*start_stopped(job, point,
                                    [a.replace("{tmp}", str(tmp)) for a in limit], tmp), tmp)
    return wait_for_all(jobs)


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
def test_stall_timeout_holds_during_start_up(job: str, point: str, stopped: Done) -> None:
    got = stopped["stall", job, point]
    proc, err, waited = got.proc, got.err, got.waited
    assert_fired(proc, err, point, "start-up (" if point != "calibration" else
                 "PingPong at 2 processes, 0 bytes")
    assert f"made no progress for {STALL_S} s" in err, err
    print(f"{job} stopped at {point}: --stall-timeout {STALL_S} fired {waited:.1f} s after")
    assert waited < WALL * STALL_S, waited


@pytest.mark.parametrize("job,point", [("imb", "backend"), ("io", "init"), ("run", "init")])
def test_timeout_holds_during_start_up(job: str, point: str, stopped: Done) -> None:
    got = stopped["timeout", job, point]
    proc, err, elapsed = got.proc, got.err, got.elapsed
    assert_fired(proc, err, point, f"the run exceeded --timeout {TIMEOUT_S} s")
    print(f"{job} stopped at {point}: --timeout {TIMEOUT_S} ended it {elapsed:.1f} s in")
    assert TIMEOUT_S <= elapsed < WALL * TIMEOUT_S, elapsed  # never before --timeout


def test_the_config_file_sets_the_start_up_limit(stopped: Done) -> None:
    """``stall_timeout`` from the TOML file holds from MPI_Init too (every rank reads it
    before MPI starts)."""
    got = stopped["config", "imb", "backend"]
    proc, err, waited = got.proc, got.err, got.waited
    assert_fired(proc, err, "backend", "start-up (selecting the timed-loop backend)")
    assert waited < WALL * STALL_S, waited


def test_a_rank_stopped_after_its_last_result_trips_the_stall_guard(stopped: Done) -> None:
    """The end of the run is guarded too: rank 0 has written every result, then waits for
    the stopped rank in the final barrier until --stall-timeout ends the job; the file stays
    complete."""
    got = stopped["stall", "imb", "end"]
    proc, err, waited = got.proc, got.err, got.waited
    assert_fired(proc, err, "end", "the end of the run")
    assert waited < WALL * STALL_S, waited
    from beff.results.archive import load

    record = load(got.directory / "imb-end.h5")
    assert record.attrs["status"] == "complete" and record.measurements
