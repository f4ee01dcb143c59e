"""IMB-MPI1 collectives under real MPI at 1, 2, 3 and 4 ranks; the runs share one job per
process count (tests/mpi/runs_script.py), launched as a test first needs one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from beff.bench.schedule import process_counts
from beff.results import stats
from beff.results.archive import load
from beff.results.model import Measurement
from tests.mpirun import Jobs

pytestmark = pytest.mark.mpi

COLLECTIVES = [
    "Allreduce", "Reduce", "Reduce_local", "Reduce_scatter", "Reduce_scatter_block",
    "Allgather", "Allgatherv", "Gather", "Gatherv", "Scatter", "Scatterv", "Alltoall",
    "Alltoallv", "Bcast", "Barrier",
]
REDUCTIONS = set(COLLECTIVES[:5])
ROOTED = ["Reduce", "Gather", "Gatherv", "Scatter", "Scatterv", "Bcast"]
IMB_DEFAULTS = ["PingPong", "PingPing", "Sendrecv", "Exchange", *COLLECTIVES]
# Few sizes and repetitions, fixed: no time budget to run out on a loaded node.
QUICK = ["-msglog", "1:3", "-iter", "10", "-iter_policy", "off", "-time", "600"]
DATA_SIZES, RED_SIZES = [0, 2, 4, 8], [0, 4, 8]
TITLES5 = "".join(f"{t:>13}" for t in ("#bytes", "#repetitions", "t_min[usec]", "t_max[usec]",
                                       "t_avg[usec]"))
TITLES4 = "".join(f"{t:>13}" for t in ("#repetitions", "t_min[usec]", "t_max[usec]",
                                       "t_avg[usec]"))
TYPED = ["Allreduce", "Reduce_local", "Reduce_scatter", "Gatherv", "Scatter", "Alltoallv",
         "Bcast"]
TYPES = {3: ["-data_type", "int", "-red_data_type", "double"],
         2: ["-data_type", "double", "-red_data_type", "char"]}
# Every run of this module: one job per process count, one for rank 0's corrupted messages
# (tests/mpi/runs_script.py).
JOBS: list[tuple[int, dict[str, list[str]], dict[str, str | None] | None]] = [
    (1, {"checked-1": [*COLLECTIVES, "--check", "--format", "json"]}, None),
    (2, {"checked-2": [*COLLECTIVES, "--check", "--format", "json"],
         "types-2": [*TYPED, *TYPES[2], "-msglog", "4:6", "-off_cache", "0.01,64",
                     "-root_shift", "on", "--check"]}, None),
    (3, {"checked-3": [*COLLECTIVES, "--check", "--format", "json"],
         # One batch of 8 calls: the root restarts at 0 per batch, so the last call's root
         # is 7 % NP = 1 at both 2 and 3 processes, and the check follows it.
         "root shift": [*ROOTED, "Allreduce", "-root_shift", "on", "-sync", "off", "--check",
                        "-iter", "8", "--batches", "1"],
         "types-3": [*TYPED, *TYPES[3], "-msglog", "4:6", "-off_cache", "0.01,64",
                     "-root_shift", "on", "--check"]}, None),
    # The default list minus point-to-point (tests/mpi/test_p2p.py) leaves the collectives.
    (4, {"defaults": ["-exclude", ",".join(IMB_DEFAULTS[:4]), "--format", "imb"]}, None),
    (2, {"corrupt": [*COLLECTIVES, "--check"]}, {"BEFF_TEST_CORRUPT": "1"}),
]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    return Jobs(tmp_path_factory.mktemp, "coll", [
        (nprocs, {name: ["imb", "mpi1", *QUICK, *args] for name, args in commands.items()}, env)
        for nprocs, commands, env in JOBS])


def run(jobs: Jobs, name: str) -> tuple[str, Path]:
    r = jobs.ok(name)
    return r.stdout, r.out


def by_key(measurements: list[Measurement]) -> dict[tuple[str, int], Measurement]:
    return {(m.benchmark, m.nprocs): m for m in measurements}


def assert_sound(m: Measurement, world: int, reps: int = 10) -> None:
    """Sizes as IMB rounds them, every size measured, plausible times over ranks."""
    assert m.status == ["ok"] * len(m.sizes), (m.benchmark, m.status)
    if m.benchmark == "Barrier":
        assert m.kind == "sync" and len(m.sizes) == 1
    else:
        assert m.kind == "collective"
        expected = RED_SIZES if m.benchmark in REDUCTIONS else DATA_SIZES
        assert m.sizes.tolist() == expected, m.benchmark
    assert m.times.shape == (len(m.sizes), m.nprocs)
    assert m.idle == world - m.nprocs
    assert (m.repetitions == reps).all()
    s = stats.summarize(m)
    assert np.all(np.isfinite(s.t_max)) and np.all(s.t_min > 0), m.benchmark
    # each rank's time is its raw batch times over the repetitions (no lost or extra batch)
    raw = np.nansum(m.samples, axis=2) / m.repetitions[:, None] * m.time_scale
    np.testing.assert_allclose(m.times, raw, rtol=1e-12)
    assert (m.batch_iters.sum(axis=2) == m.repetitions[:, None]).all()


@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_collectives_checked(nprocs: int, jobs: Jobs) -> None:
    stdout, out = run(jobs, f"checked-{nprocs}")
    doc = json.loads(stdout)
    counts = process_counts(nprocs, 2)
    assert counts == {1: [1], 2: [2], 3: [2, 3]}[nprocs]
    rows = {(r["benchmark"], r["nprocs"]): r["rows"] for r in doc["results"]}
    assert set(rows) == {(name, c) for name in COLLECTIVES for c in counts}
    for (name, _), table in rows.items():
        assert all(row["defects"] == 0 and row["status"] == "ok" for row in table), name
        if name in REDUCTIONS:
            assert all(row["bytes"] % 4 == 0 for row in table)
    record = load(out)
    assert record.attrs["status"] == "complete"
    for m in record.measurements:
        assert m.checked and m.defects is not None
        assert_sound(m, nprocs)
        # the printed figures are the archived per-rank times reduced over ranks, in us
        got = np.array([[r["t_min_us"], r["t_max_us"], r["t_avg_us"]]
                        for r in rows[m.benchmark, m.nprocs]])
        want = np.stack([m.times.min(axis=1), m.times.max(axis=1), m.times.mean(axis=1)], 1)
        np.testing.assert_allclose(got, want * 1e6, rtol=1e-9, err_msg=m.benchmark)


def test_default_collectives_at_four_ranks_in_imb_format(jobs: Jobs) -> None:
    stdout, out = run(jobs, "defaults")
    listed = stdout.split("# List of Benchmarks to run:\n\n", 1)[1].split("\n\n", 1)[0]
    assert listed.splitlines() == [f"# {n}" for n in COLLECTIVES]
    got = by_key(load(out).measurements)
    for name in COLLECTIVES:
        assert (name, 2) in got and (name, 4) in got and (name, 3) not in got
        assert_sound(got[name, 2], 4)
        assert_sound(got[name, 4], 4)
    dash5, dash4 = "#" + "-" * 64, "#" + "-" * 51
    blocks = dict(_imb_blocks(stdout))
    for name in COLLECTIVES[:-1]:
        head = (f"{dash5}\n# Benchmarking {name} \n# #processes = 2 \n"
                f"# ( 2 additional processes waiting in MPI_Barrier)\n{dash5}\n{TITLES5}\n")
        assert head in stdout, name
        assert f"{dash5}\n# Benchmarking {name} \n# #processes = 4 \n{dash5}\n{TITLES5}\n" \
            in stdout
        rows = blocks[name, 4]
        expected = RED_SIZES if name in REDUCTIONS else DATA_SIZES
        assert [int(r[:13]) for r in rows] == expected
        assert all(len(r) == 5 * 13 and int(r[13:26]) == 10 for r in rows)
    assert (f"{dash4}\n# Benchmarking Barrier \n# #processes = 4 \n{dash4}\n{TITLES4}\n"
            in stdout)
    (barrier_row,) = blocks["Barrier", 4]
    assert len(barrier_row) == 4 * 13 and int(barrier_row[:13]) == 10
    assert stdout.rstrip().endswith("# All processes entering MPI_Finalize")


def _imb_blocks(text: str) -> list[tuple[tuple[str, int], list[str]]]:
    """(benchmark, #processes) -> the data rows of each IMB block."""
    found = []
    pattern = r"# Benchmarking (\S+) \n# #processes = (\d+) \n(?:#.*\n)*?#-+\n +#\S.*\n"
    for match in re.finditer(pattern, text):
        rows = []
        for line in text[match.end():].splitlines():
            if not line or line.startswith("#"):
                break
            rows.append(line)
        found.append(((match.group(1), int(match.group(2))), rows))
    return found


def test_check_mode_reports_injected_corruption(jobs: Jobs) -> None:
    _, out = run(jobs, "corrupt")
    got = by_key(load(out).measurements)
    assert set(got) == {(n, 2) for n in COLLECTIVES}
    for name in COLLECTIVES[:-1]:
        d = got[name, 2].defects
        assert d is not None
        assert d[0] == 0 and (d[1:] > 0).all(), (name, d)  # size 0 moves nothing


def test_root_shift_without_sync(jobs: Jobs) -> None:
    _, out = run(jobs, "root shift")
    record = load(out)
    assert record.attrs["config"]["options"]["root_shift"] is True
    assert record.attrs["config"]["options"]["sync"] is False
    got = by_key(record.measurements)
    assert set(got) == {(n, c) for n in [*ROOTED, "Allreduce"] for c in (2, 3)}
    for m in got.values():
        assert_sound(m, 3, reps=8)
        assert m.defects is not None and int(m.defects.sum()) == 0, m.benchmark


@pytest.mark.parametrize("nprocs", [3, 2])
def test_off_cache_and_data_types(nprocs: int, jobs: Jobs) -> None:
    types = TYPES[nprocs]
    _, out = run(jobs, f"types-{nprocs}")
    record = load(out)
    red_unit = 8 if types[3] == "double" else 1
    data_unit = 4 if types[1] == "int" else 8
    assert record.attrs["config"]["options"]["off_cache"] == [0.01, 64]
    for m in record.measurements:
        unit = red_unit if m.benchmark in REDUCTIONS else data_unit
        assert (m.sizes % unit == 0).all() and m.sizes[-1] == 64
        assert m.defects is not None and int(m.defects.sum()) == 0, m.benchmark
        assert all(s == "ok" for s in m.status)
