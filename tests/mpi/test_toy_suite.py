"""A suite added in one new module (tests/mpi/toy_suite.py), run under mpiexec."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from beff.results import stats
from beff.results.archive import load
from tests.mpirun import beff, mpirun

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
ENV = {"BEFF_PLUGINS": "tests.mpi.toy_suite",
       "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_toy_suite_runs_with_its_metric_column_and_modes(tmp_path: Path) -> None:
    out = tmp_path / "toy.h5"
    r = mpirun(2, "imb", "toy", "-msglog", "0:2", "-iter", "50", "-time", "1", "-o", str(out),
               "--format", "imb", env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    record = load(out)
    got = [(m.benchmark, m.mode, m.nprocs) for m in record.measurements]
    assert got == [("Toy", "light", 2), ("Toy", "heavy", 2)]
    light, heavy = record.measurements
    for m in (light, heavy):
        assert m.metrics == ("t", "t_work")
        assert m.columns == ("bytes", "repetitions", "t_avg", "t_work", "work_share")
        assert m.key == f"toy/Toy/{m.mode}/np2"
    assert np.all(heavy.prepared["spin"] == 2000) and np.all(light.prepared["spin"] == 10)
    # 200 times the Wtime calls take longer: the metric measures what the mode asks for
    w_light = stats.summarize(light, metric="t_work").t_avg
    w_heavy = stats.summarize(heavy, metric="t_work").t_avg
    assert np.all(w_heavy > 20 * w_light)
    # IMB text: MODE lines and the declared column headers, in the declared order
    assert "#    MODE: LIGHT " in r.stdout and "#    MODE: HEAVY " in r.stdout
    assert "#bytes #repetitions  t_avg[usec] t_work[usec]      work[%]" in r.stdout
    shares = [float(line.split()[-1]) for line in r.stdout.splitlines()
              if line.strip() and line.split()[0] == "4"]
    assert len(shares) == 2 and shares[0] < shares[1] and 0 < shares[1] <= 100


def test_toy_suite_is_listed_with_the_plugin_and_unknown_without() -> None:
    listed = beff("list", "toy", env=ENV)
    assert listed.returncode == 0, listed.stderr
    assert "Toy suite (a test plug-in)" in listed.stdout and "Toy" in listed.stdout
    r = mpirun(1, "imb", "toy", env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.returncode == 2 and "unknown IMB suite 'toy'" in r.stderr
