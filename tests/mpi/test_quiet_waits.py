"""Ranks that wait while rank 0 works alone (makes the result file, writes a result, ends
the file, measures b_eff_io's one-rank partition) sleep in a barrier of beff's own
(beff.core.mpi.quiet_barrier) instead of polling in MPI's, so that on a node whose cores are
shared they leave the CPU to the rank waited for and to other jobs."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mpirun import kill_group, launcher, mpi_env, process_state, rank_pids

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]


def rank_1_states(out: Path, args: list[str], env: dict[str, str | None], after: str,
                  looks: int) -> list[str]:
    """Run ``beff ARGS -o OUT`` on 2 ranks; once rank 0 writes a stderr line that starts
    with ``after``, look at rank 1's state ``looks`` times, 20 ms apart. The job must then
    end well."""
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", *args, "-o", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=mpi_env(env), start_new_session=True)
    assert proc.stderr is not None
    states = []
    try:
        for line in proc.stderr:
            if line.startswith(after):
                break
        pid = rank_pids(str(out))[1]
        time.sleep(0.2)  # into the barrier
        for _ in range(looks):
            states.append(process_state(pid))
            time.sleep(0.02)
        _, err = proc.communicate(timeout=120)
    finally:
        kill_group(proc)
    assert proc.returncode == 0, err
    return states


def test_the_other_ranks_sleep_while_rank_0_makes_the_file(tmp_path: Path) -> None:
    """Rank 0 takes 2 s longer to make the file (a test hook): meanwhile rank 1 is asleep
    (state S) in most of 60 looks at it, where a rank polling in MPI is running or
    runnable (R) in nearly all, however loaded the node."""
    states = rank_1_states(tmp_path / "q.h5", ["imb", "mpi1", "-msglog", "0:1", "-iter", "10",
                                              "--no-progress", "PingPong"],
                           {"BEFF_TEST_SLOW_CREATE": "2"},
                           "beff: test hook: creating the result file", 60)
    assert states.count("S") >= 40, states


def test_a_rank_outside_the_b_eff_io_partition_sleeps_through_its_phases(tmp_path: Path,
                                                                       ) -> None:
    """``beff io -N 1`` on 2 ranks: rank 1 is in no partition, and waits out every phase of
    rank 0's (4 s scheduled) asleep in a fifth or more of 40 looks at it, from the first
    pattern on: 0 of 40 while it waited in MPI's allgather, 26 in a whole test session, 13
    in one of eight passes of the Open MPI part (woken each millisecond to test the barrier,
    it then waits for a CPU that rank 0's I/O and the other tests' jobs share); the
    original's ranks outside wait in MPI_Barrier, polling."""
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    states = rank_1_states(tmp_path / "io.h5", ["io", "--quick", "-N", "1", "-T", "4", "--dir",
                                                str(io_dir), "--progress"], {},
                           "progress: 1/", 40)
    assert states.count("S") >= 8, states
