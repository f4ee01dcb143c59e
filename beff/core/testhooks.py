"""Hooks for beff's own tests: ``BEFF_TEST_*`` environment variables that make a run misbehave
on purpose (a corrupted buffer, a failing or stopped rank, a slow step), so that the tests can
prove how beff reports and survives it.

They are no interface: names and meanings may change at any time, and a user has no reason to
set them. This is the only module of beff that reads them (``tests/unit/test_testhooks.py``
holds it), one small function per hook. Kernels and early start-up ask it, so it imports
nothing but :mod:`os`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

CORRUPT = "BEFF_TEST_CORRUPT"
COUNT_LIMIT = "BEFF_TEST_COUNT_LIMIT"
FAIL = "BEFF_TEST_FAIL"
HIDE_MPI = "BEFF_TEST_HIDE_MPI"
LOCK_WAIT = "BEFF_TEST_LOCK_WAIT_S"
NO_SPACE_CHECK = "BEFF_TEST_NO_SPACE_CHECK"
ROOT_ELSEWHERE = "BEFF_TEST_ROOT_ELSEWHERE"
SHM_KEEP = "BEFF_TEST_SHM_KEEP"
SHORT_INIT_GRACE = "BEFF_TEST_SHORT_INIT_GRACE"
SLOW_CREATE = "BEFF_TEST_SLOW_CREATE"
SLOW_MERGE = "BEFF_TEST_SLOW_MERGE"
SLOW_READY = "BEFF_TEST_SLOW_READY"
STOP = "BEFF_TEST_STOP"
WINDOW = "BEFF_TEST_WINDOW_S"


def corrupt() -> bool:
    """``BEFF_TEST_CORRUPT=1``: rank 0 corrupts what it sends (or writes), so that the
    receivers' check (``--check``, b_eff's and b_eff_io's own) must report defects."""
    return os.environ.get(CORRUPT) == "1"


def count_limit() -> int | None:
    """``BEFF_TEST_COUNT_LIMIT=N``: the largest count a call takes as is, instead of INT_MAX,
    so that small messages take the block-type path (:mod:`beff.core.counts`)."""
    value = os.environ.get(COUNT_LIMIT)
    return max(1, int(value)) if value else None


def fail(rank: int, benchmark: str) -> str | None:
    """``BEFF_TEST_FAIL=RANK:BENCHMARK``: the variable's value when it names this rank at this
    benchmark (case-insensitive), so that the caller raises there; else None."""
    target = os.environ.get(FAIL)
    if target and target.lower() == f"{rank}:{benchmark}".lower():
        return target
    return None


def hidden_mpi() -> set[str]:
    """``BEFF_TEST_HIDE_MPI=NAME,...``: C functions of libmpi that count as missing."""
    return set(filter(None, os.environ.get(HIDE_MPI, "").split(",")))


def lock_wait() -> float | None:
    """``BEFF_TEST_LOCK_WAIT_S=S``: how long a process waits for another that compiles the
    same loop (:func:`beff.core.objcache.exclusive`) before it compiles the loop itself,
    instead of 10 s, so that a test of "each loop compiled once" holds on a loaded node."""
    return _seconds(LOCK_WAIT)


def no_space_check() -> bool:
    """``BEFF_TEST_NO_SPACE_CHECK=1``: IMB-IO and b_eff_io skip their free-space check, so
    that a small file system fills up during the run."""
    return os.environ.get(NO_SPACE_CHECK) == "1"


def root_elsewhere() -> bool:
    """``BEFF_TEST_ROOT_ELSEWHERE`` (set, not empty): a failing rank acts as if rank 0 were on
    another host (it neither signals rank 0 nor leaves it a note)."""
    return bool(os.environ.get(ROOT_ELSEWHERE))


def shm_keep() -> bool:
    """``BEFF_TEST_SHM_KEEP=1``: keep MPICH's shared-memory names after MPI_Init, so that the
    later clean-ups can be tested."""
    return os.environ.get(SHM_KEEP) == "1"


def short_init_grace() -> bool:
    """``BEFF_TEST_SHORT_INIT_GRACE=1``: a Ctrl-C inside MPI_Init ends the rank 2 s later,
    not 16 s (:class:`beff.core.backstop.InterruptInC` without its second alarm), so that a
    test of it waits less."""
    return os.environ.get(SHORT_INIT_GRACE) == "1"


def slow_create() -> float | None:
    """``BEFF_TEST_SLOW_CREATE=S``: seconds the result file's creation lasts longer (in its
    working copy), so that a test can kill the job there; None when unset."""
    return _seconds(SLOW_CREATE)


def slow_merge() -> float | None:
    """``BEFF_TEST_SLOW_MERGE=S``: seconds the final merge lasts longer (in the file's
    update), so that a test can kill the job there; None when unset."""
    return _seconds(SLOW_MERGE)


def slow_ready() -> float:
    """``BEFF_TEST_SLOW_READY=S``: seconds added to readying each timed loop (0 when unset),
    so that the compile notice shows."""
    return float(os.environ.get(SLOW_READY) or 0)


def stop(point: str, rank: Callable[[], int | None]) -> bool:
    """``BEFF_TEST_STOP=RANK:POINT``: whether this rank (``rank()``, asked only when the
    variable is set) stops at ``point`` of start-up. Once: a yes clears the variable."""
    target = os.environ.get(STOP)
    if not target or target.lower() != f"{rank()}:{point}".lower():
        return False
    del os.environ[STOP]
    return True


def window() -> float | None:
    """``BEFF_TEST_WINDOW_S=SECONDS``: every window of ``--sync window`` this wide instead of
    its calibrated width (a width shorter than a call makes calls late: invalid)."""
    return _seconds(WINDOW)


def _seconds(variable: str) -> float | None:
    value = os.environ.get(variable)
    return float(value) if value else None
