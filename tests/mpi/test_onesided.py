"""IMB-EXT and IMB-RMA under real MPI at 1-4 ranks (the runs share a few jobs:
tests/mpi/runs_script.py): every default benchmark in both modes,
--check (clean and with an injected defect), both backends, -aggregate_mode, -multi, and the
IMB layout of a live run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from beff.bench.registry import AGGREGATE, NON_AGGREGATE, load_suite
from beff.bench.schedule import process_counts
from beff.results.archive import load
from tests.mpirun import Jobs, is_open_mpi, mpirun

pytestmark = pytest.mark.mpi

QUICK = ["-msglog", "0:3", "-time", "5", "-iter", "20"]
EXT = load_suite("ext")
RMA = load_suite("rma")
CORRUPTED = ["Unidir_put", "Accumulate", "Fetch_and_op", "Compare_and_swap"]
# The runs of this module but two: one job per process count, one for rank 0's corrupted
# data, one for a library without MPI-3's one-sided calls (tests/mpi/runs_script.py; one
# suite of one-sided ones, as a job sets Open MPI's one-sided workaround at its start).
# Name: (suite, flags).
JOBS: list[tuple[int, dict[str, tuple[str, list[str]]], dict[str, str | None] | None]] = [
    (2, {"ext-2": ("ext", ["--check", "--format", "json"]),
         "rma-2": ("rma", ["--check", "--format", "json"]),
         "origin": ("rma", ["Unidir_put", "One_put_all", "-iter", "40,40,7", "-iter_policy",
                            "off", "--batches", "4"]),
         "nonaggregate": ("ext", ["Unidir_Put", "Window", "-iter", "50,40,7", "-iter_policy",
                                  "dynamic", "-aggregate_mode", "non_aggregate", "--format",
                                  "imb"])}, None),
    (3, {"ext-3": ("ext", ["--check", "--format", "json"]),
         "truly passive": ("rma", ["Truly_passive_put", "-msglog", "2:3", "--format", "imb"])},
     None),
    (4, {"rma-4": ("rma", ["--check", "--format", "json"]),
         "python multi": ("ext", ["Bidir_Get", "Accumulate", "-multi", "1", "--backend",
                                  "python", "--check", "-msglog", "2:3", "--format", "imb"])},
     None),
    (2, {"corrupted": ("rma", [*CORRUPTED, "-msglog", "3:3", "--check", "--format", "csv"])},
     {"BEFF_TEST_CORRUPT": "1"}),
    (2, {"ext without": ("ext", ["Unidir_Put"]),
         "rma without": ("rma", ["Unidir_put", "Exchange_get"])},
     {"BEFF_TEST_HIDE_MPI": "Win_flush"}),
]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    return Jobs(tmp_path_factory.mktemp, "onesided", [
        (nprocs, {name: ["imb", suite, *QUICK, *args]
                  for name, (suite, args) in commands.items()}, env)
        for nprocs, commands, env in JOBS])


def ran(jobs: Jobs, name: str) -> tuple[str, Path]:
    r = jobs.ok(name)
    return r.stdout, r.out


def expected_runs(suite: str, nprocs: int) -> set[tuple[str, str, int]]:
    """(benchmark, mode, process count) of every default benchmark, as IMB runs them."""
    out = set()
    for spec in (EXT if suite == "ext" else RMA).values():
        if not spec.default:
            continue
        counts = ([2] if nprocs >= 2 else []) if spec.procs == 2 else process_counts(nprocs, 2)
        out |= {(spec.name, mode, c) for mode in spec.modes for c in counts}
    return out


@pytest.mark.parametrize(("suite", "nprocs"), [("ext", 2), ("ext", 3), ("rma", 2), ("rma", 4)])
def test_default_list_checked(suite: str, nprocs: int, jobs: Jobs) -> None:
    stdout, out = ran(jobs, f"{suite}-{nprocs}")
    doc = json.loads(stdout)
    runs = {(r["benchmark"], r["mode"], r["nprocs"]): r["rows"] for r in doc["results"]}
    assert set(runs) == expected_runs(suite, nprocs)
    for key, rows in runs.items():
        assert all(row["status"] == "ok" for row in rows), key
        assert all(row["defects"] == 0 for row in rows), key
    record = load(out)
    assert record.attrs["status"] == "complete"
    for m in record.measurements:
        spec = (EXT if suite == "ext" else RMA)[m.benchmark.lower()]
        times = m.times
        timed = np.isfinite(times)
        assert timed.any(axis=1).all(), m.benchmark  # someone timed every size
        assert np.all(times[timed] >= 0)
        if spec.sizes_rule == "element":
            assert m.sizes.tolist() == [4]
        elif suite == "ext" or spec.reduction:
            assert m.sizes.tolist() == [0, 4, 8], m.benchmark
        else:
            assert m.sizes.tolist() == [0, 1, 2, 4, 8], m.benchmark
        # -iter 20: the dynamic policy never exceeds msgspersample (IMB's n_prev), even where
        # msgs_nonaggr (100) is the start count
        assert np.all((m.repetitions >= 1) & (m.repetitions <= 20)), m.benchmark


def test_origin_only_timing_and_modes(jobs: Jobs) -> None:
    """RMA times its origins only (the target's time is NaN, left out of t_min/t_max/t_avg,
    as IMB's -1); -iter_policy off uses msgspersample in both modes; a sample is one batch
    whatever --batches says (each batch would take the lock again)."""
    _, out = ran(jobs, "origin")
    by = {(m.benchmark, m.mode): m for m in load(out).measurements}
    nonagg, agg = by[("Unidir_put", NON_AGGREGATE)], by[("Unidir_put", AGGREGATE)]
    for m in (nonagg, agg, by[("One_put_all", "")]):
        assert np.all(np.isfinite(m.times[:, 0])) and np.all(np.isnan(m.times[:, 1]))
    # -iter_policy off: msgspersample in both modes, as IMB
    assert nonagg.repetitions.tolist() == agg.repetitions.tolist() == [40] * 5
    for m in by.values():
        assert (m.batch_iters[:, 0] > 0).sum(axis=-1).tolist() == [1] * 5, m.benchmark


def test_nonaggregate_start_count_and_aggregate_mode_flag(jobs: Jobs) -> None:
    text, out = ran(jobs, "nonaggregate")
    assert "MODE: NON-AGGREGATE" in text and "MODE: AGGREGATE" not in text
    by = {m.benchmark: m for m in load(out).measurements}
    assert by["Unidir_Put"].mode == NON_AGGREGATE and by["Window"].mode == ""
    # Non-aggregate modes and Window (IMB's access "no") start from msgs_nonaggr.
    assert by["Unidir_Put"].repetitions.max() <= 7 and by["Window"].repetitions.max() <= 7


def test_injected_defect_is_reported(jobs: Jobs) -> None:
    text, _ = ran(jobs, "corrupted")
    rows = [line.split(",") for line in text.strip().splitlines()]
    header = rows[0]
    col = {name: header.index(name) for name in ("benchmark", "bytes", "defects")}
    bad = {r[col["benchmark"]] for r in rows[1:] if int(r[col["bytes"]]) > 0
           and float(r[col["defects"]]) > 0}
    assert bad == set(CORRUPTED)


def test_python_backend_and_multi(jobs: Jobs) -> None:
    text, out = ran(jobs, "python multi")
    assert "# Benchmarking Multi-Bidir_Get" in text
    record = load(out)
    assert record.attrs["overhead"]["backend"] == "python"
    bidir = [m for m in record.measurements if m.benchmark == "Bidir_Get"]
    assert {m.ngroups for m in bidir} == {2} and all(m.defects is not None for m in bidir)
    assert all(int(m.defects.sum()) == 0 for m in record.measurements)


def test_truly_passive_put_stores_both_times(jobs: Jobs) -> None:
    text, out = ran(jobs, "truly passive")
    assert "t_pure[usec] t_ovrl[usec]" in text
    assert "( 1 additional process waiting in MPI_Barrier)" in text
    (m,) = load(out).measurements
    assert m.metrics == ("t_pure", "t_ovrl")
    pure, ovrl = m.metric_times("t_pure"), m.metric_times("t_ovrl")
    assert np.all(pure[:, 0] > 0) and np.all(ovrl[:, 0] > 0)
    assert np.all(np.isnan(pure[:, 1]))  # the target times nothing
    assert np.all(m.prepared["cpu_units"][:, 1] >= 1)  # the target's computation per put


def test_library_without_mpi3_rma(jobs: Jobs) -> None:
    """An MPI-2 library (here: MPI_Win_flush hidden) runs IMB-EXT, and IMB-RMA says per
    benchmark that it cannot run, without a crash."""
    _, ext = ran(jobs, "ext without")
    assert {m.status[0] for m in load(ext).measurements} == {"ok"}
    r = jobs["rma without"]
    assert r.returncode == 0, r.stderr
    assert "Unidir_put not run: the MPI library lacks MPI_Win_flush" in r.stdout + r.stderr
    assert {m.status[0] for m in load(r.out).measurements} == {"unsupported"}


@pytest.mark.parametrize("user_value", [None, "4"])
def test_open_mpi_fast_box_workaround(user_value: str | None, tmp_path: Path) -> None:
    """Under Open MPI's launcher a one-sided run sets btl_sm_fbox_max=0 unless the user chose
    a value, and says so; under MPICH it sets nothing."""
    out = tmp_path / "w.h5"
    env = {"OMPI_MCA_btl_sm_fbox_max": user_value, "BEFF_NO_WORKAROUND": None}
    r = mpirun(2, "imb", "ext", *QUICK, "Unidir_Get", "-o", str(out), env=env)
    assert r.returncode == 0, r.stderr
    applied = load(out).attrs["workaround_settings"]
    expected = {"OMPI_MCA_btl_sm_fbox_max": "0"} if is_open_mpi() and user_value is None else {}
    assert applied == expected
    assert ("beff set OMPI_MCA_btl_sm_fbox_max=0 before MPI_Init" in r.stderr) == bool(expected)
