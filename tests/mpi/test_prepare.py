"""``beff prepare``: every timed loop of the named suites compiled once and kept in the loop
cache, so that a run loads them all and compiles none (issue: start-up and memory at scale,
item 2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beff.results.archive import load
from tests.mpirun import beff_subprocess, mpirun

pytestmark = pytest.mark.mpi

LINE = re.compile(r"beff prepare: (\d+) timed loops of (.+) for .+: (\d+) compiled now, (\d+) "
                  r"were kept already")


def prepared(text: str) -> tuple[int, int, int]:
    """(loops, compiled now, kept already) of prepare's line."""
    found = LINE.search(" ".join(text.split()))
    assert found, text
    return int(found.group(1)), int(found.group(3)), int(found.group(4))


def test_a_prepared_cache_leaves_a_run_nothing_to_compile(tmp_path: Path) -> None:
    env = {"BEFF_CACHE_DIR": str(tmp_path / "cache")}
    # b_eff, the main job: its 6 loops compile in about 3 s here (IMB-P2P's 20 took 11 s)
    first = beff_subprocess("prepare", "beff", env=env, timeout=240)  # one process, no launcher
    assert first.returncode == 0, first.stderr
    loops, now, kept = prepared(first.stdout)
    assert loops >= 6 and now == loops and kept == 0, first.stdout
    out = tmp_path / "p.h5"
    run = mpirun(2, "run", "--quick", "--memory-per-proc", "1MiB", "--time-per-loop", "0.01",
                 "-o", str(out), env=env)
    assert run.returncode == 0, run.stderr
    assert load(out).attrs["loops_compiled"] == [0, 0]  # every loop loaded from the cache
    again = beff_subprocess("prepare", "beff", env=env)
    assert again.returncode == 0, again.stderr
    assert prepared(again.stdout) == (loops, 0, loops)


def test_under_mpiexec_each_loop_is_compiled_once(tmp_path: Path) -> None:
    # the other rank waits for each compile however long it takes on a loaded machine (it
    # compiles the loop itself after 10 s otherwise)
    r = mpirun(2, "prepare", "map", env={"BEFF_CACHE_DIR": str(tmp_path / "cache"),
                                         "BEFF_TEST_LOCK_WAIT_S": "200"}, timeout=240)
    assert r.returncode == 0, r.stderr
    loops, now, kept = prepared(r.stdout)
    assert now == loops and kept == 0, r.stdout  # over both ranks: one compile per loop
    assert r.stdout.count("beff prepare:") == 1  # rank 0 says it


def test_an_unknown_suite_is_one_line_and_exit_2() -> None:
    r = beff_subprocess("prepare", "mpi1", "nosuch")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "beff: error: beff prepare: no suite 'nosuch'; the suites are mpi1, nbc, mpi4, ext, "
        "rma, p2p, mt, io, beffio, beff, map"], r.stderr
