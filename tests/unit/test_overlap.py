"""IMB-NBC/MPI4's overlap figures and text layout, against hand-computed values and IMB 2021.11's
own output (tests/data/imb-samples)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from beff.bench import view as report
from beff.bench.registry import load_suite
from beff.results import stats
from beff.results.model import OK, Measurement
from tests.unit.test_report_imb import blocks
from tests.views import imb_header

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "imb-samples"
NBC_SAMPLE = SAMPLES / "nbc-np2-msglog0-16-time0.5-quiet.txt"
MPI4_SAMPLE = SAMPLES / "format-sample-mpi4-np2.txt"


@pytest.mark.parametrize("t_pure,t_cpu,t_ovrl,expected", [
    (2.0, 2.0, 4.0, 0.0),  # nothing hidden: ovrl = pure + cpu
    (2.0, 2.0, 2.0, 100.0),  # all hidden
    (3.0, 1.0, 3.5, 100 * 0.5 / 3.0),  # denominator: the larger of the two
    (1.0, 4.0, 4.25, 18.75),
    (2.0, 2.0, 5.0, 0.0),  # slower than both in a row: clipped at 0
    (2.0, 2.0, 1.0, 100.0),  # faster than either: clipped at 100
    (0.0, 0.0, 0.0, 0.0),  # no time at all
])
def test_overlap_formula_by_hand(t_pure: float, t_cpu: float, t_ovrl: float,
                                 expected: float) -> None:
    got = stats.overlap_percent(np.array([t_pure]), np.array([t_cpu]), np.array([t_ovrl]))
    assert got[0] == pytest.approx(expected)


def overlap_measurement(ovrl: list[list[float]], pure: list[list[float]],
                        cpu: list[list[float]], group: list[int] | None = None) -> Measurement:
    """Seconds per [size][rank] of the three metrics."""
    o, p, c = (np.array(x) for x in (ovrl, pure, cpu))
    S, R = o.shape
    return Measurement(
        suite="nbc", benchmark="Ibcast", kind="collective", nprocs=R, ngroups=1, multi=None,
        idle=0, sizes=np.arange(S), repetitions=np.full(S, 10), status=[OK] * S, times=o,
        group=np.array(group or [0] * R), world_ranks=np.arange(R),
        samples=np.zeros((S, R, 1)), batch_iters=np.ones((S, R, 1), dtype=int),
        columns=("bytes", "repetitions", "t_ovrl", "t_pure", "t_cpu", "overlap"),
        metric="t_ovrl", more_times={"t_pure": p, "t_cpu": c},
    )


def test_figures_come_from_the_rank_with_the_largest_t_ovrl() -> None:
    # rank 1 has the largest t_ovrl; ranks 0 and 2 have the largest t_pure and t_CPU
    m = overlap_measurement(ovrl=[[5e-6, 6e-6, 4e-6]], pure=[[4e-6, 3e-6, 1e-6]],
                            cpu=[[1e-6, 2e-6, 9e-6]])
    o = stats.overlap(m)
    assert (o.t_ovrl[0], o.t_pure[0], o.t_cpu[0]) == pytest.approx((6.0, 3.0, 2.0))
    assert o.percent[0] == 0.0  # (3 + 2 - 6) < 0
    m.times[0, 1] = 4.5e-6  # now rank 0 is the slowest: (4 + 1 - 5) / 4 = 0
    m.more_times["t_cpu"][0, 0] = 2e-6  # (4 + 2 - 5) / 4 = 25 %
    o = stats.overlap(m)
    assert (o.t_pure[0], o.percent[0]) == pytest.approx((4.0, 25.0))


def test_groups_are_reported_separately() -> None:
    m = overlap_measurement(ovrl=[[2e-6, 3e-6, 8e-6, 7e-6]], pure=[[1e-6, 2e-6, 5e-6, 6e-6]],
                            cpu=[[1e-6, 1e-6, 4e-6, 1e-6]], group=[0, 0, 1, 1])
    assert stats.overlap(m, 0).t_pure[0] == pytest.approx(2.0)
    assert stats.overlap(m, 1).t_pure[0] == pytest.approx(5.0)
    assert stats.overlap(m).t_ovrl[0] == pytest.approx(8.0)


def from_block(lines: list[str], suite: str) -> Measurement:
    """One rank whose three timings are the block's printed ones."""
    titles = lines[4].replace(" overlap[%]", "overlap[%]").split()
    rows = [dict(zip(titles, ln.split(), strict=True)) for ln in lines[5:]]
    S = len(rows)
    o, p, c = (np.array([[float(r[k])] for r in rows]) * 1e-6
               for k in ("t_ovrl[usec]", "t_pure[usec]", "t_CPU[usec]"))
    name = lines[1].split()[2]
    spec = load_suite(suite)[name.lower()]
    return Measurement(
        suite=suite, benchmark=name, kind=spec.kind.value, nprocs=2, ngroups=1, multi=None,
        idle=0, sizes=np.array([int(r.get("#bytes", 0)) for r in rows]),
        repetitions=np.array([int(r["#repetitions"]) for r in rows]), status=[OK] * S,
        times=o, group=np.zeros(1, dtype=int), world_ranks=np.arange(1),
        samples=np.zeros((S, 1, 1)), batch_iters=np.ones((S, 1, 1), dtype=int),
        columns=spec.table_columns, metric="t_ovrl", more_times={"t_pure": p, "t_cpu": c},
    )


