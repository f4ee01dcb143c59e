"""Start MPI last: agree on the validated configuration, then run a job on every rank.

Phase 1 (before MPI, every rank): pure parsing; bad syntax exits 2 at once, the same way on
every rank because every rank parses the same argv.
Phase 2 (after MPI_Init, rank 0): anything that touches the environment (files, the output
directory, the number of processes) is decided by rank 0 and broadcast, so every rank takes
the same branch: a bad value makes all ranks exit 2 within a fraction of a second.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import sys
import threading
import time
import types
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

from beff.core import mpi as _mpi
from beff.core.errors import INTERRUPTED, UsageError

T = TypeVar("T")
OTHER_RANKS_EXIT_DELAY = 0.5
STARTUP_GUARD_S = 600.0  # each step of start-up, unless --stall-timeout says otherwise
_startup_stall: float | None = None


def startup_step(what: str) -> None:
    """Guard the next step of start-up: ``--stall-timeout`` if given, else STARTUP_GUARD_S
    (its local compiling and loading excepted: :func:`beff.core.mpi.unguarded`)."""
    _mpi.guard(_startup_stall or STARTUP_GUARD_S, f"start-up ({what})")


def usage_exit(message: str) -> NoReturn:
    """Exit 2 with one line on stderr, printed by rank 0 only (or when the rank is unknown).

    The other ranks wait a moment first: some launchers (Open MPI's prterun) kill the whole
    job as soon as one process exits with a non-zero code, which could cut rank 0 off
    before it has printed the reason.
    """
    rank = _mpi.mpi().COMM_WORLD.Get_rank() if _mpi.initialized() else _mpi.env_rank()
    if rank in (None, 0):
        sys.stderr.write(f"beff: error: {message}\n")
        sys.stderr.flush()
    else:
        time.sleep(OTHER_RANKS_EXIT_DELAY)
    sys.exit(UsageError.exit_code)


def interrupted_exit() -> NoReturn:
    """Ctrl-C where the job's own handling of SIGINT is not in place yet (imports, MPI_Init)
    or at all (commands without MPI): one line, from rank 0 only, and exit code 130."""
    rank = _mpi.mpi().COMM_WORLD.Get_rank() if _mpi.initialized() else _mpi.env_rank()
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        if rank in (None, 0):
            sys.stderr.write("beff: interrupted (SIGINT)\n")
            sys.stderr.flush()
    if rank not in (None, 0):  # rank 0's line first: the launcher ends the job on an exit
        time.sleep(OTHER_RANKS_EXIT_DELAY)
    if _mpi.initialized():
        _mpi.mpi().COMM_WORLD.Abort(INTERRUPTED)
    os._exit(INTERRUPTED)  # not sys.exit: a second Ctrl-C would interrupt the tear-down


def run_job(thread_level: str, prepare: Callable[[types.ModuleType], T],
            job: Callable[[types.ModuleType, T], None],
            workarounds: dict[str, str] | None = None, *,
            overrides: Mapping[str, Any] | None = None) -> NoReturn:
    """Initialize MPI, let rank 0 validate with ``prepare``, broadcast, and run ``job``.

    ``overrides`` (the parsed flags, which every rank has before MPI_Init) give
    ``--timeout`` and ``--stall-timeout`` (or the TOML file they name does): both watchdogs
    then hold from MPI_Init on, not only from the first measurement.
    """
    global _startup_stall
    from beff.core.config import limits_before_init

    timeout, _startup_stall = limits_before_init(overrides or {})
    if timeout is not None:
        _mpi.start_watchdog(timeout)
    startup_step("MPI_Init")
    MPI = _mpi.init(thread_level, workarounds)
    startup_step("validating the configuration")
    world = MPI.COMM_WORLD
    payload: tuple[str, object] | None = None
    if world.Get_rank() == 0:
        try:
            payload = ("ok", prepare(MPI))
        except UsageError as exc:
            payload = ("error", str(exc))
    payload = world.bcast(payload, root=0)
    assert payload is not None
    if payload[0] == "error":
        usage_exit(str(payload[1]))
    # From here on, an exception on any rank (a UsageError too) goes to the abort hook,
    # which aborts the whole job with errors.exit_code(exc): no rank is left waiting.
    job(MPI, payload[1])  # type: ignore[arg-type]
    end_process(0)


def end_process(code: int) -> NoReturn:
    """``sys.exit(code)`` at the end of a finished job, less the interpreter's tear-down of
    its modules (numpy's, h5py's, llvmlite's: some 40 ms a run would add to its wall time):
    the exit functions run (``beff io``'s removal of its files), then MPI_Finalize (mpi4py
    calls it from the interpreter's tear-down, which is skipped: a rank that ends without
    it makes the launcher end the others), the output is flushed, and the process ends.
    Where threads of ours still run, or the interpreter lacks the hook, it is a plain
    ``sys.exit``."""
    _mpi.wait_if_aborting(code)  # another thread is ending the job: it ends the process
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    others = [t for t in threading.enumerate()
              if t is not threading.current_thread() and not t.daemon]
    if run_exitfuncs is None or others:
        sys.exit(code)
    run_exitfuncs()
    if _mpi.initialized():
        MPI = _mpi.mpi()
        if not MPI.Is_finalized():
            MPI.Finalize()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            pass
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        sys.exit(code)
    libc.exit(code)  # C's exit: the MPI library's own exit handlers run (os._exit skips
    # them, and MPICH's launcher then kills the other ranks as a failed job's)
    os._exit(code)


def begin(MPI: types.ModuleType, timeout: float | None, backend: str,
          everywhere: bool) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None,
                                     str | None]:
    """What every job does first after validation: the ``--timeout`` watchdog, the timed-loop
    backend (its measured overhead, on rank 0, and a warning if it fell back), and each rank's
    facts: on every rank with their node ids set (``everywhere``), else on rank 0 only."""
    from beff.core import capi
    from beff.core.metadata import collect_rank, placement

    if timeout is not None:
        _mpi.start_watchdog(timeout)  # unless run_job started it at MPI_Init
    startup_step("selecting the timed-loop backend")
    overhead, backend_warning = capi.start(backend)
    startup_step("collecting each rank's facts")
    _mpi.injected_stop("metadata")
    world = MPI.COMM_WORLD
    if not everywhere:
        ranks = world.gather(collect_rank(MPI), root=0)
    else:
        ranks = world.allgather(collect_rank(MPI))
        placement(ranks)  # sets each rank's node id
    startup_step("the job's set-up before its first measurement")
    return ranks, overhead, backend_warning
