"""Start MPI last: agree on the validated configuration, then run a job on every rank.

Phase 1 (before MPI, every rank): pure parsing; bad syntax exits 2 at once, the same way on
every rank because every rank parses the same argv.
Phase 2 (after MPI_Init, rank 0): anything that touches the environment (files, the output
directory, the number of processes) is decided by rank 0 and broadcast, so every rank takes
the same branch: a bad value makes all ranks exit 2 within a fraction of a second.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
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
    try:
        job(MPI, payload[1])  # type: ignore[arg-type]
    except UsageError as exc:  # not the command line's exit: the other ranks are in the job
        _mpi.abort(str(exc), exc.exit_code)
        raise
    end_process(0)


def end_process(code: int) -> NoReturn:
    """``sys.exit(code)`` at the end of a finished job: the interpreter's own exit runs the
    exit functions (``beff io``'s removal of its files), then mpi4py's MPI_Finalize and the
    MPI library's exit handlers (a rank that ended without them would make MPICH's
    launcher end the others as a failed job's).

    First, where another thread is ending the job, this one waits for it to end the
    process. The output is flushed, and a stream that can no longer be written (a closed
    pipe) is pointed at /dev/null, so that the interpreter's last flush neither complains
    nor turns the exit code into 120. The objects that exist now are frozen
    (``gc.freeze``): the interpreter's last garbage collection then skips them, numpy's,
    numba's and h5py's, which took 250 to 450 ms of every rank's exit on the loaded 2-core
    development VM (with them frozen, the exit takes some 40 ms more than with no tear-down
    at all)."""
    _mpi.wait_if_aborting(code)  # another thread is ending the job: it ends the process
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach it
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)
    gc.freeze()
    # The job is done. The interpreter's tear-down puts SIGINT's and SIGTERM's default
    # actions back before mpi4py's MPI_Finalize: a Ctrl-C then killed the rank there, and
    # MPICH's launcher reported a finished job as a failed one (exit 2). Ignored, the
    # tear-down ends; a rank hung in MPI_Finalize is the launcher's second Ctrl-C's.
    with contextlib.suppress(ValueError):  # not the main thread: its handlers are not ours
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
    _mpi.injected_stop("exit")
    sys.exit(code)


def begin(MPI: types.ModuleType, timeout: float | None, backend: str,
          check: Callable[[list[dict[str, Any]]], None] | None = None,
          ) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None, str | None]:
    """What every job does first after validation: the ``--timeout`` watchdog, each rank's
    facts (gathered to rank 0, with their node ids set; every rank keeps its own in
    :data:`own` and every rank's node id in :data:`node_ids`), the job's ``check`` of them
    (on rank 0, its verdict sent to every rank: a UsageError is one line and exit 2 on every
    rank), and then the timed-loop backend (its measured overhead, on rank 0, and a warning
    if it fell back). The check comes before the backend: a cold loop cache compiles there,
    and a placement error must not wait for a compile or follow its notice.
    """
    from beff.core import capi
    from beff.core.metadata import collect_rank, placement

    if timeout is not None:
        _mpi.start_watchdog(timeout)  # unless run_job started it at MPI_Init
    startup_step("collecting each rank's facts")
    _mpi.injected_stop("metadata")
    world = MPI.COMM_WORLD
    global own
    facts = own = collect_rank(MPI)
    _node_ids(MPI, int(facts["node_leader"]))
    ranks = world.gather(facts, root=0)
    verdict = ""
    if ranks is not None:
        placement(ranks)  # rank 0: each rank's node id
        if check is not None:
            try:
                check(ranks)
            except UsageError as exc:
                verdict = str(exc)
    if check is not None:
        verdict = world.bcast(verdict, root=0)
        if verdict:
            usage_exit(verdict)
    startup_step("selecting the timed-loop backend")
    overhead, backend_warning = capi.start(backend)
    startup_step("the first barrier")
    phases = startup_phases(MPI)
    if ranks is not None and phases is not None:  # rank 0: stored with each rank's facts
        for facts, row in zip(ranks, phases.tolist(), strict=True):
            facts.update(zip(STARTUP_COLUMNS, row, strict=True))
    startup_step("the job's set-up before its first measurement")
    return ranks, overhead, backend_warning


# Every rank's node id (the nodes numbered in the order of their lowest rank, as
# beff.core.metadata.placement numbers them), on every rank, and this rank's own facts
# (beff.core.metadata.collect_rank): set by begin().
node_ids: Any = None
own: dict[str, Any] = {}


def _node_ids(MPI: types.ModuleType, leader: int) -> None:
    """Every rank's node id, on every rank, from one buffer Allgather of each rank's node
    leader: 8 bytes a rank (the whole ranks table on every rank was some 1 KiB a rank)."""
    global node_ids
    import numpy as np

    world = MPI.COMM_WORLD
    leaders = np.empty(world.Get_size(), dtype=np.int64)
    world.Allgather(np.array([leader], dtype=np.int64), leaders)
    node_ids = node_ids_of(leaders)


def node_ids_of(leaders: Any) -> Any:
    """Every rank's node id from every rank's node leader (its node's lowest rank), in place
    of ``leaders``: the number of leaders below its own, a cumulative count (np.unique's
    sort took some six times P's 8 bytes more)."""
    import numpy as np

    below = np.cumsum(leaders == np.arange(leaders.size), dtype=np.int64)
    np.take(below, leaders, out=leaders)
    leaders -= 1
    return leaders


# Each rank's start-up, in seconds: from its process's start to MPI_Init (the interpreter,
# beff's imports, parsing), MPI_Init, from there until its timed loops were ready
# (validation, each rank's facts, compiling or loading the loops), and its wait in the first
# barrier after that (for the slowest rank). NaN where a process's start is not known.
STARTUP_COLUMNS = ("startup_imports_s", "startup_mpi_init_s", "startup_setup_s",
                   "startup_barrier_s")


def startup_phases(MPI: types.ModuleType) -> Any:
    """Every rank, collective (the first barrier after the loops are ready, then a gather
    of four numbers): each rank's start-up phases (:data:`STARTUP_COLUMNS`), a P x 4 array on
    rank 0 (None on the others)."""
    import numpy as np

    from beff.core.metadata import process_started

    world = MPI.COMM_WORLD
    ready = time.time()
    _mpi.quiet_barrier(world)  # waiting ranks sleep (released: within 1 ms of the last one)
    released = time.time()
    marks = _mpi.startup_marks
    began, init, done = process_started(), marks.get("mpi_init"), marks.get("mpi_init_done")
    mine = np.array([init - began if began and init else np.nan,
                     done - init if init and done else np.nan,
                     ready - done if done else np.nan, released - ready])
    out = np.empty((world.Get_size(), len(mine))) if world.Get_rank() == 0 else None
    world.Gather(mine, out, root=0)  # a buffer gather: a watchdog thread can run meanwhile
    return out
