"""IMB-NBC and IMB-MPI4 under real MPI at 1-4 ranks: every benchmark, --check, both backends,
an injected defect, and a library without the persistent collectives. The runs share one
job per process count (tests/mpi/runs_script.py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from beff.bench.registry import load_suite
from beff.bench.schedule import process_counts
from beff.results import stats
from beff.results.archive import load
from beff.results.model import Measurement
from tests.mpirun import Jobs, mpirun

pytestmark = pytest.mark.mpi

# Few sizes and repetitions, fixed: no time budget to run out on a loaded node.
QUICK = ["-msglog", "1:3", "-iter", "10", "-iter_policy", "off", "-time", "600"]
NBC = [s.name for s in load_suite("nbc").values() if s.default]
MPI4 = [s.name for s in load_suite("mpi4").values() if s.default]
OVERLAP_KEYS = ("t_ovrl_us", "t_pure_us", "t_cpu_us", "overlap_pct")
PURE = ["Ibcast_pure", "Ireduce_pure", "Ialltoallv_pure", "Ibarrier_pure"]
BY_PYTHON = ["Ibcast", "Iallreduce", "Ibarrier"]
CORRUPTED = {"nbc": ["Ibcast", "Igather", "Iscatterv", "Ialltoall", "Iallreduce"],
             "mpi4": ["Bcast_persist", "Gatherv_persist", "Reduce_scatter_persist"]}
# The runs of this module but one: one job per process count, one for rank 0's corrupted
# messages (tests/mpi/runs_script.py). Name: (suite, flags).
JOBS: list[tuple[int, dict[str, tuple[str, list[str]]], dict[str, str | None] | None]] = [
    (1, {"nbc-1": ("nbc", ["--check", "--format", "json"])}, None),
    (2, {"nbc-2": ("nbc", ["--check", "--format", "json"]),
         "pure": ("nbc", ["--format", "csv", *PURE]),
         "python": ("nbc", ["--backend", "python", "--check", *BY_PYTHON])}, None),
    (3, {"nbc-3": ("nbc", ["--check", "--format", "json"])}, None),
    (4, {"mpi4": ("mpi4", ["--check", "--format", "imb", "-msglog", "2:3"]),
         # -multi 1 at 4 ranks: two groups of 2 run Ibcast side by side
         "multi": ("nbc", ["-multi", "1", "-npmin", "2", "--format", "imb", "Ibcast"])}, None),
    (2, {f"{suite} corrupted": (suite, ["--check", *names])
         for suite, names in CORRUPTED.items()}, {"BEFF_TEST_CORRUPT": "1"}),
]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    return Jobs(tmp_path_factory.mktemp, "nbc", [
        (nprocs, {name: ["imb", suite, *QUICK, *args]
                  for name, (suite, args) in commands.items()}, env)
        for nprocs, commands, env in JOBS])


def run(jobs: Jobs, name: str) -> tuple[str, Path]:
    r = jobs.ok(name)
    return r.stdout, r.out


def assert_overlap_sound(m: Measurement) -> None:
    """Three timings per rank and size, the reported ones from the slowest rank's t_ovrl, and
    the CPU kernel's calibration stored with each size."""
    assert m.status == ["ok"] * len(m.sizes), (m.benchmark, m.status)
    assert m.metrics == ("t_ovrl", "t_pure", "t_cpu")
    for name in m.metrics:
        t = m.metric_times(name)
        assert t.shape == (len(m.sizes), m.nprocs) and np.all(t > 0), (m.benchmark, name)
    assert m.more_samples["t_pure"].shape == m.samples.shape
    o = stats.overlap(m)
    slowest = np.argmax(m.times, axis=1)
    rows = np.arange(len(m.sizes))
    np.testing.assert_allclose(o.t_pure, m.metric_times("t_pure")[rows, slowest] * 1e6)
    np.testing.assert_allclose(o.t_ovrl, m.times.max(axis=1) * 1e6)
    assert np.all((o.percent >= 0) & (o.percent <= 100))
    assert np.all(m.prepared["cpu_units"] >= 1) and np.all(m.prepared["cpu_units_per_s"] > 0)


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_nbc_default_list_checked(nprocs: int, jobs: Jobs) -> None:
    stdout, out = run(jobs, f"nbc-{nprocs}")
    doc = json.loads(stdout)
    counts = process_counts(nprocs, 2)
    rows = {(r["benchmark"], r["nprocs"]): r["rows"] for r in doc["results"]}
    assert set(rows) == {(name, c) for name in NBC for c in counts}
    for (name, _), table in rows.items():
        assert all(row["status"] == "ok" for row in table), name
        assert all(row["defects"] in (0, None) for row in table), name
        assert all(row[k] is not None for row in table for k in OVERLAP_KEYS), name
    record = load(out)
    assert record.attrs["status"] == "complete"
    for m in record.measurements:
        assert_overlap_sound(m)
        if m.benchmark == "Ibarrier":
            assert m.kind == "sync" and len(m.sizes) == 1
        else:
            expected = [0, 4, 8] if m.benchmark in ("Ireduce", "Ireduce_scatter",
                                                    "Iallreduce") else [0, 2, 4, 8]
            assert m.sizes.tolist() == expected, m.benchmark


