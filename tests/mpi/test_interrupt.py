"""Ctrl-C at any moment of a run, from the first import on: one line, exit 130, no
traceback on any rank (issue: hardening round 3, item 3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mpirun import is_open_mpi_cached, kill_group, launcher, mpi_env

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]


@pytest.mark.parametrize("after", [0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5])
def test_ctrl_c_at_any_moment_is_one_line(after: float, tmp_path: Path) -> None:
    """SIGINT to the launcher and every rank (what a terminal's Ctrl-C sends) ``after``
    seconds into the job: while Python loads beff, in MPI_Init, in the start-up, or in the
    first benchmark, depending on the machine's load. Whatever it hits, the job ends with
    one line and 130, or has already finished with 0."""
    out = tmp_path / "c.h5"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "mpi1", "-msglog",
           "0:4", "-time", "0.3", "-o", str(out), "PingPong", "PingPing"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=mpi_env(), start_new_session=True)
    try:
        time.sleep(after)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        kill_group(proc)
    if "init_import_site" in err:
        return  # CPython itself was still starting (its site module), before any of beff
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    if proc.returncode == 0:
        return  # it finished first (not on a loaded machine, at these moments)
    ours = [line for line in err.splitlines() if line.startswith("beff:")]
    if is_open_mpi_cached():  # prterun ends the ranks itself, and stops forwarding their
        assert len(ours) <= 1, err  # output as it tears down; its code is its own
        return
    assert len(ours) == 1 and ours[0].startswith("beff: interrupted (SIGINT)"), err
    assert proc.returncode == 130, err
