"""The step guard (beff.core.mpi.guard): armed once per message size, so it must be cheap
(one watchdog thread per process, no thread and no backstop re-arm per call), and it must
still fire at its deadline, with its message, and its backstop still hold.

The firing cases run in a subprocess without MPI: the watchdog then writes its line and
the stacks and exits with code 3 (beff.core.mpi._fire before MPI_Init).
"""

from __future__ import annotations

import faulthandler
import re
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from beff.core import backstop, mpi
from beff.core.mpi import WATCHDOG_EXIT
from tests.unit.test_backstop import run as run_python

HOLD = "sum(range(10**12))  # holds the interpreter lock for hours"
SLEEP = "time.sleep(60)  # a rank that waits for a stopped one"


def run(body: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``body`` in a fresh interpreter (without MPI), with mpi, time and os imported."""
    return run_python("import os, time\nfrom beff.core import mpi\n" + textwrap.dedent(body))


def fired(what: str, seconds: str) -> str:
    return (f"beff: watchdog on rank None: {what} made no progress for {seconds} s (a "
            f"stopped or hung rank? --stall-timeout sets this limit); Python stacks follow")


def counting(calls: list[Any], func: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return func(*args, **kwargs)
    return wrapper


def test_many_guards_start_no_thread_and_rarely_rearm_the_backstop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    starts: list[Any] = []
    arms: list[Any] = []
    try:
        mpi.guard(300.0, "a first step")  # the watchdog thread starts here (or earlier)
        before = set(threading.enumerate())
        monkeypatch.setattr(threading.Thread, "start", counting(starts, threading.Thread.start))
        monkeypatch.setattr(faulthandler, "dump_traceback_later",
                            counting(arms, faulthandler.dump_traceback_later))
        begin = time.monotonic()
        for i in range(1000):
            mpi.guard(300.0, f"step {i}")
        elapsed = time.monotonic() - begin
        after = set(threading.enumerate())
        assert mpi._guarding == (300.0, "step 999")
    finally:
        mpi.guard(None, "")
    assert starts == []
    assert after == before and threading.active_count() == len(before)
    # the backstop moves once per BACKSTOP_SLACK_S of progress, not once per guard
    assert len(arms) <= 1 + elapsed / mpi.BACKSTOP_SLACK_S, (len(arms), elapsed)


def test_the_backstop_stays_between_the_deadline_plus_backstop_s_and_the_slack() -> None:
    def check(seconds: float, since: float) -> None:
        left = backstop.armed()["stall"]
        passed = time.monotonic() - since  # however slow the machine, from before the guard
        assert seconds + mpi.BACKSTOP_S - passed <= left <= \
            seconds + mpi.BACKSTOP_S + mpi.BACKSTOP_SLACK_S, (seconds, left, passed)

    try:
        for seconds in (300.0, 300.0, 100.0, 300.0, 299.5, 20.0):  # later, earlier, ...
            since = time.monotonic()
            mpi.guard(seconds, "a step")
            check(seconds, since)
    finally:
        mpi.guard(None, "")
    assert "stall" not in backstop.armed()


def test_a_guard_fires_at_its_deadline_with_its_message() -> None:
    proc, _ = run(f"mpi.guard(0.2, 'a step')\n{SLEEP}\n")
    assert proc.returncode == WATCHDOG_EXIT, (proc.returncode, proc.stderr)
    assert fired("a step", "0.2") in proc.stderr, proc.stderr
    assert "Timeout (" not in proc.stderr  # the watchdog thread fired, not its backstop


def test_a_guard_moved_later_fires_only_after_the_last_move() -> None:
    proc, _ = run(f"""
        end = time.monotonic() + 1.0
        i = 0
        while time.monotonic() < end:  # steps of 10 ms, each under its 0.3 s guard
            i += 1
            mpi.guard(0.3, f'step {{i}}')
            time.sleep(0.01)
        print(f'last step {{i}}', flush=True)
        {SLEEP}
    """)
    assert proc.returncode == WATCHDOG_EXIT, (proc.returncode, proc.stderr)
    last = re.search(r"last step (\d+)", proc.stdout)
    assert last is not None, (proc.stdout, proc.stderr)
    assert proc.stderr.count("beff: watchdog") == 1, proc.stderr
    assert fired(f"step {last[1]}", "0.3") in proc.stderr, proc.stderr


def test_a_shorter_guard_wakes_the_watchdog_early() -> None:
    proc, _ = run(f"""
        mpi.guard(300, 'a long step')
        time.sleep(0.2)  # the watchdog thread now sleeps to the long deadline
        mpi.guard(0.2, 'a short step')
        {SLEEP}
    """)
    assert proc.returncode == WATCHDOG_EXIT, (proc.returncode, proc.stderr)
    assert fired("a short step", "0.2") in proc.stderr, proc.stderr


def test_a_lifted_guard_does_not_fire_and_a_new_one_does() -> None:
    proc, _ = run(f"""
        mpi.guard(0.3, 'a lifted step')
        mpi.guard(None, '')
        time.sleep(1.0)  # past the lifted deadline: the watchdog thread wakes, goes idle
        print('alive', flush=True)
        mpi.guard(0.2, 'the next step')
        {SLEEP}
    """)
    assert proc.returncode == WATCHDOG_EXIT, (proc.returncode, proc.stderr)
    assert proc.stdout.strip() == "alive", proc.stderr
    assert "a lifted step" not in proc.stderr
    assert fired("the next step", "0.2") in proc.stderr, proc.stderr


def test_the_backstop_of_a_guard_moved_many_times_ends_a_process_that_holds_the_lock(
        ) -> None:
    """BACKSTOP_S to BACKSTOP_S + BACKSTOP_SLACK_S after the last guard's deadline (and the
    exit EXIT_DELAY_S after the stacks). time.monotonic is one clock for all processes."""
    proc, _ = run(f"""
        mpi.BACKSTOP_S = 1.0
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            last = time.monotonic()
            mpi.guard(0.2, 'a step')
            time.sleep(0.005)
        print(last, flush=True)
        threading.Timer(0.1, lambda: print('a Python thread ran', flush=True)).start()
        {HOLD}
    """)
    ended = time.monotonic()
    assert proc.returncode == WATCHDOG_EXIT, (proc.returncode, proc.stderr)
    assert "a Python thread ran" not in proc.stdout  # the lock really was held
    assert "watchdog on rank" not in proc.stderr  # the watchdog's thread never ran either
    delay = re.search(r"Timeout \(0:00:(\d+\.?\d*)\)", proc.stderr)
    assert delay is not None, proc.stderr
    assert float(delay[1]) <= 0.2 + 1.0 + mpi.BACKSTOP_SLACK_S + 0.01, delay[0]
    after_last = ended - float(proc.stdout.split()[0])
    # never before the backstop's time; the upper limit (the process would hold the lock
    # for hours) is 4x what a quiet machine needs, so a loaded one passes too
    needed = 0.2 + 1.0 + mpi.BACKSTOP_SLACK_S + backstop.EXIT_DELAY_S
    assert 0.2 + 1.0 + backstop.EXIT_DELAY_S <= after_last < 4 * needed, after_last
