"""The two backends of the timed loops: compiled (numba, the default) and python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from beff.results import stats
from beff.results.archive import load
from tests.mpirun import launcher, mpi_env, mpirun

pytestmark = pytest.mark.mpi
# Fixed repetitions: no time budget to run out on a loaded node (the python backend's loops
# are slow there).
SIZES = ["-msglog", "0:6", "-iter_policy", "off", "-time", "600"]
QUICK = [*SIZES, "-iter", "40"]
P2P = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Uniband", "Biband"]
# The python backend's loops run Python per repetition: fewer of them (its 21 benchmarks at
# 3 ranks took 10 s of a loaded 2-core machine at 40)
PY_QUICK = [*SIZES, "-iter", "10"]
COLL = ["Allreduce", "Reduce", "Reduce_local", "Reduce_scatter", "Reduce_scatter_block",
        "Allgather", "Allgatherv", "Gather", "Gatherv", "Scatter", "Scatterv", "Alltoall",
        "Alltoallv", "Bcast", "Barrier"]


def _run(tmp_path: Path, nprocs: int, *args: str, env: dict[str, str] | None = None,
         quick: list[str] = QUICK, name: str = "r.h5") -> tuple[str, Path]:
    out = tmp_path / name
    r = mpirun(nprocs, "imb", "mpi1", *quick, *args, "-o", str(out), timeout=240, env=env)
    assert r.returncode == 0, r.stderr
    return r.stderr, out


@pytest.fixture(scope="module")
def first_compile(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """A run with an empty cache of its own (the notice's delay set to 0: on a quick
    machine a compile takes under its default 2 s): its stderr, result file and cache."""
    tmp = tmp_path_factory.mktemp("compile")
    cache = tmp / "cache"
    err, path = _run(tmp, 2, "PingPong", "Allreduce",
                     env={"BEFF_CACHE_DIR": str(cache), "BEFF_COMPILE_NOTICE_S": "0"})
    return err, path, cache


def test_default_backend_is_compiled_and_its_first_compile_is_named(
        first_compile: tuple[str, Path, Path]) -> None:
    """With an empty cache the loops are compiled, and rank 0 (only) says so while it
    happens; the compiled loops land in the cache."""
    err, path, cache = first_compile
    record = load(path)
    assert record.attrs["overhead"]["backend"] == "jit"
    assert {m.attrs["backend"] for m in record.measurements} == {"jit"}
    notices = [ln for ln in err.splitlines() if "compiling this suite's timed loops" in ln]
    assert len(notices) == 1 and str(cache) in notices[0], err
    assert list(cache.rglob("*.nbi")), "nothing was cached"
    kept = {p.name.split("-")[0] for p in cache.rglob("objects/*.obj")}
    assert {"beff.imb.mpi1.p2p.pingpong_loop", "beff.imb.mpi1.coll.collective_loop"} <= kept


def test_readying_a_loop_is_not_timed_as_its_first_call(tmp_path: Path) -> None:
    """A loop compiled (or loaded) inside the first calibration call, as on a loaded node
    where that takes over a second, does not shorten the run: its time is not the call's,
    nor is it spent from IMB's budget per benchmark (here 1.5 s, -time 1.5 at -msglog 0:2,
    less than the 2 s readying: counted, the first size would time out). With a budget of
    0.5 s, a loaded machine once ran PingPong's three sizes past it (a fresh-clone run)."""
    _, path = _run(tmp_path, 2, "PingPong", "Allreduce", env={"BEFF_TEST_SLOW_READY": "2"},
                   quick=["-msglog", "0:2", "-time", "1.5", "-iter", "40"])
    for m in load(path).measurements:
        assert (m.repetitions == 40).all(), (m.benchmark, m.repetitions)


def test_kept_loops_load_without_compiling(first_compile: tuple[str, Path, Path],
                                          tmp_path: Path) -> None:
    """A second run with the first run's cache loads every loop's kept machine code: no
    notice, nothing compiled, and the same kernels give sane times."""
    env = {"BEFF_CACHE_DIR": str(first_compile[2]), "BEFF_COMPILE_NOTICE_S": "0"}
    err, path = _run(tmp_path, 2, "PingPong", "Allreduce", "--check", env=env)
    assert "timed loops with numba" not in err, err
    record = load(path)
    for m in record.measurements:
        assert m.defects is not None and int(m.defects.sum()) == 0, m.benchmark
        assert np.all(stats.summarize(m).t_avg > 0), m.benchmark


