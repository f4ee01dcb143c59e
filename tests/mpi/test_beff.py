"""b_eff (`beff run`) under real MPI: completes, stores everything, recomputes exactly."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from beff.effbw.view import beff_summary
from beff.patterns import reduce_beff
from beff.results.archive import load
from tests.mpirun import Jobs, beff, launcher, mpi_env, mpirun

pytestmark = pytest.mark.mpi
QUICK = ["run", "--quick", "--memory-per-proc", "16MiB", "--no-progress", "--time-per-loop",
         "0.01"]
SEEDS = {2: 7, 3: 11, 4: 42}  # the quick runs' own seeds, one per process count


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    """The runs the tests check: a quick run at 2, 3 and 4 ranks ("quick-N"), each with its
    seed (b_eff's three methods at 2 ranks, sendrecv alone at 3 and 4), and the opt-in methods
    at 2 ranks ("opt in"); one job per process count
    (tests/mpi/runs_script.py). The 2-rank quick run takes its mode, methods and memory
    from a TOML file (good.toml beside its result file), its loop time and seed from
    flags."""
    return Jobs(tmp_path_factory.mktemp, "beff", [
        (2, {"quick-2": ["run", "--config", "{dir}/good.toml", "--time-per-loop", "0.01",
                         "--no-progress", "--seed", str(SEEDS[2])],
             "opt in": [*QUICK, "--methods", "sendrecv,irecv-send,isend-recv", "--format",
                        "json", "--hugepages"]}, None),
        # one method where the job is oversubscribed: at 3 ranks the three took 10.7 CPU-s of
        # a session (one took 3.5), and 17 s at 4 ranks
        (3, {"quick-3": [*QUICK, "--methods", "sendrecv", "--seed", str(SEEDS[3])]}, None),
        (4, {"quick-4": [*QUICK, "--methods", "sendrecv", "--seed", str(SEEDS[4])]}, None),
    ], files={"good.toml": '[b_eff]\nquick = true\n'
                           'methods = ["sendrecv", "alltoallv", "nonblocking"]\n'
                           'memory_per_proc = "16MiB"\n'})


def done(quick_runs: Jobs, name: str) -> tuple[str, Path]:
    r = quick_runs.ok(name)
    return r.stdout, r.out


def gmean(x: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(x))))


@pytest.mark.parametrize("nprocs", [2, 3, 4])
def test_quick_run_completes_and_prints_the_final_line(nprocs: int, quick_runs: Jobs) -> None:
    stdout, path = done(quick_runs, f"quick-{nprocs}")
    line = stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"b_effSHORT = +\d+\.\d{{3}} MB/s = +\d+\.\d{{3}} \* +{nprocs} PEs "
                        r"with  16 MB/PE on \S+ .+", line), line
    record = load(path)
    assert record.attrs["status"] == "complete"
    summary = beff_summary(record)
    assert summary is not None
    assert summary["mode"] == "b_effSHORT" and summary["nprocs"] == nprocs
    assert summary["lmax_bytes"] == 131072 and len(summary["per_length"]) == 21
    assert summary["b_eff_MBps"] > 0 and summary["pingpong_latency_us"] > 0
    assert summary["buffers"] == "malloc-like"


@pytest.mark.parametrize("run", ["quick-2", "quick-3"])
def test_b_eff_recomputed_from_the_raw_data(quick_runs: Jobs, run: str) -> None:
    """The spec's formulas, written out independently, on the stored per-rank minima: of
    b_eff's three methods (the maximum over them) at 2 ranks, of one at 3."""
    _, path = done(quick_runs, run)
    with h5py.File(path, "r") as f:
        g = f["beff"]
        bw_min = g["bw_min"][()]  # [rep, len, pat, meth], min over ranks, B/s
        scale = g["all_msg_cnt"][()] / g["sr_count"][()]
        kinds = [k.decode() for k in g["kinds"][()]]
        labels = [k.decode() for k in g["labels"][()]]
        assert "summary" not in g.attrs  # derived figures are not stored (schema 2)
    assert bw_min.shape[3] == (3 if run == "quick-2" else 1)
    summary = beff_summary(load(path))
    assert summary is not None
    b = np.nan_to_num(bw_min, nan=0.0) * scale[None, None, :, None]
    b_pl = b.max(axis=(0, 3))  # B_p(L)
    b_p = b_pl.mean(axis=0)  # B_p
    rings = [i for i, k in enumerate(kinds) if k == "ring"]
    rand = [i for i, k in enumerate(kinds) if k == "random"]
    assert len(rings) == 6 and len(rand) == 6
    b_ring, b_random = gmean(b_p[rings]), gmean(b_p[rand])
    b_eff = np.sqrt(b_ring * b_random)
    assert summary["b_ring_MBps"] == pytest.approx(b_ring / 1e6, rel=1e-9)
    assert summary["b_random_MBps"] == pytest.approx(b_random / 1e6, rel=1e-9)
    assert summary["b_eff_MBps"] == pytest.approx(b_eff / 1e6, rel=1e-9)
    lmax = np.sqrt(gmean(b_pl[-1, rings]) * gmean(b_pl[-1, rand]))
    assert summary["b_eff_lmax_MBps"] == pytest.approx(lmax / 1e6, rel=1e-9)
    assert summary["ring_lmax_MBps"] == pytest.approx(gmean(b_pl[-1, rings]) / 1e6, rel=1e-9)
    first = np.sqrt(gmean(b_pl[0, rings]) * gmean(b_pl[0, rand]))
    nprocs = int(run.split("-")[1])  # the latency is per process
    assert summary["latency_us"] == pytest.approx(nprocs / first * 1e6, rel=1e-9)
    pp = labels.index("one PingPong Pair")
    pp_best = b[:, :, pp, 0].max(axis=0)
    assert summary["pingpong_latency_us"] == pytest.approx(1e6 / pp_best[0], rel=1e-9)
    assert summary["pingpong_bandwidth_MBps"] == pytest.approx(pp_best[-1] / 1e6, rel=1e-9)


def test_seed_reproduces_the_random_patterns(quick_runs: Jobs) -> None:
    """The run's random rings are those the seed gives (b_eff 3.6's drand48 stream, a pure
    function: tests/unit/test_beff_probing.py), so a second run with the seed repeats them."""
    from beff.patterns import random_permutations

    _, a = done(quick_runs, "quick-4")
    with h5py.File(a, "r") as f:
        stored = f["beff/random_perm"][()]
        seed = int(f["beff"].attrs["seed"])
    assert seed == 42
    np.testing.assert_array_equal(stored, random_permutations(4, len(stored), 42))
    assert not np.array_equal(stored, random_permutations(4, len(stored), 43))
    for perm in stored:
        assert sorted(perm.tolist()) == [0, 1, 2, 3]


def test_opt_in_methods_stay_out_of_the_official_figure(quick_runs: Jobs) -> None:
    stdout, path = done(quick_runs, "opt in")
    (summary,) = json.loads(stdout)["results"]
    assert summary["buffers"] == "hugepage"
    assert summary["methods"] == ["sendrecv", "irecv-send", "isend-recv"]
    assert summary["methods_in_b_eff"] == ["sendrecv"]
    # recomputed from the stored data: b_eff uses the official method only, the other
    # figure all three
    rec = load(path).result("beff")
    assert rec is not None and rec.official == [True, False, False]
    b = rec.pattern_b()
    lengths = [int(x) for x in rec.lengths]
    official = reduce_beff(b[..., :1], nprocs=2, kinds=rec.kinds, lengths=lengths)
    every = reduce_beff(b, nprocs=2, kinds=rec.kinds, lengths=lengths)
    assert summary["b_eff_MBps"] == pytest.approx(official.b_eff / 1e6, rel=1e-12)
    assert summary["b_eff_all_methods_MBps"] == pytest.approx(every.b_eff / 1e6, rel=1e-12)
    r = beff("show", str(path))
    assert r.returncode == 0 and "not official" in r.stdout and "b_effSHORT =" in r.stdout


def test_a_corrupted_message_aborts_with_a_detailed_report(tmp_path: Path) -> None:
    out = tmp_path / "bad.h5"
    r = mpirun(2, *QUICK, "-o", str(out), env={"BEFF_TEST_CORRUPT": "1"}, timeout=60)
    assert r.returncode != 0
    line = next(ln for ln in r.stderr.splitlines() if "b_eff data check failed" in ln)
    for needle in ("on rank", "pattern 0 ring-1*2fix", "method sendrecv", "length 1",
                   "offset", "expected first/last byte", "got"):
        assert needle in line, line
    assert "aborts the job" in r.stderr


def test_toml_layers_under_flags(quick_runs: Jobs) -> None:
    """A TOML value no flag was given for is used (the 2-rank quick run's; a bad one:
    tests/mpi/test_bad_input.py, "run config memory")."""
    _, out = done(quick_runs, "quick-2")
    toml = out.parent / "good.toml"
    rec = load(out)
    result = rec.result("beff")
    assert result is not None and result.short
    assert result.methods == ["sendrecv", "alltoallv", "nonblocking"]
    assert result.time_per_loop == 0.01
    sources = rec.attrs["config_sources"]
    assert sources["quick"] == f"config:{toml}" and sources["time_per_loop"] == "cli"
    assert sources["memory_per_proc"].startswith("config:")


def test_sixty_second_rule_with_a_fake_timer(tmp_path: Path) -> None:
    """Slow largest lengths: the rule fires in every repetition; the last two lengths run one
    iteration; from repetition MIN_REPETITIONS (2) on, Lmax copies repetition 0."""
    out = tmp_path / "rule.json"
    root = Path(__file__).resolve().parents[2]
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "tests.mpi.beff_fake_timer", str(out)]
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120,
                       env=mpi_env())
    assert r.returncode == 0, r.stderr
    got = json.loads(out.read_text())
    assert got["shortened"] == [True, True, True]
    # the second-largest length runs one iteration per method in every repetition
    assert [rep[0] for rep in got["looplng_last_two"]] == [[1, 1, 1]] * 3
    assert got["rep2_equals_rep0_at_lmax"] is True
    assert got["rep1_equals_rep0_at_lmax"] is False  # repetition 1 was measured anew
    assert all(b >= 0 for rep in got["best"] for b in rep)  # a best method per pattern
