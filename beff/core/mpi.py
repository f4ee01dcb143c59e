"""The only module that imports ``mpi4py.MPI``.

It applies the thread level before MPI_Init_thread, installs the abort-on-exception hook
(one failing rank must not leave the others waiting) and an optional watchdog.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import math
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from beff.core import backstop, disturbance, early, shm, testhooks
from beff.core.errors import INTERRUPTED, BeffError, exit_code

_MPI: types.ModuleType | None = None
_cleanup: list[Callable[[], None]] = []
_again: list[Callable[[], None]] = []  # also run just before MPI_Abort (on_abort)
_aborting = False
_abort_lock = threading.Lock()
_abort_owner: int | None = None  # the thread that ends the process
# A second thread that would end the process waits this long for the first to end it (it
# runs the clean-up and MPI_Abort, a second or two), then ends it itself.
ABORT_WAIT_S = 15.0

RANK_ENV_VARS = early.RANK_VARS
env_rank = early.env_rank


# Set before MPI_Init when the launcher put more ranks on this node than it has cores:
# MPICH's single-threaded progress loop and Open MPI's default both spin without yielding,
# so a waiting rank would hold its core for a whole time slice.
YIELD_SETTINGS = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "1",
    "OMPI_MCA_mpi_yield_when_idle": "1",
}
LOCAL_SIZE_ENV_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE")
applied_yield_settings: dict[str, str] = {}


def local_ranks_from_env() -> int | None:
    for var in LOCAL_SIZE_ENV_VARS:
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return None


def apply_yield_settings() -> dict[str, str]:
    """Ask the MPI to yield while waiting if this node is oversubscribed (before MPI_Init).

    Variables the user set are left alone; ``BEFF_NO_YIELD=1`` disables this. What was set
    is recorded in the result file.
    """
    local = local_ranks_from_env()
    if os.environ.get("BEFF_NO_YIELD") == "1" or local is None:
        return {}
    if local <= (os.cpu_count() or 1):
        return {}
    return _set_unset(YIELD_SETTINGS, applied_yield_settings)


def _set_unset(settings: dict[str, str], applied: dict[str, str]) -> dict[str, str]:
    """Set the variables of ``settings`` the user has not set; note them in ``applied``."""
    for key, value in settings.items():
        if key not in os.environ:
            os.environ[key] = value
            applied[key] = value
    return applied


# Open MPI 5.0's shared-memory fast boxes crash its one-sided component: MPI_Win_create and
# the epochs after it segfault in mca_btl_sm_poll_handle_frag (osc/rdma over btl/sm), in most
# runs of IMB-EXT and of a plain mpi4py loop; without fast boxes every run completes.
OMPI_ONE_SIDED_SETTINGS = {"OMPI_MCA_btl_sm_fbox_max": "0"}
applied_workarounds: dict[str, str] = {}


def apply_workarounds(settings: dict[str, str]) -> dict[str, str]:
    """Set ``settings`` before MPI_Init under Open MPI's launcher, unless the user set them
    (``BEFF_NO_WORKAROUND=1`` disables this). What was set is recorded in the result file."""
    if os.environ.get("BEFF_NO_WORKAROUND") == "1" or "OMPI_COMM_WORLD_SIZE" not in os.environ:
        return {}
    return _set_unset(settings, applied_workarounds)


def init(thread_level: str = "single",
         workarounds: dict[str, str] | None = None) -> types.ModuleType:
    """Initialize MPI with the requested thread level and return the ``MPI`` module;
    ``workarounds`` are Open MPI variables to set first (see :func:`apply_workarounds`)."""
    global _MPI
    if _MPI is not None:
        return _MPI
    apply_yield_settings()
    apply_workarounds(workarounds or {})
    import mpi4py

    mpi4py.rc.thread_level = thread_level
    injected_stop("mpi_init")
    if early.pending:
        # Ctrl-C came before MPI_Init. The ranks that noted it go into MPI_Init and act on it
        # once all are through; but a rank that it hit while CPython itself was starting,
        # before beff could note it, has died, and MPI_Init (which holds the interpreter
        # lock: no watchdog thread runs) would wait for it forever. The backstop ends this
        # rank then (its stacks, exit 3).
        backstop.arm("interrupted before MPI_Init", INTERRUPTED_INIT_S)
        # Meanwhile MPICH's MPI_Init polls (sched_yield) at full speed for the dead peer: at
        # the lowest priority the node's other work goes first. The rank only ends from here.
        lowest_priority()
    # Results are flushed per benchmark; MPI_Finalize at exit is mpi4py's job.
    startup_marks["mpi_init"] = time.time()
    in_c = backstop.InterruptInC()
    if early.under_launcher():
        in_c.install()  # a Ctrl-C inside MPI_Init: see InterruptInC
    try:
        from mpi4py import MPI
    finally:
        if in_c.restore():
            early.pending = True
    startup_marks["mpi_init_done"] = time.time()
    backstop.disarm("interrupted before MPI_Init")
    _MPI = MPI
    _install_abort_hook()
    atexit.register(wait_if_aborting)
    global _root
    _root = MPI.COMM_WORLD.bcast((socket.gethostname(), os.getpid()), root=0)
    # MPICH's shared-memory segment: mapped by every rank of the node now, so its name can
    # go; an aborted or killed job then leaves nothing in /dev/shm (see beff.core.shm).
    if MPI.COMM_WORLD.Get_rank() == 0:
        shm.remember_job()
    shm.release_mapped(startup=True)
    on_abort(_release_segments)
    _watch_signals(MPI.COMM_WORLD.Get_rank())
    if early.pending:  # a Ctrl-C before or during MPI_Init (beff.core.early): now it acts,
        # here, in this thread (from the signal thread it let this one start the job, which
        # a small run finished, file and all, before rank 0's abort)
        early.pending = False
        _end_on_signal(signal.SIGINT, MPI.COMM_WORLD.Get_rank())
    injected_stop("init")
    return MPI


def _release_segments() -> None:
    """Before an abort: unlink the MPICH segments still named (one made after start-up)."""
    shm.release_mapped()


def initialized() -> bool:
    return _MPI is not None


def mpi() -> types.ModuleType:
    """The initialized ``MPI`` module (raises if :func:`init` has not run)."""
    if _MPI is None:
        raise RuntimeError("MPI is not initialized")
    return _MPI


def allreduce_number(comm: Any, value: bool | int | float, op: Any) -> Any:
    """``comm.allreduce(value, op=op)`` for one number, through a buffer.

    mpi4py's object reductions (``allreduce``, ``reduce``) keep the interpreter lock while
    they wait, so no watchdog thread could run while a rank waits there for a stopped one;
    its buffer collectives let go of it. Returns a value of ``value``'s type.
    """
    import numpy as np

    buf = np.array([value], dtype=np.float64 if isinstance(value, float) else np.int64)
    comm.Allreduce(mpi().IN_PLACE, buf, op=op)
    return type(value)(buf[0].item())


QUIET_POLL_S = (50e-6, 1e-3)  # the first and the longest sleep between two tests


def quiet_barrier(comm: Any) -> None:
    """A barrier whose waiting ranks sleep: ``Ibarrier``, then ``Test`` with sleeps that
    grow from 50 us to 1 ms. For the waits outside any timed loop while one rank works
    alone (rank 0 writing the file and rendering a table): MPI's own barrier polls, and on
    a node whose cores are shared (more ranks than cores, or other jobs) the waiting ranks'
    polling took the CPU from the rank being waited for. Ends at most 1 ms after the last
    rank arrives; the watchdog thread runs meanwhile (no interpreter lock is held)."""
    request = comm.Ibarrier()
    pause, longest = QUIET_POLL_S
    while not request.Test():
        time.sleep(pause)
        pause = min(pause * 2, longest)


def on_abort(func: Callable[[], None], again: bool = False) -> None:
    """Run ``func`` (e.g. close the result file) before aborting the job; ``again``: run it
    once more just before MPI_Abort, a moment later (to remove the benchmark files that the
    other ranks, still running, created meanwhile)."""
    _cleanup.append(func)
    if again:
        _again.append(func)


def _claim_abort(code: int) -> bool:
    """Whether this thread is the one to end the process: True for the first caller, False
    when that thread calls again. Any other thread never returns: it waits for the first
    to end the process, and ends it itself if that has not happened in ABORT_WAIT_S. So no
    thread goes on into the interpreter's tear-down while another holds a lock (h5py's,
    closing the result file), which would leave the process waiting forever."""
    global _aborting, _abort_owner
    if _abort_lock.acquire(blocking=False):
        _aborting, _abort_owner = True, threading.get_ident()
        return True
    if _abort_owner == threading.get_ident():
        return False
    _wait_for_abort(code)


def _wait_for_abort(code: int) -> NoReturn:
    time.sleep(ABORT_WAIT_S)
    os._exit(code)


def wait_if_aborting(code: int = 1) -> None:
    """At the end of the process (an exit function, and :func:`beff.core.runtime.
    end_process`): if another thread is ending the job, wait for it instead of tearing the
    interpreter down under it."""
    if _aborting and _abort_owner != threading.get_ident():
        _wait_for_abort(code)


# Before MPI_Abort: how long the launcher may take to read what this rank wrote on stderr,
# then a moment for it to pass the last of it on (see _let_launcher_read).
READ_BY_LAUNCHER_S = 3.0
LINE_FORWARD_S = 0.3


def _let_launcher_read() -> None:
    """Wait until the launcher has read this rank's stderr (a pipe: its unread bytes, from
    FIONREAD, reach 0; at most READ_BY_LAUNCHER_S), then LINE_FORWARD_S. MPI_Abort makes the
    launcher tear the job down, and a busy one (MPICH's, under load) then ended before it had
    read the last lines: the watchdog's stacks were cut after their first line."""
    import fcntl
    import stat
    import termios

    try:
        if stat.S_ISFIFO(os.fstat(2).st_mode):
            unread = bytearray(4)
            until = time.monotonic() + READ_BY_LAUNCHER_S
            while time.monotonic() < until:
                fcntl.ioctl(2, termios.FIONREAD, unread)
                if not int.from_bytes(unread, sys.byteorder):
                    break
                time.sleep(0.02)
    except OSError:
        pass
    time.sleep(LINE_FORWARD_S)


def abort(message: str, code: int = 1) -> None:
    """Print ``message`` for this rank and abort the whole job. Once: a later call from the
    same thread returns, one from another thread waits for the first (:func:`_claim_abort`)."""
    if not _claim_abort(code):
        return
    sys.unraisablehook = lambda _: None  # library destructors may complain while we go down
    MPI = mpi()
    rank = MPI.COMM_WORLD.Get_rank()
    sys.stderr.write(f"beff: error on rank {rank}: {message}\n")
    kept = f"; results so far are kept{resume_hint}" if rank == 0 and resume_hint else ""
    sys.stderr.write(f"beff: rank {rank} aborts the job (MPI_Abort, code {code}){kept}\n")
    sys.stderr.flush()
    _run_cleanup()
    if rank != 0:
        _tell_root(code, rank)  # and waits ROOT_GRACE_S
    elif _again:
        time.sleep(ROOT_GRACE_S)
    _run_cleanup(_again)
    if rank == 0:
        _let_launcher_read()
    MPI.COMM_WORLD.Abort(code)
    os._exit(code)


def injected_fault(benchmark: str, rank: int) -> None:
    """Test-only hook (:func:`beff.core.testhooks.fail`, ``RANK:BENCHMARK``): raises on that
    rank at that benchmark (IMB-IO also at ``BENCHMARK/file`` once the benchmark's files
    exist, b_eff_io at ``b_eff_io/TYPE`` and ``b_eff_io/ACCESS/TYPE`` once the file of a pattern
    type is open)."""
    target = testhooks.fail(rank, benchmark)
    if target:
        raise RuntimeError(f"injected failure ({testhooks.FAIL}={target})")


def injected_stop(point: str) -> None:
    """Test-only hook (:func:`beff.core.testhooks.stop`, ``RANK:POINT``): stops that rank with
    SIGSTOP (as a hung node or a user's ^Z would) at that point of start-up, once:
    ``mpi_init`` (just before MPI_Init, by the launcher's rank), ``init`` (MPI_Init done),
    ``backend`` (selecting the timed loops), ``metadata`` (each rank's facts), ``calibration``
    (in IMB's first calibration, before its first reduction), ``end`` (after the last
    measurement), ``exit`` (the job done, before the interpreter's exit)."""
    if testhooks.stop(point, lambda: _MPI.COMM_WORLD.Get_rank() if _MPI is not None
                      else env_rank()):
        sys.stderr.write(f"beff: test hook: rank stops at {point}\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSTOP)


def _run_cleanup(funcs: list[Callable[[], None]] | None = None) -> None:
    funcs = _cleanup if funcs is None else funcs
    for func in funcs:
        try:
            func()
        except Exception:  # noqa: BLE001 - best effort while aborting
            pass
    funcs.clear()


# Rank 0's host and pid. MPI_Abort kills the other ranks with SIGKILL, so rank 0 could never
# mark its result file as aborted when another rank fails: an aborting rank on the same host
# sends it SIGTERM first, and waits a moment.
_root: tuple[str, int] | None = None
ROOT_GRACE_S = 1.0


def _tell_root(code: int, rank: int) -> None:
    # Rank 0 on another host is ended by MPI_Abort's SIGKILL; its file's watcher marks the
    # file (beff.results.watch). The test hook stands for that case on one host. Either way
    # this rank waits: the launcher must also forward its message across hosts before
    # MPI_Abort tears the job down (hydra lost it once in a CI run).
    if _root is not None and _root[0] == socket.gethostname() and \
            not testhooks.root_elsewhere():
        try:
            with open(_failure_note(_root[1]), "w") as fh:  # the code rank 0 ends the job with
                fh.write(f"{code} {rank}\n")
        except OSError:
            pass
        try:
            os.kill(_root[1], signal.SIGTERM)
        except OSError:
            pass
    time.sleep(ROOT_GRACE_S)


def _failure_note(pid: int) -> str:
    """Where a failing rank leaves rank 0 (process ``pid``, on its host) its exit code and
    rank, before the SIGTERM that tells it to end the job: the job then ends with the
    failing rank's code, not SIGTERM's."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"beff-failed-{pid}")


def _read_failure_note() -> tuple[int, int] | None:
    """(code, rank) that a failing rank left this process, if it did (the note is removed)."""
    path = _failure_note(os.getpid())
    try:
        with open(path) as fh:
            code, rank = (int(x) for x in fh.read().split()[:2])
    except (OSError, ValueError):
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return code, rank


# A rank other than 0 that gets SIGINT or SIGTERM leaves ending the job to rank 0 (Ctrl-C
# reaches every rank, directly or forwarded by the launcher) and waits this long for it.
INTERRUPT_GRACE_S = 10.0
# This process's start-up, in wall-clock seconds (time.time): around MPI_Init.
startup_marks: dict[str, float] = {}
# Rank 0, once its result file exists: where the results are, and how to measure the rest
# (the line that says the job ends early carries it).
resume_hint = ""


def _watch_signals(rank: int) -> None:
    """SIGINT and SIGTERM end the job with one line, from rank 0, and the result file marked
    ``aborted``; the exit code is 130 for SIGINT (as a shell's), 143 for SIGTERM.

    The main thread may sit in an MPI call for long, where Python cannot run a signal
    handler; so the C-level handler only writes the signal number to a pipe, and a helper
    thread reading it runs the clean-up (closing the file as aborted) and aborts the job
    (MPI_Abort, so that the launcher reports the code, not the SIGKILL it sends the others).
    The other ranks stay quiet: if rank 0 has not ended the job after INTERRUPT_GRACE_S (it
    never got the signal), the rank ends it itself.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)

    def watch() -> None:
        while True:
            data = os.read(read_fd, 1)
            if data and data[0] in (signal.SIGINT, signal.SIGTERM):
                break
        _end_on_signal(data[0], rank)

    threading.Thread(target=watch, daemon=True, name="beff-signals").start()


def _end_on_signal(signum: int, rank: int) -> None:
    """End the job for SIGINT or SIGTERM (:func:`_watch_signals`): rank 0 at once, the
    others after INTERRUPT_GRACE_S if rank 0 has not."""
    code = INTERRUPTED if signum == signal.SIGINT else 143
    name = "interrupted (SIGINT)" if signum == signal.SIGINT else "terminated (SIGTERM)"
    if rank != 0:
        time.sleep(INTERRUPT_GRACE_S)
        abort(f"{name}, and rank 0 did not end the job", code)
        return
    note = _read_failure_note() if signum == signal.SIGTERM else None
    if note is not None:  # a failing rank's: its line is printed, its code is the job's
        code = note[0]
    if not _claim_abort(code):
        return
    sys.unraisablehook = lambda _: None
    sys.stderr.write(f"beff: rank {note[1]} failed: the job ends, results so far are "
                     f"kept{resume_hint}\n" if note is not None else
                     f"beff: {name}: the job ends, results so far are kept{resume_hint}\n")
    sys.stderr.flush()
    _run_cleanup()
    _run_cleanup(_again)
    _let_launcher_read()
    # The launcher's own lines are its business; MPI_Abort's "Abort(130) on node 0"
    # would only repeat this rank's line.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        mpi().COMM_WORLD.Abort(code)
    finally:
        os._exit(code)


def _install_abort_hook() -> None:
    previous = sys.excepthook

    def hook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            abort("interrupted", exit_code(exc))
        if os.environ.get("BEFF_DEBUG") and not isinstance(exc, BeffError):
            previous(exc_type, exc, tb)
        abort(f"{exc_type.__name__}: {exc}" if not isinstance(exc, BeffError) else str(exc),
              exit_code(exc))

    sys.excepthook = hook


WATCHDOG_EXIT = 3
# How long MPI_Init may take after a Ctrl-C noted before it (every live rank gets there and
# through within seconds; a rank that died of the Ctrl-C never does).
INTERRUPTED_INIT_S = 20.0
LOWEST_PRIORITY = 19  # nice's: os.nice adds it, and stops at the lowest


def lowest_priority() -> None:
    """This process at nice 19. Where Linux groups processes by session (autogroup) and
    this process leads its own, as MPICH's launcher starts each rank, nice weighs only
    within the group: the group's own nice (/proc/self/autogroup) is set too. A spinning
    rank beside three burners of another session took 0.99 of a core at nice 19 alone, 0.03
    with its group's."""
    with contextlib.suppress(OSError):
        os.nice(LOWEST_PRIORITY)
        if os.getsid(0) == os.getpid():  # its session is this process (and its children)
            with open("/proc/self/autogroup", "w") as group:
                group.write(str(LOWEST_PRIORITY))


# A watchdog's backstop (beff.core.backstop) fires this long after the watchdog's deadline,
# in case the watchdog's thread cannot run; a watchdog that fired must have aborted the job
# within ABORT_BACKSTOP_S.
BACKSTOP_S = 5.0
ABORT_BACKSTOP_S = 15.0


def _fire(message: str) -> None:
    """The watchdog's end: this rank's Python stacks on stderr, then abort the whole job."""
    backstop.only("abort", ABORT_BACKSTOP_S)
    rank = _MPI.COMM_WORLD.Get_rank() if _MPI is not None else env_rank()
    sys.stderr.write(f"beff: watchdog on rank {rank}: {message}; Python stacks follow\n")
    sys.stderr.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    if _MPI is None:  # still in MPI_Init: nothing to abort, the launcher ends the others
        sys.stderr.flush()
        os._exit(WATCHDOG_EXIT)
    abort(f"watchdog: {message}", WATCHDOG_EXIT)


_watchdog: threading.Timer | None = None


def start_watchdog(seconds: float) -> threading.Timer:
    """Abort the job, with every thread's stack on stderr, if it runs longer than ``seconds``
    (``--timeout``). Once per process: later calls return the running watchdog (the job
    starts it before MPI_Init, :func:`beff.core.runtime.begin` asks again)."""
    global _watchdog
    if _watchdog is not None:
        return _watchdog
    timer = threading.Timer(seconds, _fire, (f"the run exceeded --timeout {seconds:g} s",))
    timer.daemon = True
    timer.start()
    backstop.arm("timeout", seconds + BACKSTOP_S)
    _watchdog = timer
    return timer


def stop_watchdog() -> None:
    """Cancel the ``--timeout`` watchdog and its backstop (the Python API, when its run
    returns: the caller's program goes on without it; the next run starts its own)."""
    global _watchdog
    if _watchdog is not None:
        _watchdog.cancel()
        if _watchdog is not threading.current_thread():
            _watchdog.join(timeout=1.0)  # at once (cancelled): no timer outlives the run
        _watchdog = None
    backstop.disarm("timeout")


# The step guard (:func:`guard`): one watchdog thread per process, started on the first
# guard, waits on _wake for the deadline; guard() only moves the deadline under its lock.
BACKSTOP_SLACK_S = 1.0  # the guard's backstop may be armed up to this much later (see guard)
_wake = threading.Condition(threading.Lock())
_guarding: tuple[float, str] | None = None  # the current guard: seconds, what
_deadline: float | None = None  # its deadline (time.monotonic), None when lifted
_sleeps_to = math.inf  # what the watchdog thread waits for (inf: no deadline, or not started)
_watcher: threading.Thread | None = None


def guard(seconds: float | None, what: str) -> None:
    """Abort the job if ``what`` (one message size, say) has not ended within ``seconds``.

    Each call replaces the previous guard; ``seconds=None`` lifts it. A rank that waits for a
    stopped or hung rank sits in an MPI call forever: its guard fires, prints its stack and
    aborts the job, so no rank waits forever. The guard is a thread, which needs the
    interpreter lock: a backstop ends the process without it (exit code 3), BACKSTOP_S to
    BACKSTOP_S + BACKSTOP_SLACK_S after the guard's deadline.

    The benchmarks arm one per message size, so a guard costs about a microsecond: it makes
    no thread, and no system call but for the backstop's re-arming now and then:

    * one watchdog thread (a daemon, started on the first guard) sleeps until the deadline.
      A guard only writes the new deadline; it wakes the thread only if that is earlier
      than the one the thread sleeps to. A thread that wakes to a deadline moved later
      sleeps again; at a passed deadline it fires (:func:`_fire`, with this guard's message).
    * the backstop (:mod:`beff.core.backstop`, a syscall and a new faulthandler thread) is
      armed for deadline + BACKSTOP_S + BACKSTOP_SLACK_S, and armed again only when the
      armed one falls outside [deadline + BACKSTOP_S, deadline + BACKSTOP_S +
      BACKSTOP_SLACK_S]: when the deadline moved more than BACKSTOP_SLACK_S later (about
      once per BACKSTOP_SLACK_S of steady progress) or moved earlier (a shorter guard). So
      the watchdog thread always has BACKSTOP_S to fire first, and a process whose threads
      cannot run ends at most BACKSTOP_S + BACKSTOP_SLACK_S after the deadline. A lifted
      guard disarms its backstop at once (the local work it makes room for may be long).
    """
    global _guarding, _deadline, _sleeps_to
    if seconds is None:
        with _wake:  # the thread, if it sleeps to the old deadline, will find none
            _guarding = _deadline = None
        if backstop.deadline("stall") is not None:
            backstop.disarm("stall")
        return
    disturbance.tick()  # between two sizes: the node's record, if a sample is due
    deadline = time.monotonic() + seconds
    with _wake:
        _guarding, _deadline = (seconds, what), deadline
        if deadline < _sleeps_to:
            if _watcher is None:
                _start_watcher()
            else:
                _wake.notify()
            _sleeps_to = deadline  # the thread is awake and sees it
    armed = backstop.deadline("stall")
    if armed is None or not deadline + BACKSTOP_S <= armed <= \
            deadline + BACKSTOP_S + BACKSTOP_SLACK_S:
        backstop.arm_at("stall", deadline + BACKSTOP_S + BACKSTOP_SLACK_S)


def _start_watcher() -> None:
    """Start the watchdog thread (under _wake)."""
    global _watcher
    _watcher = threading.Thread(target=_watch, daemon=True, name="beff-guard")
    _watcher.start()


def _watch() -> None:
    """The watchdog thread: sleep to the deadline, fire if it has passed and is still set."""
    global _deadline, _sleeps_to
    while True:
        with _wake:
            while True:
                if _deadline is None:
                    _sleeps_to = math.inf
                    _wake.wait()
                    continue
                left = _deadline - time.monotonic()
                if left <= 0:
                    break
                _sleeps_to = _deadline
                _wake.wait(left)
            assert _guarding is not None
            seconds, what = _guarding
            _deadline = None  # fired: this guard fires once
            _sleeps_to = math.inf
        try:
            _fire(f"{what} made no progress for {seconds:g} s (a stopped or hung rank? "
                  f"--stall-timeout sets this limit)")
        except Exception:  # noqa: BLE001 - reported as a thread's error; the thread stays
            threading.excepthook(threading.ExceptHookArgs(
                (*sys.exc_info(), threading.current_thread())))


@contextlib.contextmanager
def unguarded() -> Iterator[None]:
    """Work that waits for no other rank (compiling or loading the timed loops, which can
    take minutes on a loaded node) is not a stall: the guard is lifted meanwhile and armed
    again, for its whole time, after. ``--timeout`` still holds."""
    saved = _guarding
    if saved is None:
        yield
        return
    guard(None, "")
    try:
        yield
    finally:
        guard(*saved)