def compare_overlap_block(ours: list[str], theirs: list[str]) -> None:
    assert ours[:5] == theirs[:5]  # dashes, name, dashes, titles: character for character
    assert len(ours) == len(theirs)
    for a, b in zip(ours[5:], theirs[5:], strict=True):
        assert len(a) == len(b)
        fa, fb = a.split(), b.split()
        assert fa[:-1] == fb[:-1]  # sizes, repetitions and the three times exactly
        times = [float(x) for x in fa[-4:-1]]
        if max(times[1:]) >= 1.0:  # overlap[%] from rounded times: within rounding
            assert float(fa[-1]) == pytest.approx(float(fb[-1]), abs=1.5)


def test_nbc_blocks_match_imb() -> None:
    found = blocks(NBC_SAMPLE.read_text())
    assert len(found) == 13
    for theirs in found.values():
        ours = [ln for ln in report.imb_block(from_block(theirs, "nbc")).split("\n")
                if ln.strip()]
        compare_overlap_block(ours, theirs)


def test_mpi4_blocks_match_imb() -> None:
    found = blocks(MPI4_SAMPLE.read_text())
    for name in ("Bcast_persist", "Barrier_persist"):
        theirs = found[(name, 2)]
        ours = [ln for ln in report.imb_block(from_block(theirs, "mpi4")).split("\n")
                if ln.strip()]
        compare_overlap_block(ours, theirs)
    theirs = found[("Bcast_persist_pure", 2)]
    assert theirs[4] == "".join(f"{t:>13}" for t in ("#bytes", "#repetitions", "t_min[usec]",
                                                     "t_max[usec]", "t_avg[usec]"))
    assert load_suite("mpi4")["bcast_persist_pure"].table_columns == (
        "bytes", "repetitions", "t_min", "t_max", "t_avg")


@pytest.mark.parametrize("suite,sample,part", [("nbc", NBC_SAMPLE, "MPI-NBC"),
                                               ("mpi4", MPI4_SAMPLE, "MPI-4")])
def test_global_header_whitespace_per_component(suite: str, sample: Path, part: str) -> None:
    attrs = {"config": {"suite": suite, "msglog_min": 0, "msglog_max": 16},
             "command_line": ["beff", "imb", suite], "created": "2026-11-22T01:00:00Z",
             "mpi": {"standard_version": "5.0", "thread_level": "single"},
             "host": {"machine": "x86_64", "system": "Linux", "release": "6", "version": "#1"}}
    ours = imb_header(attrs, ["Ibcast"]).split("\n")
    theirs = sample.read_text().split("\n")
    assert ours[2].endswith(f", {part} part") and theirs[2].endswith(f", {part} part")
    cmd = ours.index("# Calling sequence was: ") + 2
    assert ours[cmd] == "# beff imb " + suite  # NBC and MPI4: no trailing space
    start = ours.index("#")
    assert ours[start : start + 6] == theirs[theirs.index("#"): theirs.index("#") + 6]