@pytest.mark.parametrize("nprocs", [2, 3])
def test_python_backend_runs_the_same_kernels(tmp_path: Path, nprocs: int) -> None:
    _, path = _run(tmp_path, nprocs, "--backend", "python", "--check", *P2P, *COLL,
                   quick=PY_QUICK)
    record = load(path)
    assert record.attrs["overhead"]["backend"] == "python"
    assert {m.attrs["backend"] for m in record.measurements} == {"python"}
    assert {m.benchmark for m in record.measurements} == set(P2P + COLL)
    for m in record.measurements:
        assert m.defects is not None and int(m.defects.sum()) == 0, m.benchmark
        assert np.all(stats.summarize(m).t_avg > 0), m.benchmark


def test_python_backend_check_finds_a_corrupted_message(tmp_path: Path) -> None:
    _, path = _run(tmp_path, 2, "--backend", "python", "--check", "Sendrecv", "Allgather",
                   env={"BEFF_TEST_CORRUPT": "1"}, quick=PY_QUICK)
    record = load(path)
    for m in record.measurements:
        assert m.defects is not None and int(m.defects[1:].sum()) > 0, m.benchmark


def test_without_numba_auto_falls_back_to_python(tmp_path: Path) -> None:
    fake = tmp_path / "shadow" / "numba"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('numba hidden by the test')\n")
    root = Path(__file__).resolve().parents[2]
    # an empty cache: loops kept from earlier runs load without numba
    stderr, path = _run(tmp_path, 2, "PingPong",
                        env={"PYTHONPATH": f"{fake.parent}:{root}",
                             "BEFF_CACHE_DIR": str(tmp_path / "cache")})
    assert "compiled loops unavailable (ImportError: numba hidden by the test)" in stderr
    assert load(path).attrs["overhead"]["backend"] == "python"


def test_jit_backend_required_but_missing_fails(tmp_path: Path) -> None:
    fake = tmp_path / "shadow" / "numba"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('numba hidden by the test')\n")
    root = Path(__file__).resolve().parents[2]
    r = mpirun(2, "imb", "mpi1", *QUICK, "--backend", "jit", "PingPong", "-o",
               str(tmp_path / "x.h5"), env={"PYTHONPATH": f"{fake.parent}:{root}",
                                            "BEFF_CACHE_DIR": str(tmp_path / "cache")},
               timeout=120)
    assert r.returncode != 0
    assert "numba hidden by the test" in r.stderr


FALLBACK = """
import sys
from mpi4py import MPI
from beff.core import capi, mpi, objcache
mpi._MPI = MPI

def broken(*args, **kwargs):
    raise AttributeError("numba moved what the kept objects use")

objcache.build = broken
backend, warning = capi.select("jit")
elapsed, err = capi.barrier_loop(5, capi.handle(MPI.COMM_SELF))
fn = capi.barrier_loop.compiled["jit"]
print(backend.name, warning, err, type(fn).__name__)
"""


def test_a_loop_that_cannot_be_kept_runs_as_numba_compiled_it(tmp_path: Path) -> None:
    """Should numba's internals that kept objects rely on move, loops still run compiled
    (numba's own dispatcher), not through the python backend."""
    r = subprocess.run([launcher(), "-n", "1", sys.executable, "-c", FALLBACK],
                       capture_output=True, text=True, timeout=120,
                       env=mpi_env({"BEFF_CACHE_DIR": str(tmp_path / "cache")}))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["jit", "None", "0", "CPUDispatcher"], r.stdout
    assert not list((tmp_path / "cache").rglob("objects/*.obj"))


def test_one_rank_compiles_each_loop_and_the_others_load_it(tmp_path: Path) -> None:
    """With an empty cache at 4 ranks, each loop is compiled by one process only (the
    cache's lock): the ranks' own compile counts add up to the loops kept, and some rank
    compiled them."""
    cache = tmp_path / "cache"
    _, path = _run(tmp_path, 4, "PingPong", "Allreduce", env={  # waits for each compile
        "BEFF_CACHE_DIR": str(cache), "BEFF_TEST_LOCK_WAIT_S": "200"})
    compiled = load(path).attrs["loops_compiled"]
    kept = list(cache.rglob("objects/*.obj"))
    assert len(compiled) == 4 and sum(compiled) == len(kept) >= 3, (compiled, kept)