def test_mpi4_default_list_at_4_ranks(jobs: Jobs) -> None:
    text, out = run(jobs, "mpi4")
    assert "MPI-4 part" in text and "Allgather_persist" not in text
    record = load(out)
    seen = {(m.benchmark, m.nprocs) for m in record.measurements}
    assert seen == {(name, c) for name in MPI4 for c in (2, 4)}
    for m in record.measurements:
        assert_overlap_sound(m)
        if m.defects is not None:
            assert not m.defects.any(), m.benchmark


def test_pure_variants_have_imb_range_tables(jobs: Jobs) -> None:
    text, out = run(jobs, "pure")
    names = PURE
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["benchmark"] for r in rows} == set(names)
    for r in rows:
        assert r["t_ovrl_us"] == "" and r["overlap_pct"] == ""  # no overlap pass
    for m in load(out).measurements:
        assert m.metrics == ("t",) and not m.prepared
        # IMB's range table: t_min/t_max/t_avg of the per-rank pure times, in us
        got = np.array([[float(r[k]) for k in ("t_min_us", "t_max_us", "t_avg_us")]
                        for r in rows if r["benchmark"] == m.benchmark])
        want = np.stack([m.times.min(axis=1), m.times.max(axis=1), m.times.mean(axis=1)], 1)
        np.testing.assert_allclose(got, want * 1e6, rtol=1e-6, err_msg=m.benchmark)


@pytest.mark.parametrize("suite", sorted(CORRUPTED))
def test_check_finds_an_injected_defect(suite: str, jobs: Jobs) -> None:
    """Rank 0 corrupts its send pattern: every benchmark where another rank checks what rank
    0 sent must count defects."""
    _, out = run(jobs, f"{suite} corrupted")
    record = load(out)
    assert [m.benchmark for m in record.measurements] == CORRUPTED[suite]
    for m in record.measurements:
        assert m.defects is not None and m.defects[m.sizes > 0].all(), m.benchmark


def test_python_backend_agrees_on_the_layout(jobs: Jobs) -> None:
    _, out = run(jobs, "python")
    names = BY_PYTHON
    record = load(out)
    assert record.attrs["overhead"]["backend"] == "python"
    assert [m.benchmark for m in record.measurements] == names
    for m in record.measurements:
        assert_overlap_sound(m)
        assert m.attrs["backend"] == "python"
        assert m.defects is None or not m.defects.any()


def test_library_without_persistent_collectives(tmp_path: Path) -> None:
    """An MPI-3 library (simulated: the MPI-4 calls are hidden) gets one line per benchmark,
    an unsupported record in the file, and no crash."""
    out = tmp_path / "old.h5"
    names = ["Bcast_persist", "Barrier_persist_pure"]
    r = mpirun(2, "imb", "mpi4", *QUICK, *names, "-o", str(out), "--format", "imb",
               env={"BEFF_TEST_HIDE_MPI": "Bcast_init,Barrier_init"})
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "not run" in ln]
    assert len(lines) == 2 and all("MPI_Barrier_init" in ln for ln in lines), r.stderr
    assert "# Benchmarking" not in r.stdout
    record = load(out)
    assert record.attrs["status"] == "complete"
    assert [(m.benchmark, m.unsupported) for m in record.measurements] == [
        (n, True) for n in names]
    assert any("not run" in w for w in record.attrs["warnings"])


def test_multi_groups_get_their_own_overlap_rows(jobs: Jobs) -> None:
    """-multi 1 at 4 ranks: two groups of 2 run Ibcast side by side; each group's row holds
    the figures of its own slowest rank."""
    text, out = run(jobs, "multi")
    assert "# Benchmarking Multi-Ibcast " in text
    titles = "".join(f"{t:>13}" for t in ("Group", "#bytes", "#repetitions", "t_ovrl[usec]",
                                            "t_pure[usec]", "t_CPU[usec]", " overlap[%]"))
    assert titles in text
    m = next(m for m in load(out).measurements if m.ngroups == 2)
    for g in (0, 1):
        o = stats.overlap(m, g)
        mine = m.times[:, m.group == g]
        np.testing.assert_allclose(o.t_ovrl, mine.max(axis=1) * 1e6)
        assert np.all(np.isfinite(o.percent))
