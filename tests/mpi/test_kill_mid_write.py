"""Runs killed while rank 0 writes: SIGTERM and then SIGKILL during the final merge, SIGKILL
while the result file is created. No rank outlives the job, and the file holds every result
with nothing left beside it. (Apart from tests/mpi/test_failures.py, so that the two files,
each a few tens of seconds under Open MPI, run on two workers side by side.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from beff.results.archive import load
from tests.mpirun import (
    kill_group,
    launcher,
    launcher_failed,
    mpi_env,
    rank_pids,
    stored_status,
)

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]  # also in the Open MPI tier of the tests


def started_until(cmd: list[str], env: dict[str, str | None], hook: str
                  ) -> subprocess.Popen[str]:
    """Start ``cmd`` and return once its stderr says the test hook reached ``hook`` (again,
    where the launcher itself failed to start)."""
    for _ in range(3):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, env=mpi_env(env), start_new_session=True)
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            if f"test hook: {hook}" in line:
                return proc
            seen.append(line)
        kill_group(proc)
        if not launcher_failed("".join(seen)):
            break
    raise AssertionError(f"the run ended (exit {proc.poll()}) before the test hook's {hook!r}; "
                         f"its stderr:\n{''.join(seen[-40:])}")


def _job_left(marker: str, wait_s: float) -> dict[int, int]:
    """The job's ranks still alive ``wait_s`` after the launcher ended (orphans)."""
    deadline = time.monotonic() + wait_s
    while (left := rank_pids(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


MERGE_CASES = [(after, attempt) for after in (0.0, 1.0, 2.0) for attempt in (1, 2)]


@pytest.fixture(scope="module")
def killed_mid_merge(tmp_path_factory: pytest.TempPathFactory
                     ) -> dict[tuple[float, int], tuple[Path, dict[int, int]]]:
    """Each case's job, from its start to its end: SIGTERM to the launcher ``after`` seconds
    into rank 0's final merge (made 2.5 s long by a test hook), SIGKILL one second later;
    its result file and the ranks that outlived it. A job starts once the one before has
    reached its merge (a merge that sleeps, and a rank that waits for it, need no CPU), so
    the cases' seconds of waiting run together; each case times its own signals, in a
    thread of its own."""
    done: dict[tuple[float, int], tuple[Path, dict[int, int]]] = {}
    failed: list[BaseException] = []
    ready = [threading.Event() for _ in MERGE_CASES]

    def case(i: int, after: float, attempt: int, directory: Path) -> None:
        out = directory / f"merge-{attempt}.h5"
        try:
            if i:
                ready[i - 1].wait(timeout=300)
            cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "mpi1",
                   "-msglog", "0:2", "-iter", "10", "-time", "0.1", "-o", str(out), "PingPong",
                   "PingPing"]
            proc = started_until(cmd, {"BEFF_TEST_SLOW_MERGE": "2.5"}, "merging the results")
        finally:
            ready[i].set()
        try:
            time.sleep(after)
            proc.send_signal(signal.SIGTERM)
            time.sleep(1.0)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            done[after, attempt] = (out, _job_left(str(out), 30.0))
        finally:
            kill_group(proc)

    def guarded(*args: Any) -> None:
        try:
            case(*args)
        except BaseException as exc:  # noqa: BLE001 - the case's test reports it
            failed.append(exc)

    threads = [threading.Thread(target=guarded, args=(i, after, attempt, tmp_path_factory.mktemp(
        f"merge-{after}-{attempt}"))) for i, (after, attempt) in enumerate(MERGE_CASES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return done


@pytest.mark.parametrize("after, attempt", MERGE_CASES)
def test_sigterm_then_sigkill_mid_merge_leaves_no_rank_and_every_result(
        killed_mid_merge: dict[tuple[float, int], tuple[Path, dict[int, int]]], after: float,
        attempt: int) -> None:
    """A batch system's time limit (``timeout -k``, Slurm's KillWait): SIGTERM to the
    launcher, SIGKILL one second later, landing ``after`` seconds into rank 0's final merge
    (made 2.5 s long by a test hook). No rank outlives the job, and the file holds every
    result, complete or aborted, with no part or working copy left beside it."""
    out, orphans = killed_mid_merge[after, attempt]
    assert orphans == {}, f"ranks outlived the job: {orphans}"
    status, _ = stored_status(out)
    assert status in ("complete", "aborted"), status
    assert [m.benchmark for m in load(out).measurements] == ["PingPong", "PingPing"]
    deadline = time.monotonic() + 20
    while (extra := sorted(p.name for p in out.parent.iterdir() if p != out)) and \
            time.monotonic() < deadline:
        time.sleep(0.2)  # the watcher merges what a killed rank 0 left
    assert extra == []


def test_sigkill_while_the_file_is_created_leaves_no_working_copy(tmp_path: Path) -> None:
    """Rank 0 killed while it builds the result file aside (made 5 s long by a test hook):
    its watcher, told the name before the creation, removes the working copy."""
    out = tmp_path / "created.h5"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "mpi1", "-msglog",
           "0:2", "-o", str(out), "PingPong"]
    proc = started_until(cmd, {"BEFF_TEST_SLOW_CREATE": "5"}, "creating the result file")
    try:
        assert [p.name for p in tmp_path.iterdir()] != []  # the working copy, hidden
        os.kill(rank_pids(str(out))[0], signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        kill_group(proc)
    deadline = time.monotonic() + 20
    while (left := sorted(p.name for p in tmp_path.iterdir())) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []
