"""The watchdogs' backstop ends a process whose interpreter lock is held (beff.core.backstop).

Each case runs in a subprocess that arms a watchdog and then holds the lock in one long C
call: ``sum(range(10**12))``. The builtin ``sum`` walks the range iterator in C, and the
interpreter only hands the lock to another thread between bytecodes, so no other Python
thread runs until it returns (hours later). (``time.sleep`` would not do: it lets go of the
lock.) A ``threading.Timer`` due before the backstop proves it: it never prints.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from beff.core import backstop
from beff.core.mpi import WATCHDOG_EXIT

HOLD = "sum(range(10**12))  # holds the interpreter lock for hours"
PROBE = ("threading.Timer(0.5, lambda: print('a Python thread ran', flush=True)).start()\n")


def run(body: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    code = "import threading\n" + textwrap.dedent(body)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout)
    return proc, time.monotonic() - start


@pytest.mark.parametrize("arm", [
    "from beff.core import backstop\nbackstop.arm('test', 1.0)",
    # the watchdogs themselves: their threads cannot fire, their backstops do
    "from beff.core import mpi\nmpi.BACKSTOP_S = 1.0\nmpi.guard(0.2, 'a step')",
    "from beff.core import mpi\nmpi.BACKSTOP_S = 1.0\nmpi.start_watchdog(0.2)",
], ids=["backstop", "guard", "timeout"])
def test_the_backstop_ends_a_process_that_holds_the_lock(arm: str) -> None:
    proc, _ = run(f"{arm}\n{PROBE}{HOLD}\nprint('returned')\n")
    assert proc.returncode == WATCHDOG_EXIT, (proc.returncode, proc.stderr)
    assert "a Python thread ran" not in proc.stdout  # the lock really was held
    assert "watchdog on rank" not in proc.stderr  # the watchdog's thread never ran either
    assert "Timeout (0:00:" in proc.stderr, proc.stderr  # faulthandler's stacks
    assert "most recent call first" in proc.stderr and "<string>" in proc.stderr


def test_a_disarmed_backstop_lets_the_process_live() -> None:
    proc, _ = run("""
        import time
        from beff.core import backstop
        backstop.arm('a', 1.0)
        backstop.arm('b', 1.5)
        backstop.disarm('a')
        backstop.disarm('b')
        time.sleep(1.0 + 0.5 + backstop.EXIT_DELAY_S + 1.0)
        print('alive')
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "alive", proc.stderr


def test_the_earliest_of_several_backstops_counts() -> None:
    proc, _ = run(f"""
        from beff.core import backstop
        backstop.arm('late', 600.0)
        backstop.arm('early', 1.0)
        {HOLD}
    """)
    # faulthandler names the delay that fired: the early one (the late one would say 0:10:0x)
    assert proc.returncode == WATCHDOG_EXIT and "Timeout (0:00:0" in proc.stderr, proc.stderr


def test_armed_reports_the_time_left() -> None:
    try:
        backstop.arm("test-report", 300.0)
        left = backstop.armed()["test-report"]
        assert 290 < left <= 300
    finally:
        backstop.disarm("test-report")
    assert "test-report" not in backstop.armed()


def test_local_work_lifts_the_step_guard_and_arms_it_again_in_full() -> None:
    """Compiling the timed loops (``unguarded``) is not a stall: the guard and its backstop
    are off meanwhile, and on again after, for the guard's whole time."""
    from beff.core import mpi

    try:
        mpi.guard(300.0, "a step")
        since = time.monotonic()  # the guard is armed again, for its whole time, after this
        with mpi.unguarded():
            assert mpi._deadline is None and "stall" not in backstop.armed()
            with mpi.unguarded():  # nested: still off
                assert "stall" not in backstop.armed()
            assert "stall" not in backstop.armed()
        assert mpi._guarding == (300.0, "a step") and mpi._deadline is not None
        left = backstop.armed()["stall"]
        assert 300.0 + mpi.BACKSTOP_S - (time.monotonic() - since) <= left <= \
            300.0 + mpi.BACKSTOP_S + mpi.BACKSTOP_SLACK_S, left
    finally:
        mpi.guard(None, "")
    assert "stall" not in backstop.armed()
    with mpi.unguarded():  # no guard: nothing to lift, nothing armed after
        pass
    assert mpi._deadline is None and "stall" not in backstop.armed()


