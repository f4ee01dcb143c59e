"""``--format imb`` against IMB 2021.11's own output (tests/data/imb-samples)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from beff.bench import view as report
from beff.results.model import OK, TIME_OUT, Measurement
from tests.views import imb_header

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "imb-samples"


def blocks(text: str) -> dict[tuple[str, int], list[str]]:
    """Split IMB text into benchmark blocks keyed by (name, #processes)."""
    out: dict[tuple[str, int], list[str]] = {}
    for chunk in text.split("\n\n#---")[1:]:
        lines = ("#---" + chunk).split("\n")
        name = re.match(r"# Benchmarking (\S+) ", lines[1])
        procs = re.match(r"# #processes = (\d+) ", lines[2])
        if name and procs:
            out[(name.group(1), int(procs.group(1)))] = [
                ln for ln in lines if ln.strip() and not ln.startswith("# All processes")]
    return out


def measurement_from(lines: list[str], kind: str, time_scale: float = 1.0,
                     bw_scale: float = 1.0) -> Measurement:
    """A Measurement whose three ranks reproduce the block's t_min/t_max/t_avg exactly."""
    titles = lines[4].split()
    rows = [ln.split() for ln in lines[5:] if not ln.startswith("#")]
    sizes, reps, times = [], [], []
    for row in rows:
        vals = dict(zip(titles, row, strict=True))
        sizes.append(int(vals.get("#bytes", 0)))
        reps.append(int(vals["#repetitions"]))
        if "t[usec]" in vals:
            t = float(vals["t[usec]"])
            times.append([t, t, t])
        else:
            lo, hi, avg = (float(vals[k]) for k in ("t_min[usec]", "t_max[usec]", "t_avg[usec]"))
            times.append([lo, hi, 3 * avg - lo - hi])
    S = len(rows)
    return Measurement(
        suite="mpi1", benchmark=lines[1].split()[2], kind=kind, nprocs=int(lines[2].split()[3]),
        ngroups=1, multi=None, idle=0, sizes=np.array(sizes), repetitions=np.array(reps),
        status=[OK] * S, times=np.array(times) * 1e-6, group=np.zeros(3, dtype=int),
        world_ranks=np.arange(3), samples=np.zeros((S, 3, 1)),
        batch_iters=np.ones((S, 3, 1), dtype=int), time_scale=time_scale, bw_scale=bw_scale,
    )


def compare(ours: list[str], theirs: list[str]) -> None:
    assert ours[:5] == theirs[:5]  # dashes, names, dashes, column titles, character for character
    assert len(ours) == len(theirs)
    for a, b in zip(ours[5:], theirs[5:], strict=True):
        assert len(a) == len(b)
        fa, fb = a.split(), b.split()
        assert fa[:2] == fb[:2]  # sizes and repetitions exactly
        # Times and bandwidth are recomputed from the printed (rounded) times.
        assert [float(x) for x in fa[2:]] == pytest.approx([float(x) for x in fb[2:]],
                                                           rel=6e-3, abs=0.011)


@pytest.mark.parametrize("name,kind,scale,bw", [
    ("PingPong", "single_transfer", 0.5, 1.0),
    ("PingPing", "single_transfer", 1.0, 1.0),
    ("Sendrecv", "parallel_transfer", 1.0, 2.0),
    ("Exchange", "parallel_transfer", 1.0, 4.0),
])
def test_point_to_point_blocks_match_imb(name: str, kind: str, scale: float, bw: float) -> None:
    theirs = blocks((SAMPLES / "mpi1-np2-pt2pt-time1-quiet.txt").read_text())[(name, 2)]
    m = measurement_from(theirs, kind, scale, bw)
    ours = [ln for ln in report.imb_block(m).split("\n") if ln.strip()]
    compare(ours, theirs)


def test_collective_and_barrier_blocks_match_imb() -> None:
    text = (SAMPLES / "mpi1-np2-coll-msglog0-16-time0.5-quiet.txt").read_text()
    for (name, _), theirs in blocks(text).items():
        kind = "sync" if name == "Barrier" else "collective"
        ours = [ln for ln in report.imb_block(measurement_from(theirs, kind)).split("\n")
                if ln.strip()]
        compare(ours, theirs)


def test_idle_line_and_time_out_row() -> None:
    m = Measurement(
        suite="mpi1", benchmark="PingPong", kind="single_transfer", nprocs=2, ngroups=1,
        multi=None, idle=1, sizes=np.array([0, 1]), repetitions=np.array([10, 0]),
        status=[OK, TIME_OUT], times=np.array([[1e-6, 1e-6], [np.nan, np.nan]]),
        group=np.zeros(2, dtype=int), world_ranks=np.arange(2), samples=np.zeros((2, 2, 1)),
        batch_iters=np.ones((2, 2, 1), dtype=int), time_scale=0.5,
    )
    text = report.imb_block(m)
    assert "# ( 1 additional process waiting in MPI_Barrier)\n" in text
    assert "            1 time-out.; Time limit (secs_per_sample * msg_sizes_list_len) is over;" \
        in text


def test_multi_mode_group_header_and_rows() -> None:
    theirs = (SAMPLES / "format-sample-mpi1-np4-multi1.txt").read_text()
    m = Measurement(
        suite="mpi1", benchmark="PingPong", kind="single_transfer", nprocs=2, ngroups=2,
        multi=1, idle=0, sizes=np.array([0]), repetitions=np.array([20]), status=[OK],
        times=np.array([[26.86e-6, 26.86e-6, 25.07e-6, 25.07e-6]]),
        group=np.array([0, 0, 1, 1]), world_ranks=np.arange(4), samples=np.zeros((1, 4, 1)),
        batch_iters=np.ones((1, 4, 1), dtype=int), time_scale=0.5,
    )
    ours = report.imb_block(m)
    expected_head = (
        "\n#----------------------------------------------------------------\n"
        "# Benchmarking Multi-PingPong \n"
        "# ( 2 groups of 2 processes each running simultaneous ) \n"
        "# Group  0:     0    1\n# \n# Group  1:     2    3\n# \n"
        "#----------------------------------------------------------------\n"
        "        Group       #bytes #repetitions      t[usec]   Mbytes/sec\n\n"
        "            0            0           20        26.86         0.00\n"
        "            1            0           20        25.07         0.00\n"
    )
    assert ours == expected_head
    assert expected_head in theirs


def test_global_header_layout() -> None:
    attrs = {"config": {"suite": "mpi1", "msglog_min": 0, "msglog_max": 22},
             "command_line": ["beff", "imb", "mpi1", "PingPong"], "created": "2026-11-22T01:00:00Z",
             "mpi": {"standard_version": "5.0", "thread_level": "single"},
             "host": {"machine": "x86_64", "system": "Linux", "release": "6", "version": "#1"}}
    text = imb_header(attrs, ["PingPong"])
    lines = text.split("\n")
    assert lines[2].startswith("#    beff ") and lines[2].endswith(", MPI-1 part")
    assert "# Calling sequence was: \n\n# beff imb mpi1 PingPong \n" in text
    assert "# Minimum message length in bytes:   0\n" in text
    assert "# Maximum message length in bytes:   4194304\n" in text
    assert "# MPI_Datatype                   :   MPI_BYTE \n" in text
    assert "# MPI_Op                         :   MPI_SUM  \n# \n# \n" in text
    assert text.endswith("# List of Benchmarks to run:\n\n# PingPong\n")
