"""A run says when it was disturbed (beff.core.disturbance): each node's record of the CPU
time that other processes took, stored in the file, and a warning that names the
benchmarks it overlapped. Real jobs, real CPU burners."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beff.core import disturbance
from beff.results.archive import load
from tests.mpirun import mpirun

pytestmark = pytest.mark.mpi

# Fixed repetitions (no time budget to run out): about 2 s quiet on the 2-core VM, longer
# beside the burners, so that the record has samples between the sizes.
ARGS = ["imb", "mpi1", "PingPong", "Allreduce", "-msglog", "0:14", "-iter_policy", "off",
        "-iter", "3000", "-time", "600", "--no-progress"]


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@pytest.mark.quiet  # alone: its burners slow the other tests' ping-pongs to a time slice per
# round trip, and theirs its own (a fresh-clone run: this test and the slow-not-hung one
# beside it took 102 s and 105 s, against about 5 s and 11 s apart)
def test_a_run_beside_two_cpu_burners_is_marked_disturbed(tmp_path: Path) -> None:
    out = tmp_path / "burned.h5"
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.5)  # both spinning before the job starts
        r = mpirun(2, *ARGS, "-o", str(out), timeout=600)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert r.returncode == 0, r.stderr
    record = load(out).attrs["disturbance"]
    assert len(record["nodes"]) == 1 and len(record["nodes"][0]["samples"]) >= 2, record
    found = disturbance.disturbed(record)
    assert found, disturbance.intervals(record)
    # two burners on two cores, beside two busy ranks: they take about half of the CPUs
    assert max(i.share for i in found) > 0.25, found
    said = [w for w in load(out).attrs["warnings"] if w.startswith("disturbed run")]
    assert len(said) == 1, load(out).attrs["warnings"]
    assert "mpi1/PingPong/np2" in said[0] or "mpi1/Allreduce/np2" in said[0], said
    assert "disturbed run" in r.stderr  # said during the run, as the other warnings


@pytest.mark.quiet  # alone: the other tests' jobs would disturb it (tests/conftest.py)
def test_a_quiet_run_is_not_marked_and_its_record_holds_the_jobs_cpu_time(
        tmp_path: Path) -> None:
    """Run alone, the job is not marked disturbed, unless something outside the test
    session took the CPUs meanwhile: then it is. Which one the machine was, the test
    measures itself (the node's busy seconds less the launch's, over the launch's wall
    time), and it asks for a verdict only where that is clear (below 5 %, or above 25 % of
    the CPUs; the record's threshold is 10 %). The stored figures are what the processes
    used: the ranks' CPU seconds between the first and last sample are at most what the
    whole launch took (its children's rusage: ranks, launcher, start-up) and at least a part
    of it; the node's busy seconds include them. The verdict is the record's own arithmetic:
    an interval is disturbed exactly when (busy - job) / (wall x CPUs) is above the stored
    share."""
    out = tmp_path / "quiet.h5"
    before, busy_before, began = children_cpu(), disturbance.busy_seconds(), time.monotonic()
    r = mpirun(2, *ARGS, "-o", str(out), timeout=600)
    used = children_cpu() - before
    wall, busy_after = time.monotonic() - began, disturbance.busy_seconds()
    assert r.returncode == 0, r.stderr
    record = load(out).attrs["disturbance"]
    (node,) = record["nodes"]
    rows = node["samples"]
    assert record["columns"] == ["time", "busy_s", "job_s", "load1"]
    assert node["cpus"] >= 1 and len(rows) >= 2
    job = rows[-1][2] - rows[0][2]
    busy = rows[-1][1] - rows[0][1]
    assert 0.2 * used < job <= used + 0.05, (job, used)  # /proc's ticks are 10 ms
    assert busy >= job - 0.05, (busy, job)
    assert [t for t, *_ in rows] == sorted(t for t, *_ in rows)
    keys = [w[0] for w in record["windows"]]
    assert keys == ["mpi1/PingPong/np2", "mpi1/Allreduce/np2"]
    for i in disturbance.intervals(record):
        others = i.share * (i.end - i.start) * node["cpus"]
        assert others >= 0
        assert (i in disturbance.disturbed(record)) == (i.share > record["share"])
    marked = any(w.startswith("disturbed run") for w in load(out).attrs["warnings"])
    assert marked == bool(disturbance.disturbed(record))
    assert busy_before is not None and busy_after is not None
    others = (busy_after - busy_before - used) / (wall * node["cpus"])
    if others < 0.05:  # quiet, as a test run alone is on an idle machine
        assert not marked, (others, disturbance.intervals(record))
    elif others > 0.25:  # a loaded machine: the run must say so
        assert marked, (others, disturbance.intervals(record))