def test_beff_calls_no_object_reduction() -> None:
    """mpi4py's object ``allreduce``/``reduce`` keep the interpreter lock while they wait
    (measured with mpi4py 4.1 and MPICH 5: a watchdog thread did not run until they
    returned; object bcast, gather, allgather and scatter let go of it): beff reduces
    buffers instead (``beff.core.mpi.allreduce_number``)."""
    import re
    from pathlib import Path

    import beff

    calls = re.compile(r"\w*(comm|world|COMM_\w+)\w*\.(allreduce|reduce|scan|exscan)\(")
    found = [f"{path.name}:{n}" for path in Path(beff.__file__).parent.rglob("*.py")
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if calls.search(line.split("#")[0]) and '"""' not in line and "``" not in line]
    assert found == []


def test_arming_a_later_backstop_than_the_earliest_leaves_faulthandler_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """faulthandler's thread is restarted only when the earliest deadline changes."""
    import faulthandler

    calls: list[float] = []
    real = faulthandler.dump_traceback_later
    monkeypatch.setattr(faulthandler, "dump_traceback_later",
                        lambda timeout, **kw: (calls.append(timeout), real(timeout, **kw))[1])
    try:
        backstop.arm("test-early", 300.0)
        backstop.arm("test-late", 600.0)  # not the earliest: nothing to restart
        backstop.arm("test-late", 700.0)
        assert len(calls) == 1 and 290 < calls[0] <= 300
        backstop.arm("test-early", 200.0)  # the earliest moves: restarted
        assert len(calls) == 2 and 190 < calls[1] <= 200
        backstop.disarm("test-early")  # now the late one is the earliest
        assert len(calls) == 3 and 690 < calls[2] <= 700
    finally:
        backstop.disarm("test-early")
        backstop.disarm("test-late")
    assert "test-late" not in backstop.armed()


def caught(mask_line: str, signum: int) -> bool:
    return bool(int(mask_line.split()[-1], 16) >> (signum - 1) & 1)


def test_a_ctrl_c_in_c_arms_two_alarms_that_end_the_process_16_s_later() -> None:
    """InterruptInC (a Ctrl-C inside MPI_Init, where no Python handler runs) without MPI, in
    Python code that runs on meanwhile: a SIGINT arms a 2 s alarm, which arms a 14 s one and
    leaves SIGALRM to its default action (the process's end); restore() cancels the alarm and
    says that a Ctrl-C came. (tests/mpi/test_interrupt.py proves the end, inside MPI_Init.)"""
    proc, _ = run("""
        import os, signal, time
        from beff.core.backstop import InterruptInC
        def sigcgt():
            return next(line for line in open('/proc/self/status') if line.startswith('SigCgt'))
        c = InterruptInC()
        c.install()
        print(c.active, sigcgt().strip())
        os.kill(os.getpid(), signal.SIGINT)
        print(round(signal.getitimer(signal.ITIMER_REAL)[0], 1))
        time.sleep(2.5)  # the first alarm goes off
        print(round(signal.getitimer(signal.ITIMER_REAL)[0]), sigcgt().strip())
        print(c.restore(), signal.getitimer(signal.ITIMER_REAL)[0], flush=True)
        """)
    assert proc.returncode == 0, proc.stderr
    installed, first, second, restored = proc.stdout.splitlines()
    assert installed.startswith("True ") and caught(installed, signal.SIGALRM)
    assert caught(installed, signal.SIGINT)
    assert 1.5 <= float(first) <= 2.0, first  # alarm(2), the signal's number
    assert second.split()[0] in ("13", "14"), second  # alarm(14): SIGALRM's number
    assert not caught(second, signal.SIGALRM), second  # the one-shot handler is gone
    assert restored == "True 0.0", restored
