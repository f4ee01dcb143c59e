"""Tests marked ``quiet`` run alone: while one runs, no other test of the session does.

The suite runs on pytest-xdist workers, and on a 2-core machine one worker's MPI jobs load
the cores the other's measure on. A test that compares a quiet run with a disturbed one
(``beff compare`` of a run beside CPU burners, the disturbance record of a quiet run) needs
the quiet run to be quiet. Every test holds a shared lock on one file of the session for the
whole of its run (fixtures included: a module's jobs start in its first test's set-up); a
``quiet`` test holds it exclusively, so it starts once the tests that run have ended, and the
others wait for it.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest

# As beff's own command does (beff.cli.one_blas_thread): the test processes and the jobs they
# start load numpy without a BLAS thread pool, which cost each 0.08 CPU-s on 2 cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Every process of the session writes the bytecode of what it imports, once, as Python does
# by default: the environments are installed without compiling every package's bytecode
# (uv's --compile-bytecode took 16.5 and 13.0 CPU-s, mostly for modules no test imports), and
# under PYTHONDONTWRITEBYTECODE (this VM sets it) each process would compile from source
# every module it imports, each rank numpy's and mpi4py's
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# The session's lock file: named by the process that loads this first (xdist's controller,
# whose workers inherit the name)
OWN_LOCK = "BEFF_TESTS_LOCK" not in os.environ  # this process names it (and removes it)
LOCK = Path(os.environ.setdefault(
    "BEFF_TESTS_LOCK", str(Path(tempfile.gettempdir()) / f"beff-tests-{os.getpid()}.lock")))

# The loop cache is filled once, at the start of the session, by two `beff prepare` processes
# beside the first tests: jobs then load their loops instead of compiling each beside the others
# (with the cache cold, the session took some 60 CPU-s and 44 s more on a 2-core machine, as
# ranks on a loaded machine waited out the 10 s lock and compiled loops again). Tests of the
# compile itself use caches of their own (BEFF_CACHE_DIR).
# Each compiles in the order given: the suites of the files the workers start first, first.
PREPARE = (["mpi1", "beff", "p2p", "mt", "map"], ["beffio", "io", "nbc", "mpi4", "ext", "rma"])
# The README's Open MPI pass (``-m openmpi``) runs the suites of these alone, and its loops
# compile cold (the cache is keyed by the MPI library): those its first tests run first (on
# four workers, OPENMPI_LONGEST below: IMB-MPI1's signals and failures, b_eff_io's resume
# and quiet waits), none it does not run. Not IMB-P2P: its one job there (PingPong) compiles
# its own loops, 2 CPU-s, where preparing all of the suite's took 8.4.
PREPARE_OPENMPI = (["mpi1", "beff"], ["beffio", "mt"])
_preparing: list[subprocess.Popen[bytes]] = []


def compile_bytecode() -> None:
    """Write the bytecode of beff and of the tests' helpers, as ``pip install`` does for an
    installed package, before the workers and the first jobs start: they import beff from
    this checkout (the working directory is first on their path), and each of the first
    ones would compile what it imports (a 2-rank PingPong job compiling beff took 0.95 CPU-s
    against 0.72)."""
    import compileall

    import beff

    for package in (Path(beff.__file__).parent, Path(__file__).parent):
        compileall.compile_dir(str(package), quiet=1)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller prepares
        return
    compile_bytecode()
    with open(LOCK, "a") as lock:
        # each holds the session's lock shared (its own copy of the descriptor) until it
        # ends: a ``quiet`` test waits for it
        fcntl.flock(lock, fcntl.LOCK_SH)
        tier = PREPARE_OPENMPI if config.getoption("markexpr") == "openmpi" else PREPARE
        for suites in tier:
            _preparing.append(subprocess.Popen(
                [sys.executable, "-m", "beff", "prepare", *suites], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=[lock.fileno()]))


def pytest_unconfigure(config: pytest.Config) -> None:
    if OWN_LOCK:  # the controller: the session's lock files
        LOCK.unlink(missing_ok=True)
    for proc in _preparing:
        ended = proc.poll() is not None
        if not ended:  # a short session: the cache is only a saving
            proc.terminate()
        _, err = proc.communicate()
        if ended and proc.returncode != 0:
            sys.stderr.write(f"tests/conftest.py: beff prepare failed: {err.decode()[-500:]}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, None, None]:
    alone = item.get_closest_marker("quiet") is not None
    with open(LOCK, "a") as lock:  # closing it releases the lock
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        yield


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The README's Open MPI pass (``-m openmpi``) imports only the test files that mark
    tests ``openmpi``: each of its four workers imported all of tests/mpi (2.7 CPU-s each,
    1.5 for these), at the pass's busiest moment."""
    if (config.getoption("markexpr") == "openmpi" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")):
        return "openmpi" not in collection_path.read_text()
    return None


# The order xdist hands files to its workers (one file to one worker, `--dist loadfile`, in
# this order: `--no-loadscope-reorder`). Files that start jobs first, the in-process ones
# after them to fill the workers' last minutes; files with a ``quiet`` test last of all, so
# that their exclusive lock is taken when the others have ended (mid-session, one waited
# 40 s for a moment with no other test running, its worker idle meanwhile).
LATER = {"cli": 1, "plugin": 1, "unit": 2}
# The Open MPI pass's longest files, longest first (their part's wall seconds in one run: 18,
# 17, 14, 11, 10, 10), the others after them: alphabetically the longest came last, and its
# four workers ended 32 s in (26.6 with this order, simulated on that run's times).
OPENMPI_LONGEST = ("test_stops.py", "test_kill_mid_write.py", "test_failures.py",
                   "test_resume.py", "test_quiet_waits.py", "test_interrupt.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    quiet = {item.path for item in items if item.get_closest_marker("quiet") is not None}
    longest = OPENMPI_LONGEST if config.getoption("markexpr") == "openmpi" else ()

    def rank(item: pytest.Item) -> tuple[bool, int, int]:
        name = item.path.name
        first = longest.index(name) if name in longest else len(longest)
        return item.path in quiet, LATER.get(item.path.parent.name, 0), first

    items.sort(key=rank)  # stable: a file's tests stay together, in their order
