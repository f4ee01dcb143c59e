"""The watchdogs' last resort: it ends the process without the interpreter lock.

A watchdog (:mod:`beff.core.mpi`) is a Python thread, and no Python thread runs while
another keeps the interpreter lock in a long C call (mpi4py's object ``allreduce`` does
while it waits; beff no longer calls it where a watchdog must run, but a library may). Each
watchdog therefore has a backstop, a little after its own deadline, that needs no lock:

* faulthandler's C thread writes every Python thread's stack to stderr (under a
  ``Timeout (h:mm:ss)!`` line);
* a POSIX timer (``timer_create``) sends this process SIGQUIT :data:`EXIT_DELAY_S` later,
  whose handler is libc's ``_exit`` itself: a handler receives the signal number, and SIGQUIT
  is 3, so the process ends with exit code 3, :data:`beff.core.mpi.WATCHDOG_EXIT`, with no
  Python and no lock involved. (Any SIGQUIT, e.g. Ctrl-\\, ends the process that way while
  a backstop is armed.)

Where the timer cannot be made (not Linux, no ``timer_create``), faulthandler ends the
process itself after the stacks, with exit code 1.

Several backstops may be armed at once (the job's ``--timeout``, the current step's guard);
the earliest deadline counts. Arming restarts faulthandler's C thread and sets the timer
(a syscall) only when that earliest deadline changes; the step guard, called once per
message size, re-arms its backstop only now and then (:func:`beff.core.mpi.guard` says
when). This module imports nothing of MPI.
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
import time
from typing import Any

from beff.core import testhooks

EXIT_DELAY_S = 1.0  # from the stacks to the exit: faulthandler writes them in milliseconds
STDERR_FD = 2  # sys.stderr may be replaced (pytest) or have no descriptor
_CLOCK_MONOTONIC = 1  # Linux
_SIGEV_SIGNAL = 0

_lock = threading.Lock()
_deadlines: dict[str, float] = {}
_timer: Any = None  # the timer_t, once made
_settime: Any = None  # libc's timer_settime
_itimerspec: Any = None  # its argument's ctypes type
_tried = False
_applied: float | None = None  # the earliest deadline the backstop is set to, if any


def _make_timer() -> bool:
    """Install ``_exit`` as SIGQUIT's handler and create the timer that sends SIGQUIT (once);
    False where that is not possible here. (ctypes is imported only now: the command line's
    quick answers, --version and the like, do not pay for it.)"""
    global _timer, _settime, _itimerspec, _tried
    if _tried:
        return _timer is not None
    _tried = True
    if not sys.platform.startswith("linux") or int(signal.SIGQUIT) != 3:
        return False
    import ctypes

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    class Itimerspec(ctypes.Structure):
        _fields_ = [("it_interval", Timespec), ("it_value", Timespec)]

    class Sigevent(ctypes.Structure):  # Linux: 64 bytes
        _fields_ = [("sigev_value", ctypes.c_void_p), ("sigev_signo", ctypes.c_int),
                    ("sigev_notify", ctypes.c_int), ("_pad", ctypes.c_int * 12)]

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            create, settime = libc.timer_create, libc.timer_settime
        except AttributeError:  # glibc before 2.34
            librt = ctypes.CDLL("librt.so.1", use_errno=True)
            create, settime = librt.timer_create, librt.timer_settime
        create.argtypes = [ctypes.c_int, ctypes.POINTER(Sigevent),
                           ctypes.POINTER(ctypes.c_void_p)]
        settime.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(Itimerspec),
                            ctypes.c_void_p]
        timer = ctypes.c_void_p()
        event = Sigevent(sigev_signo=signal.SIGQUIT, sigev_notify=_SIGEV_SIGNAL)
        if create(_CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
            return False
        if not _libc_handler(libc, "signal", signal.SIGQUIT, "_exit"):
            return False
    except (OSError, AttributeError):
        return False
    _timer, _settime, _itimerspec = timer, settime, Itimerspec
    return True


def _libc_handler(libc: Any, setter: str, signum: int, function: str) -> bool:
    """Make libc's ``function`` the handler of ``signum`` with libc's ``setter`` (``signal``,
    or ``sysv_signal`` for a one-shot handler); False where the setter says SIG_ERR."""
    import ctypes

    install = getattr(libc, setter)
    install.restype = ctypes.c_void_p
    install.argtypes = [ctypes.c_int, ctypes.c_void_p]
    handler = ctypes.cast(libc[function], ctypes.c_void_p)
    return bool(install(signum, handler) != ctypes.c_void_p(-1).value)


def _set_timer(seconds: float) -> None:
    """SIGQUIT in ``seconds`` (0: never)."""
    import ctypes

    whole = int(seconds)
    spec = _itimerspec()
    spec.it_value.tv_sec, spec.it_value.tv_nsec = whole, int((seconds - whole) * 1e9)
    _settime(_timer, 0, ctypes.byref(spec), None)


def _apply() -> None:
    """Set faulthandler and the timer to the earliest deadline (nothing if it is unchanged)."""
    global _applied
    earliest = min(_deadlines.values()) if _deadlines else None
    if earliest == _applied:
        return
    _applied = earliest
    timer = _make_timer()
    if earliest is None:
        faulthandler.cancel_dump_traceback_later()
        if timer:
            _set_timer(0)
        return
    delay = max(0.01, earliest - time.monotonic())
    faulthandler.dump_traceback_later(delay, exit=not timer, file=STDERR_FD)
    if timer:
        _set_timer(delay + EXIT_DELAY_S)


def arm(name: str, seconds: float) -> None:
    """Write the stacks in ``seconds`` and end the process (code 3) a moment later, unless
    :func:`disarm` ``name`` comes first; arming ``name`` again moves its deadline."""
    arm_at(name, time.monotonic() + seconds)


def arm_at(name: str, deadline: float) -> None:
    """:func:`arm` ``name`` for a deadline on the :func:`time.monotonic` clock."""
    with _lock:
        _deadlines[name] = deadline
        _apply()


def deadline(name: str) -> float | None:
    """``name``'s deadline (:func:`time.monotonic` clock), None if it is not armed. Takes no
    lock (one dictionary read): cheap enough to ask before each re-arm."""
    return _deadlines.get(name)


def disarm(name: str) -> None:
    with _lock:
        if _deadlines.pop(name, None) is not None:
            _apply()


def only(name: str, seconds: float) -> None:
    """Lift every other backstop and arm ``name`` (a watchdog that fired: its abort)."""
    with _lock:
        _deadlines.clear()
        _deadlines[name] = time.monotonic() + seconds
        _apply()


def armed() -> dict[str, float]:
    """Seconds left to each armed backstop."""
    now = time.monotonic()
    with _lock:
        return {name: deadline - now for name, deadline in _deadlines.items()}


class InterruptInC:
    """While MPI_Init runs (holding the interpreter lock: no Python handler or thread runs),
    SIGINT's handler is libc's ``alarm``, and SIGALRM's is ``alarm`` too, once.

    A handler receives the signal number: a Ctrl-C calls ``alarm(2)``; 2 s later SIGALRM
    calls ``alarm(14)`` and its handler falls back to the default (``sysv_signal``'s one-shot
    handler); 14 s later SIGALRM's default action ends the process. So a rank ends 16 s after
    a Ctrl-C unless MPI_Init returns first, with no Python and no lock involved (the
    functions are async-signal-safe). That ends a rank whose peer the Ctrl-C killed before
    MPI_Init: MPICH's launcher does not end a job whose process exited with a code of its own
    before MPI_Init, and the others would wait in MPI_Init for it up to the start-up guard.
    16 s leaves a loaded node's slow imports time to bring every live rank through MPI_Init,
    where the Ctrl-C is acted on with one line (:func:`beff.core.mpi.init`). When MPI_Init
    returns, :meth:`restore` puts Python's SIGINT handler back, cancels the alarm, and says
    whether a Ctrl-C came meanwhile. Where this cannot be set up (not Linux, not glibc),
    nothing changes.
    """

    def __init__(self) -> None:
        self.python_handler: Any = None
        self.active = False

    def install(self) -> None:
        if not sys.platform.startswith("linux") or threading.current_thread() is not \
                threading.main_thread():
            return
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self.python_handler = signal.getsignal(signal.SIGINT)
            if testhooks.short_init_grace():
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
            elif not _libc_handler(libc, "sysv_signal", signal.SIGALRM, "alarm"):
                return
            if not _libc_handler(libc, "signal", signal.SIGINT, "alarm"):
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
                return
        except (OSError, AttributeError, ValueError):
            return
        self.active = True

    def restore(self) -> bool:
        """Python's SIGINT handler again; True if a SIGINT came while this was installed."""
        if not self.active:
            return False
        self.active = False
        # Python's handler first: a Ctrl-C from now on is Python's, and sets no alarm
        handler = self.python_handler
        signal.signal(signal.SIGINT, handler if handler is not None else signal.SIG_DFL)
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        return left > 0
