"""``--per-iteration`` (IMB-MPI1 and IMB-P2P): single iterations' times in the file, and their
tails (p50, p90, p99, max over the slowest rank of each iteration) in every format."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from beff.results.archive import load
from tests.mpirun import beff, mpirun

pytestmark = pytest.mark.mpi

REPS = 3000
MOST = 500  # kept per size and rank: every 6th of the 3,000


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("per-iteration") / "pi.h5"
    r = mpirun(2, "imb", "mpi1", "PingPong", "Allreduce", "Barrier", "-msglog", "0:3",
               "-iter_policy", "off", "-iter", str(REPS), "-time", "600", "--per-iteration",
               "--per-iteration-max", str(MOST), "--no-progress", "-o", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    for column in ("p50", "p99", "max"):
        assert column in r.stdout, r.stdout  # the table's columns
    return out


P2P_REPS = 600
P2P_MOST = 200  # every 3rd


@pytest.fixture(scope="module")
def p2p_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """IMB-P2P's seven patterns that run on 4 ranks (Stencil3D needs 8), each loop's twin."""
    out = tmp_path_factory.mktemp("per-iteration-p2p") / "p2p.h5"
    r = mpirun(4, "imb", "p2p", "-msglog", "2:3", "-iter", str(P2P_REPS), "-pause", "0",
               "--per-iteration", "--per-iteration-max", str(P2P_MOST), "--no-progress",
               "-o", str(out), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "p99" in r.stdout, r.stdout
    return out


def kept(path: Path, ranks: int, reps: int, most: int) -> None:
    """Every measured benchmark kept every (reps / most)-th iteration of every rank."""
    measured = [m for m in load(path).measurements if not m.unsupported]
    assert measured
    for m in measured:
        assert m.iterations is not None, m.benchmark
        S, R, M = m.iterations.shape
        assert (S, R) == (len(m.sizes), ranks) and M == math.ceil(reps / math.ceil(reps / most))
        assert np.isfinite(m.iterations).all() and (m.iterations > 0).all(), m.benchmark
        # the recorded iterations are some of the timed ones: on each rank they add up to no
        # more than the loop's own seconds (the batches'; the tails are scaled as t is)
        recorded = m.iterations.sum(axis=2) / m.time_scale
        timed = np.nansum(m.samples, axis=2)
        assert (recorded <= timed * (1 + 1e-9)).all(), (m.benchmark, recorded, timed)


def test_the_file_keeps_every_sixth_iteration_of_every_rank(run: Path) -> None:
    kept(run, 2, REPS, MOST)


def test_imb_p2p_keeps_every_third_iteration_of_every_pattern(p2p_run: Path) -> None:
    kept(p2p_run, 4, P2P_REPS, P2P_MOST)
    names = {m.benchmark for m in load(p2p_run).measurements if not m.unsupported}
    assert names == {"PingPong", "PingPing", "Unirandom", "Birandom", "Corandom", "Stencil2D",
                     "SendRecv_Replace"}, names


@pytest.mark.parametrize("which", ["mpi1", "p2p"])
def test_the_tails_are_numpys_percentiles_of_the_slowest_rank_per_iteration(
        which: str, request: pytest.FixtureRequest) -> None:
    run = request.getfixturevalue("run" if which == "mpi1" else "p2p_run")
    shown = beff("show", str(run), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    rows = {(row["benchmark"], row["bytes"]): row for res in doc["results"]
            for row in res["rows"]}
    for m in load(run).measurements:
        if m.unsupported:
            continue
        assert m.iterations is not None
        for s, size in enumerate(m.sizes):
            slowest = m.iterations[s].max(axis=0) * 1e6
            row = rows[m.benchmark, int(size) if "bytes" in m.columns else None]
            for key, q in (("p50_us", 50), ("p90_us", 90), ("p99_us", 99)):
                assert row[key] == pytest.approx(np.percentile(slowest, q), rel=1e-9)
            assert row["max_us"] == pytest.approx(slowest.max(), rel=1e-9)
            assert row["p50_us"] <= row["p90_us"] <= row["p99_us"] <= row["max_us"]
    csv = beff("show", str(run), "--format", "csv")
    header = csv.stdout.splitlines()[0].split(",")
    assert header[-4:] == ["p50_us", "p90_us", "p99_us", "max_us"]


def test_without_it_nothing_is_recorded_and_other_suites_refuse_it(tmp_path: Path) -> None:
    out = tmp_path / "plain.h5"
    r = mpirun(2, "imb", "mpi1", "PingPong", "-msglog", "0:1", "-iter_policy", "off",
               "-iter", "100", "--no-progress", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert all(m.iterations is None for m in load(out).measurements)
    assert "p99" not in r.stdout
    shown = json.loads(beff("show", str(out), "--format", "json").stdout)
    assert all("p99_us" not in row for res in shown["results"] for row in res["rows"])
    refused = beff("imb", "nbc", "--per-iteration", "-o", str(tmp_path / "never.h5"))
    assert refused.returncode == 2 and "--per-iteration" in refused.stderr, refused.stderr


def test_the_report_draws_the_tails(run: Path, tmp_path: Path) -> None:
    png = tmp_path / "tails.png"
    r = beff("plot", str(run), "-b", "Allreduce/tails", "-o", str(png))
    assert r.returncode == 0 and png.stat().st_size > 10_000, r.stderr
    # a run without --per-iteration has no such figure
    other = tmp_path / "plain.h5"
    made = mpirun(2, "imb", "mpi1", "Allreduce", "-msglog", "0:1", "-iter_policy", "off",
                  "-iter", "100", "--no-progress", "-o", str(other))
    assert made.returncode == 0, made.stderr
    plain = beff("plot", str(other), "-b", "Allreduce/tails", "-o", str(tmp_path / "x.png"))
    assert plain.returncode == 2, plain.stderr
