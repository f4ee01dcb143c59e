"""`beff compare` of real runs: a run against itself is no different anywhere, and a run at
other ranks names that difference before any figure."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beff.core import disturbance
from tests.mpirun import beff, is_open_mpi_cached, launcher, mpi_env, mpirun

pytestmark = pytest.mark.mpi

PINGPONG = ("imb", "mpi1", "PingPong", "-msglog", "0:4", "-time", "0.2")


def test_compare_a_run_with_itself_and_with_a_run_at_three_ranks(tmp_path: Path) -> None:
    a, c = tmp_path / "a.h5", tmp_path / "c.h5"
    run = mpirun(2, *PINGPONG, "-o", str(a), timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    same = beff("compare", str(a), str(a), "--format", "json")
    assert same.returncode == 0, same.stderr
    doc = json.loads(same.stdout)
    # 0, 1, 2, 4, 8 and 16 bytes, less those a busy machine timed out
    assert doc["differences"] == [] and 1 <= doc["tested"] == len(doc["rows"]) <= 6
    assert {r["verdict"] for r in doc["rows"]} == {"no significant difference"}
    assert all(r["a_batches"] == 10 and r["ratio_low"] <= 1 <= r["ratio_high"]
               for r in doc["rows"])
    run = mpirun(3, *PINGPONG, "-npmin", "2", "-o", str(c), timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    other = beff("compare", str(a), str(c), env={"COLUMNS": "200"})
    assert other.returncode == 0, other.stderr
    lines = other.stdout.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("t_avg per iteration"))
    assert "warning: nprocs differs: 2 vs 3" in lines[:title]
    assert lines[0].startswith("The runs differ in settings")


# Batches of 2,000 repetitions, each longer than the scheduler's time slices, so that every
# batch of the burned run shares its core (batches of 100 mostly fit between two slices:
# their median was unchanged, and the test saw a few very slow batches only). Measured here:
# 2.5 s quiet, 4.5-6.3 s burned, every row about 2x slower (5,000 per batch: 7.5 s quiet).
MT = ("imb", "mt", "PingPongMT", "AllReduceMT", "-count", "1,16384", "-repeat", "20000",
      "-warmup", "100", "--no-progress")
# One burner on each core, beside the rank bound there: each rank gets half its core, in
# the scheduler's time slices. (Unbound burners were no sure slow-down: the scheduler moved
# them, and the small sizes even came out faster.)
BURNER = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def mt_run(out: Path) -> None:
    cmd = [launcher(), "-n", "2", *(["-bind-to", "core"] if not is_open_mpi_cached() else
                                    ["--bind-to", "core"]),
           sys.executable, "-m", "beff", *MT, "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=mpi_env({"OMP_NUM_THREADS": "1"}))
    assert r.returncode == 0, r.stderr


@pytest.mark.quiet  # alone: the other tests' jobs would load the quiet run's cores
def test_an_mt_run_beside_cpu_burners_is_found_slower(tmp_path: Path) -> None:
    """IMB-MT measures in batches (10 by default): its rows have intervals, and compare
    tests them. A CPU burner on each rank's core slows the ranks down, and compare calls the
    second run slower, more often than faster. The premise is a quiet first run: where
    processes outside the test session took more than a quarter of the CPUs during it (the
    node's busy seconds less the launch's), there is no quiet run to compare with, and the
    test says so and skips."""
    quiet, burned = tmp_path / "quiet.h5", tmp_path / "burned.h5"
    before, busy, began = _children_cpu(), disturbance.busy_seconds(), time.monotonic()
    mt_run(quiet)
    if busy is not None and (now := disturbance.busy_seconds()) is not None:
        others = (now - busy - (_children_cpu() - before)) / (
            (time.monotonic() - began) * len(os.sched_getaffinity(0)))
        if others > 0.25:
            pytest.skip(f"processes outside the tests took {others:.0%} of the CPUs during "
                        "the quiet run: no quiet run to compare a burned one with")
    cores = sorted(os.sched_getaffinity(0))[:2]
    burners = [subprocess.Popen([sys.executable, "-c", BURNER, str(c)]) for c in cores]
    try:
        time.sleep(0.5)
        mt_run(burned)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    got = beff("compare", str(quiet), str(burned), "--format", "json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    verdicts = [r["verdict"] for r in doc["rows"]]
    assert doc["tested"] == len(doc["rows"]) == 4, doc["rows"]
    assert all(r["a_batches"] == 10 == r["b_batches"] for r in doc["rows"])
    assert "slower" in verdicts and verdicts.count("slower") > verdicts.count("faster"), \
        [(r["benchmark"], r["nbytes"], r["ratio"], r["verdict"]) for r in doc["rows"]]


def test_a_p2p_run_compared_with_itself_is_no_different_anywhere(tmp_path: Path) -> None:
    a = tmp_path / "p2p.h5"
    run = mpirun(2, "imb", "p2p", "PingPong", "-msglen", str(_lengths(tmp_path)), "-iter",
                 "200", "--no-progress", "-o", str(a), timeout=300)
    assert run.returncode == 0, run.stderr
    got = beff("compare", str(a), str(a), "--format", "json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    assert doc["differences"] == [] and doc["tested"] == len(doc["rows"]) == 3
    assert {r["verdict"] for r in doc["rows"]} == {"no significant difference"}
    assert all(r["a_batches"] == 10 and r["ratio_low"] <= 1 <= r["ratio_high"]
               for r in doc["rows"])


def _lengths(tmp_path: Path) -> Path:
    path = tmp_path / "lengths.txt"
    path.write_text("8\n1024\n65536\n")
    return path
