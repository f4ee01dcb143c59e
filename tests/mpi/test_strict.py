"""``--strict`` on real runs at 2 ranks: a run with a forced time-out row (IMB's ``-time``
budget of a microsecond) exits 4 on the launcher, after writing a complete, readable file,
with one ``beff: strict:`` line; a clean run exits 0; without ``--strict`` nothing changes.
The lines a run prints live are those ``beff show --format lines`` prints of its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from beff.api import load
from beff.results import strict, warnings
from tests.mpirun import beff, mpirun, runs

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]  # also in the Open MPI tier of the tests

QUICK = ["-msglog", "0:2", "-iter", "50", "-iter_policy", "off"]
# A budget of a microsecond per size: IMB's time-out row at the first size of each benchmark.
TIMED_OUT = ["imb", "mpi1", "PingPong", "Allreduce", *QUICK, "-time", "1e-6"]
CLEAN = ["imb", "mpi1", "PingPong", *QUICK]


def strict_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("beff: strict:")]


def test_a_time_out_under_strict_exits_4_on_the_launcher(tmp_path: Path) -> None:
    out = tmp_path / "t.h5"
    r = mpirun(2, *TIMED_OUT, "--strict", "--format", "lines", "-o", str(out), timeout=180)
    assert r.returncode == 4, r.stderr
    record = load(out)  # written in full before the exit
    assert record.attrs["status"] == "complete"
    assert [m.status[0] for m in record.measurements] == ["time-out", "time-out"]
    said = strict_lines(r.stderr)
    assert said == [strict.line(strict.reasons(record))], r.stderr
    assert said[0].startswith("beff: strict: PingPong at 2 processes: time-out at 0 bytes; "
                              "Allreduce at 2 processes: time-out at 0 bytes")
    assert r.stdout == ("mpi1.PingPong.np2.0B.status time-out -\n"
                        "mpi1.Allreduce.np2.0B.status time-out -\n"
                        "run.status complete -\n")
    shown = beff("show", str(out), "--format", "lines", "--strict")
    assert shown.returncode == 4 and shown.stdout == r.stdout
    assert strict_lines(shown.stderr) == said


def test_a_clean_run_under_strict_exits_0_and_without_it_nothing_changes(
        tmp_path: Path) -> None:
    found = runs(2, {"clean": [*CLEAN, "--strict", "--format", "lines"],
                     "timed out": [*TIMED_OUT, "--format", "lines"]}, tmp_path)
    clean = found["clean"]
    record = load(clean.out)
    # where the machine's cores are fewer than the ranks, the run is oversubscribed: void
    voided = warnings.OVERSUBSCRIBED in record.warnings
    assert clean.returncode == (4 if voided else 0), clean.stderr
    assert len(strict_lines(clean.stderr)) == (1 if voided else 0), clean.stderr
    assert clean.stdout == beff("show", str(clean.out), "--format", "lines").stdout
    assert "mpi1.PingPong.np2.4B.t_avg_us " in clean.stdout
    timed_out = found["timed out"]  # the time-out without --strict: exit 0, as ever
    assert timed_out.returncode == 0 and strict_lines(timed_out.stderr) == []
    assert "mpi1.PingPong.np2.0B.status time-out -\n" in timed_out.stdout
