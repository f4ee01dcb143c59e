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
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest

# As beff's own command does (beff.cli.one_blas_thread): the test processes and the jobs they
# start load numpy without a BLAS thread pool, which cost each 0.08 CPU-s on 2 cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

LOCK = Path(tempfile.gettempdir()) / (
    f"beff-tests-{os.environ.get('PYTEST_XDIST_TESTRUNUID', os.getpid())}.lock")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, None, None]:
    alone = item.get_closest_marker("quiet") is not None
    with open(LOCK, "a") as lock:  # closing it releases the lock
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        yield
