"""Slow is not hung (issue: what a user sees, item 3): an IMB-P2P size whose fixed repetitions
last longer than --stall-timeout finishes, as IMB-P2P itself would; a stopped rank in the
same command is still caught within the stall limit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from beff.results.archive import load
from tests.mpirun import assert_watchdog_fired, launcher, mpirun, stop_a_rank_of

pytestmark = pytest.mark.mpi
STALL_S = 3


def seconds_per_repetition(tmp_path: Path) -> float:
    out = tmp_path / "probe.h5"
    r = mpirun(2, "imb", "p2p", "-msglog", "0:0", "-iter", "50000", "-o", str(out),
               "PingPong")  # many: 2,000 took 10 us each here, 450,000 took 4 us
    assert r.returncode == 0, r.stderr
    return repetitions(out)[0]


def repetitions(out: Path) -> tuple[float, int]:
    """Seconds one repetition of the file's PingPong lasted, and how many it ran: IMB's time
    is half a round trip, and a repetition is one round trip."""
    m = load(out).measurements[0]
    return 2 * float(m.times[0].max()), int(m.repetitions[0])


def test_a_size_longer_than_the_stall_limit_finishes(tmp_path: Path) -> None:
    """The repetitions are set so that the one size lasts about 1.5 stall limits by the
    machine's own speed (more, until it lasts longer than one: the load may change
    meanwhile). Its two ranks keep both cores busy all that time, so no longer."""
    per = seconds_per_repetition(tmp_path)
    n = int(1.5 * STALL_S / per)
    for attempt in range(3):
        out = tmp_path / f"slow{attempt}.h5"
        r = mpirun(2, "imb", "p2p", "-msglog", "0:0", "-iter", str(n), "--stall-timeout",
                   str(STALL_S), "-o", str(out), "PingPong", timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "watchdog" not in r.stderr
        seconds, count = repetitions(out)
        lasted = seconds * count
        if lasted > STALL_S:
            return  # it outlasted the stall limit, and was not taken for hung
        n = int(n * 2 * STALL_S / max(lasted, 1e-3))
    pytest.fail("no size lasted longer than the stall limit on this machine")


def test_a_stopped_rank_is_still_caught(tmp_path: Path) -> None:
    out = tmp_path / "stopped.h5"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "imb", "p2p", "-msglog",
           "0:12", "-iter", "2000", "--stall-timeout", str(STALL_S), "--format", "csv", "-o",
           str(out), "PingPong", "PingPing", "Unirandom", "Birandom"]
    proc, err, waited = stop_a_rank_of(cmd, str(out), ready_line="p2p,PingPong")
    assert_watchdog_fired(proc, err, waited, STALL_S)
