"""Feed the per-pattern and per-type values of b_eff_io 2.1 runs (their .prot files) through
beff's reduction and compare with what the original printed in .sum and on stdout.

The .prot prints every bandwidth in MB/s with three decimals, so the inputs are known to
+-0.0005 MB/s. Every figure is monotone in its inputs: for each printed figure we evaluate the
reduction on the lower and upper ends. Where both ends print the same, the data decides the
figure and our value must print identically; otherwise the printed value must lie within
the bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from beff.io import plan
from beff.io.reduce import ACCESSES, TYPES, Partition, maximum, reduce_partition

DATA = Path(__file__).resolve().parent.parent / "data" / "beffio-2.1-reference"
RUNS = ("np2", "np3", "np4")
HALF = 0.0005  # MB/s: half of the last printed digit
PROT_TYPE = {"scatter": 0, "shared": 1, "separated": 2, "segmented": 3, "seg_coll": 4}


@dataclass
class Prot:
    rewrite_all: bool
    partitions: list[int] = field(default_factory=list)
    bw_type: dict[int, np.ndarray] = field(default_factory=dict)  # n -> [access, type] MB/s
    bw_pat: dict[int, np.ndarray] = field(default_factory=dict)  # n -> [access, pattern]
    reps: dict[int, np.ndarray] = field(default_factory=dict)  # n -> [pattern], write phase
    chunk: dict[int, np.ndarray] = field(default_factory=dict)  # n -> [pattern] l in bytes
    lmax: int = 0


PAT = re.compile(r"^n=(\d+)\s+a=(\d) type=(\d) p=\s*(\d+) Tp=\s*[\d.]+ l=\s*(\d+) L=\s*(\d+) "
                 r"\S+\s+r=\s*(\d+) .* bw=\s*([\d.]+) MB/s")
TYPE_LINE = re.compile(r"b_eff_io_(write|rewrite|read)_(\w+)=\s*([\d.]+) MB/s")


def parse_prot(path: Path) -> Prot:
    text = path.read_text()
    header = text.split("\n\n\n")[0]
    prot = Prot(rewrite_all="-rewrite" in header)
    prot.lmax = round(float(re.search(r"Maximum chunk size\s*=\s*([\d.]+)", text)[1]) * (1 << 20))
    n = 0
    for line in text.splitlines():
        m = PAT.match(line)
        if m:
            n, a, p = int(m[1]), int(m[2]), int(m[4])
            if n not in prot.partitions:
                prot.partitions.append(n)
                prot.bw_type[n] = np.full((3, 5), np.nan)
                prot.bw_pat[n] = np.full((3, plan.NPATTERNS), np.nan)
                prot.reps[n] = np.zeros(plan.NPATTERNS, dtype=np.int64)
                prot.chunk[n] = np.zeros(plan.NPATTERNS, dtype=np.int64)
            prot.bw_pat[n][a, p] = float(m[8])
            if a == 0:
                prot.reps[n][p] = int(m[7])
                prot.chunk[n][p] = int(m[5])
            continue
        t = TYPE_LINE.search(line)
        if t and line.startswith(" total pattern type"):
            prot.bw_type[n][ACCESSES.index(t[1]), PROT_TYPE[t[2]]] = float(t[3])
    return prot


@dataclass
class Sum:
    averages: dict[int, list[float]] = field(default_factory=dict)  # write, rewrite, read
    b_eff_io: dict[int, float] = field(default_factory=dict)
    rows: dict[int, dict[tuple[str, int], list[str]]] = field(default_factory=dict)
    totals: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    final: tuple[float, int] = (0.0, 0)


def parse_sum(path: Path) -> Sum:
    s = Sum()
    n = 0
    for line in path.read_text().splitlines():
        if m := re.match(r"Summary of file I/O bandwidth accumulated on\s+(\d+) processes", line):
            n = int(m[1])
            s.averages[n], s.rows[n], s.totals[n] = [], {}, {}
        elif m := re.match(r"weighted average bandwidth for (\w+)\s*:\s*([\d.]+) MB/s", line):
            s.averages[n].append(float(m[2]))
        elif m := re.match(r"b_eff_io of these measurements =\s*([\d.]+) MB/s", line):
            s.b_eff_io[n] = float(m[1])
        elif m := re.match(r"\s*\d+ PEs (\d)\s+(\d+) (\w+)\s+(.*)$", line):
            s.rows[n][(m[3], int(m[1]))] = m[4].split()
        elif m := re.match(r"\s*\d+ PEs\s+total-(\w+)\s+(.*)$", line):
            s.totals[n][m[1]] = m[2].split()
        elif m := re.match(r"\s*b_eff_io =\s*([\d.]+) MB/s on (\d+) processes", line):
            s.final = (float(m[1]), int(m[2]))
    return s


def figures(prot: Prot, shift: float) -> dict[int, Partition]:
    """Our reduction of the per-type values, each moved by ``shift`` MB/s."""
    return {n: reduce_partition(n, (prot.bw_type[n] + shift) * 1e6, prot.rewrite_all)
            for n in prot.partitions}


def assert_printed(printed: float, lo: float, ours: float, hi: float, what: str) -> None:
    lo_s, hi_s, ours_s = (f"{v / 1e6:.3f}" for v in (lo, hi, ours))
    if lo_s == hi_s:
        assert ours_s == f"{printed:.3f}", f"{what}: ours {ours_s}, printed {printed:.3f}"
    else:
        assert lo / 1e6 - 5e-4 <= printed <= hi / 1e6 + 5e-4, f"{what}: {printed} not in bounds"


@pytest.mark.parametrize("run", RUNS)
def test_reduction_reproduces_sum_and_final_line(run: str) -> None:
    prot = parse_prot(DATA / run / "b_eff_io.prot")
    summ = parse_sum(DATA / run / "b_eff_io.sum")
    assert prot.partitions == sorted(summ.b_eff_io) and len(prot.partitions) >= 2
    lo, mid, hi = figures(prot, -HALF), figures(prot, 0.0), figures(prot, HALF)
    for n in prot.partitions:
        for i, name in enumerate(("write", "rewrite", "read")):
            assert_printed(summ.averages[n][i], getattr(lo[n], name), getattr(mid[n], name),
                           getattr(hi[n], name), f"{run} n={n} {name} average")
        assert_printed(summ.b_eff_io[n], lo[n].b_eff_io, mid[n].b_eff_io, hi[n].b_eff_io,
                       f"{run} n={n} b_eff_io")
    best = maximum(list(mid.values()))
    assert best is not None
    assert (f"{best.b_eff_io / 1e6:.3f}", best.nprocs) == (f"{summ.final[0]:.3f}", summ.final[1])
    stdout = (DATA / run / "stdout.txt").read_text()
    assert f"b_eff_io = {best.b_eff_io / 1e6:8.3f} MB/s on {best.nprocs} processes" in stdout


@pytest.mark.parametrize("run", RUNS)
def test_summary_table_rows_are_the_patterns_at_their_positions(run: str) -> None:
    """Every cell of the .sum table is one pattern's bandwidth from the .prot, placed by the
    pattern table's (type, pos); the total-<access> rows are the per-type values."""
    prot = parse_prot(DATA / run / "b_eff_io.prot")
    summ = parse_sum(DATA / run / "b_eff_io.sum")
    for n in prot.partitions:
        for a, access in enumerate(ACCESSES):
            measured = not (a == 1 and not prot.rewrite_all)
            for p, (ptype, _, _, _, _, pos) in enumerate(plan.PATTERNS):
                if not 1 <= pos <= 7:
                    continue
                cell = summ.rows[n][(access, pos)][ptype]
                if measured or ptype == 0:
                    assert cell == f"{prot.bw_pat[n][a, p]:.3f}", (run, n, access, p)
                else:
                    assert cell == "-"
            totals = summ.totals[n][access]
            for t in range(len(TYPES)):
                if measured or t == 0:
                    assert totals[t] == f"{prot.bw_type[n][a, t]:.3f}"


@pytest.mark.parametrize("run", RUNS)
def test_chunk_sizes_and_replayed_repetitions(run: str) -> None:
    """Lmax, the chunk sizes of the 43 patterns, and the repetitions of types 3 and 4
    derived from types 0-2, with the fill-up chunk that completes the segment."""
    prot = parse_prot(DATA / run / "b_eff_io.prot")
    sz = plan.sizes(prot.lmax)
    for n in prot.partitions:
        reps, segment = plan.derived_repetitions(list(prot.reps[n]), sz)
        assert reps == list(prot.reps[n]), (run, n)
        full = plan.with_fill(sz, segment, reps)
        assert full.l == list(prot.chunk[n]), (run, n)
        assert segment % (1 << 20) == 0
