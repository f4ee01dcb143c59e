"""beff's IMB suites against the real IMB-MPI1, IMB-NBC, IMB-MPI4, IMB-EXT, IMB-RMA, IMB-IO, IMB-P2P
or IMB-MT: the same flags, run alternately, side by side.

README
======

This script does not build IMB. Build IMB-MPI1, IMB-NBC, IMB-MPI4, IMB-EXT, IMB-RMA, IMB-IO,
IMB-P2P or IMB-MT (Intel MPI Benchmarks, e.g. 2021.11) yourself against the MPI that beff uses
(for the ``mpich`` wheel in a venv: ``make IMB-MPI1 IMB-P2P IMB-MT CC=mpicc CXX=mpicxx`` with
that venv's wrappers first on PATH; IMB-MT's Makefile adds -fopenmp only for compilers named
plainly, not by a full path) and pass the binary's path; the suite follows from its name
(``--suite`` overrides). EXT and RMA rows are named benchmark/mode.
Run from the repository root, with beff installed in the Python that runs it::

    python benchmarks/compare_imb.py /path/to/IMB-MPI1
    python benchmarks/compare_imb.py /path/to/IMB-MPI1 --rounds 7 \\
        --benchmarks Allreduce,Bcast,Barrier --flags "-msgsize 8,1024,65536 -iter 1000 -time 1"
    python benchmarks/compare_imb.py /path/to/IMB-MPI1 --wall --rounds 2 \\
        --benchmarks "" --flags "-msglog 0:20 -time 0.5"      # wall time, full default list
    python benchmarks/compare_imb.py /path/to/IMB-NBC --np 4     # NBC's default list
    python benchmarks/compare_imb.py /path/to/IMB-P2P --rounds 3  # 8 B, 1 KiB, 64 KiB, 1 MiB
    python benchmarks/compare_imb.py /path/to/IMB-MT --rounds 3 --threads 1 --flags "-repeat 1000"

What it does:

1. before every round, waits (``--load-wait`` seconds at most, polling every 30 s) until the
   1-minute load average is at most ``--max-load``, and records the load before each run;
   during each run it measures the CPU time other processes used (from /proc/stat, less the
   run's own), and repeats a round in which that exceeded ``--max-foreign`` cores (at most
   ``--retries`` times in all);
2. runs, ALTERNATELY (beff, IMB, beff, IMB, ...) ``--rounds`` times each, on ``--np`` ranks:

   * beff: ``mpiexec -n NP python -m beff imb mpi1 FLAGS -o TMP.h5 --no-progress [BEFF_FLAGS]
     BENCHMARKS`` (``--beff-flags``: beff-only options such as ``--format imb``)
   * IMB:  ``mpiexec -n NP IMB-MPI1 FLAGS BENCHMARKS``

   with the same FLAGS (IMB's own syntax; ``-npmin NP`` is added unless given, but not for
   P2P and MT, which have no such flag) and the same environment (this process's; the
   ``MPIR_CVAR_*``/``MPICH_*``/``OMP_*`` variables in it are printed). IMB-P2P's sizes go in
   a -msglen file unless the flags give -msglen, -msglog or -msgsz. IMB-MT gets
   ``OMP_NUM_THREADS=--threads`` (default 1) in the environment of both tools,
   ``-thread_level multiple`` (IMB-MT's default, single, runs one thread; beff's MT always runs
   under multiple) and, unless the flags give -count, the sizes as element counts (4-byte
   MPI_INT, 1-byte with ``-datatype char``): IMB-MT prints #bytes = count x size x threads;
3. reads per (benchmark, size) the figures: IMB-MPI1's t_avg (us; t[usec], the slower rank's
   time, for single-transfer tables), or IMB-NBC/MPI4's t_ovrl, t_pure, t_CPU (us) and
   overlap (%) of overlap tables; IMB-P2P's t[usec] (the ranks' average), Mbytes/sec and
   Msg/sec; IMB-MT's t_avg, Mbytes/sec and Msg/sec as it prints them (PingPongMT has no
   Msg/sec). beff's from its result file (``beff.results.archive.load`` and
   ``beff.results.stats``; for P2P and MT the columns of beff's own IMB-style table, as
   ``beff show --format imb`` prints them, unrounded), IMB's from its text output;
4. prints, per (benchmark, size, figure), the median of each tool over the rounds, the ratio
   beff / IMB and the difference beff - IMB of those medians, each side's min..max spread,
   and the verdict against the target: times (t_avg, t_pure) within [0.95, 1.05], or below
   64 KiB also within 0.1 us; t_CPU within [0.9, 1.1]; overlap within 10 percentage points;
   Mbytes/sec within [0.95, 1.05]; Msg/sec within [0.95, 1.05], or below 64 KiB also when
   the time per message it stands for (ranks / Msg/sec in P2P: the slowest rank's time per
   iteration; pairs of threads / Msg/sec in MT: t_avg) is within 0.1 us; t_ovrl is shown
   without a target;
5. for P2P and MT, a summary at 8 B, 1 KiB, 64 KiB and 1 MiB (per thread's message in MT):
   t and Msg/sec, and each miss with its reason (which bound it missed, and whether the two
   tools' min..max ranges over the rounds overlap, i.e. the difference is within the noise).

With ``--wall`` it times each whole ``mpiexec`` command instead and prints the median wall
time of each tool and their ratio (target: beff <= 1.15 x IMB).

Numbers from a small or shared machine are noisy: look at the spreads and the load column,
and raise ``--rounds`` when they are wide. Do not set progress-throttling variables
(``MPIR_CVAR_CH4_PROGRESS_THROTTLE`` ...) unless the ranks oversubscribe the cores; when you
do, both tools get them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from _tools import (  # benchmarks/ is on sys.path as a script
    compile_beff,
    find_tool,
    run,
    wait_for_load,
)

DEFAULT_BENCHMARKS = {
    "mpi1": "PingPong,PingPing,Sendrecv,Exchange,Allreduce,Reduce,Bcast,Alltoall,Allgather,Barrier",
    "nbc": "",  # IMB's default list
    "mpi4": "",
    "ext": "",
    "rma": "",
    # IMB-IO: the blocking benchmarks (the issue's targets), in aggregate mode
    "io": "S_Write_Indv,S_Read_Indv,P_Write_Expl,P_Read_Expl,C_Write_Indv,C_Read_Indv",
    "p2p": "",  # all eight (Stencil2D needs 4 ranks, Stencil3D 8: both tools skip them below)
    "mt": "PingPongMT,UniBandMT,BiBandMT",
}
DEFAULT_FLAGS = {"mpi1": "-msgsize 0,8,1024,65536,1048576 -iter 1000 -time 1",
                 "nbc": "-iter 1000 -time 1", "mpi4": "-iter 1000 -time 1",
                 "ext": "-iter 1000 -time 1", "rma": "-iter 1000 -time 1",
                 "io": "-iter 1000 -time 1 -aggregate_mode aggregate",
                 "p2p": "", "mt": ""}  # IMB-P2P's and IMB-MT's own defaults
# IMB-NBC, MPI4, EXT and RMA have no -msgsize: these sizes go to both tools in a -msglen
# file, unless the flags give -msglen or -msglog.
DEFAULT_SIZES = "8,1024,65536"
# IMB-P2P's and IMB-MT's default sizes (bytes of one thread's message in MT): the sizes of
# issue 25's fidelity table, which the summary shows.
RATE_SIZES = "8,1024,65536,1048576"
SUMMARY_SIZES = (8, 1024, 65536, 1048576)
SUITES = {"IMB-MPI1": "mpi1", "IMB-NBC": "nbc", "IMB-MPI4": "mpi4", "IMB-EXT": "ext",
          "IMB-RMA": "rma", "IMB-IO": "io", "IMB-P2P": "p2p", "IMB-MT": "mt"}
RATE_SUITES = ("p2p", "mt")  # one section at all ranks (no -npmin), with rate columns
P2P_BENCHMARKS = ("PingPong", "PingPing", "Unirandom", "Birandom", "Corandom", "Stencil2D",
                  "Stencil3D", "SendRecv_Replace")  # IMB-P2P's default list
# IMB-IO's targets (file systems are noisier): within 10 %, or below LARGE within 1 us.
IO_TARGET_RATIO = (0.9, 1.1)
IO_TARGET_DIFF_US = 1.0
# Below LARGE bytes: within TARGET_RATIO or TARGET_DIFF_US; from LARGE on: within TARGET_RATIO.
TARGET_RATIO = (0.95, 1.05)
TARGET_DIFF_US = 0.1
LARGE = 65536
TARGET_WALL_RATIO = 1.15
TARGET_CPU_RATIO = (0.9, 1.1)
TARGET_OVERLAP_PP = 10.0
NO_SIZE = -1  # key of benchmarks without a message size (Barrier)
# IMB column -> figure name
FIGURES = {"t_avg[usec]": "t_avg", "t[usec]": "t_avg", "t_ovrl[usec]": "t_ovrl",
           "t_pure[usec]": "t_pure", "t_CPU[usec]": "t_cpu", "overlap[%]": "overlap"}
# P2P and MT: also their rates (IMB-P2P's t[usec] is the ranks' average, hence t_avg too)
RATE_FIGURES = {**FIGURES, "Mbytes/sec": "MB/s", "Msg/sec": "msg/s"}
UNITS = {"overlap": "%", "MB/s": "MB/s", "msg/s": "msg/s"}  # else us

Key = tuple[str, int, str]  # benchmark (with "/mode" in EXT/RMA/IO), bytes, figure


@dataclass
class Series:
    """t_avg in microseconds per (benchmark, size), one entry per round; plus run facts."""

    name: str
    times: dict[Key, list[float]] = field(default_factory=dict)
    walls: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)
    foreign: list[float] = field(default_factory=list)

    def add(self, values: dict[Key, float]) -> None:
        for key, t in values.items():
            self.times.setdefault(key, []).append(t)


def shown(columns: list[str] | dict[str, str], figures: dict[str, str]) -> list[tuple[str, str]]:
    """(column, figure) for each of ``figures``' IMB columns among ``columns`` (t[usec] only
    where there is no t_avg[usec])."""
    return [(col, figure) for col, figure in figures.items()
            if col in columns and not (col == "t[usec]" and "t_avg[usec]" in columns)]


def parse_imb(output: str, nprocs: int, figures: dict[str, str] = FIGURES) -> dict[Key, float]:
    """{(benchmark, bytes, figure): value} from IMB-format text, for the sections at
    ``nprocs`` (t[usec], the slower rank's time, for the single-transfer tables); a benchmark
    that has none (IMB-IO's S_: one process) gives its section at the most processes.
    ``figures``: the IMB columns to read, and their names."""
    found: dict[tuple[str, int], dict[Key, float]] = {}
    bench, procs = "", 0
    columns: list[str] = []
    for line in output.splitlines():
        s = line.strip()
        if s.startswith("# Benchmarking "):
            bench, columns = s.split()[2], []
        elif s.startswith("#    MODE: "):
            bench = f"{bench}/{s.split()[2].lower()}"
        elif s.startswith("# #processes =") or s.startswith("#processes ="):
            procs = int(s.split("=", 1)[1].split()[0])
        elif s.startswith("#") and any(c in s for c in ("t_avg[usec]", "t[usec]",
                                                         "t_pure[usec]")):
            columns = [c for c in s.split() if c != "#"]
        elif columns and s and not s.startswith("#"):
            cells = s.split()
            if len(cells) < len(columns):
                continue
            try:
                row = dict(zip(columns, cells, strict=False))  # IMB may add columns
                size = int(row["#bytes"]) if "#bytes" in row else NO_SIZE
                into = found.setdefault((bench, procs), {})
                for col, figure in shown(columns, figures):
                    into[(bench, size, figure)] = float(row[col])
            except (KeyError, ValueError):
                continue
    return at_nprocs(found, nprocs)


def at_nprocs(found: dict[tuple[str, int], dict[Key, float]], nprocs: int) -> dict[Key, float]:
    """Per benchmark the values at ``nprocs`` processes, or else at the most processes."""
    best: dict[str, int] = {}
    for bench, procs in found:
        have = best.get(bench)
        if have != nprocs and (procs == nprocs or have is None or procs > have):
            best[bench] = procs
    out: dict[Key, float] = {}
    for bench, procs in best.items():
        out.update(found[(bench, procs)])
    return out


def read_beff(path: Path, nprocs: int) -> dict[Key, float]:
    """{(benchmark, bytes, figure): value} from a beff result file, chosen as
    :func:`parse_imb` chooses."""
    from beff.results.archive import load
    from beff.results.stats import overlap, summarize

    found: dict[tuple[str, int], dict[Key, float]] = {}
    for m in load(path).measurements:
        if "overlap" in m.columns:
            o = overlap(m)
            figures = {"t_ovrl": o.t_ovrl, "t_pure": o.t_pure, "t_cpu": o.t_cpu,
                       "overlap": o.percent}
        elif "rma_t_pure" in m.columns:  # IMB-RMA's Truly_passive_put
            figures = {k: summarize(m, metric=k).t_max for k in ("t_pure", "t_ovrl")}
        else:
            s = summarize(m)
            # t[usec] tables print the slower (or only timed) rank's time
            one = m.kind == "single_transfer" or "t_origin" in m.columns
            figures = {"t_avg": s.t_max if one else s.t_avg}
        sized = m.kind != "sync"
        name = f"{m.benchmark}/{m.mode}" if m.mode else m.benchmark
        into = found.setdefault((name, m.nprocs), {})
        for figure, values in figures.items():
            for size, v in zip(m.sizes, values, strict=True):
                into[(name, int(size) if sized else NO_SIZE, figure)] = float(v)
    return at_nprocs(found, nprocs)


def read_beff_table(path: Path, nprocs: int, suite: str) -> dict[Key, float]:
    """{(benchmark, bytes, figure): value} from a beff result file: the columns of beff's own
    IMB-style table (its view's, as ``beff show --format imb`` prints them, unrounded), named
    as :data:`RATE_FIGURES` names IMB's; the sizes it measured (status ok) only."""
    from beff.bench.view import table_columns
    from beff.core.suite import get
    from beff.results import columns
    from beff.results.archive import load
    from beff.results.model import OK

    get(suite).load("view")  # the suite's own columns (p2p_t, mt_msg_per_sec...) register there
    found: dict[tuple[str, int], dict[Key, float]] = {}
    for m in load(path).measurements:
        if m.unsupported:  # e.g. Stencil2D at 2 ranks: IMB-P2P says "invalid" too
            continue
        ids = table_columns(m)
        headers = {(c.imb.strip() if (c := columns.lookup(cid)) else cid): cid for cid in ids}
        table = columns.values(m, ids)
        name = f"{m.benchmark}/{m.mode}" if m.mode else m.benchmark
        into = found.setdefault((name, m.nprocs), {})
        for col, figure in shown(headers, RATE_FIGURES):
            for i, size in enumerate(m.sizes):
                v = float(table[headers[col]][i])
                if m.status[i] == OK and math.isfinite(v):
                    into[(name, int(size), figure)] = v
    return at_nprocs(found, nprocs)


def fmt_size(nbytes: int) -> str:
    if nbytes == NO_SIZE:
        return "-"
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def judge(figure: str, b: float, i: float, nbytes: int, bench: str = "",
          streams: float = 0.0) -> tuple[str, str]:
    """The verdict ("ok", "MISSED" or "-": no target) of beff's median ``b`` against IMB's
    ``i``, and for a miss the bound it missed. ``nbytes``: one message's size (one thread's in
    MT); ``streams``: what a Msg/sec counts (ranks in P2P, pairs of threads in MT)."""
    ratio = b / i if i > 0 else math.inf
    diff = b - i
    if figure == "t_ovrl" and bench != "Truly_passive_put":  # NBC: no target of its own
        return "-", ""
    if figure == "overlap":
        if abs(diff) <= TARGET_OVERLAP_PP:
            return "ok", ""
        return "MISSED", f"|diff| {abs(diff):.1f} > {TARGET_OVERLAP_PP:g} percentage points"
    io = bench.split("/")[0][:2] in ("S_", "P_", "C_")
    lo, hi = TARGET_CPU_RATIO if figure == "t_cpu" else (IO_TARGET_RATIO if io else TARGET_RATIO)
    if lo <= ratio <= hi:
        return "ok", ""
    why = f"ratio {ratio:.3f} outside {lo:g}..{hi:g}"
    if nbytes < LARGE and figure not in ("t_cpu", "MB/s", "msg/s"):
        limit = IO_TARGET_DIFF_US if io else TARGET_DIFF_US
        if abs(diff) <= limit:
            return "ok", ""
        why += f", |diff| {abs(diff):.2f} us > {limit:g} us"
    elif nbytes < LARGE and figure == "msg/s" and streams > 0 and b > 0 and i > 0:
        per_message = streams * (1 / b - 1 / i) * 1e6  # the time per message each rate means
        if abs(per_message) <= TARGET_DIFF_US:
            return "ok", ""
        why += f", time per message {per_message:+.2f} us, beyond {TARGET_DIFF_US:g} us"
    return "MISSED", why


def fmt_value(figure: str, value: float, sign: str = "") -> str:
    """``value`` as the table shows it (``sign="+"``: with its sign)."""
    return f"{value:{sign}.0f}" if figure == "msg/s" else f"{value:{sign}.2f}"


def report(beff: Series, imb: Series, threads: int = 1,
           streams: float = 0.0) -> list[dict[str, object]]:
    """Per (benchmark, size, figure): the medians, ratio, difference, ranges and verdict, in
    the figure's unit (us, %, MB/s or msg/s); ``threads``: IMB-MT's #bytes counts every
    thread's message; ``streams``: see :func:`judge`."""
    rows: list[dict[str, object]] = []
    order = list(dict.fromkeys(list(imb.times) + list(beff.times)))
    for key in order:
        tb, ti = beff.times.get(key), imb.times.get(key)
        base = {"benchmark": key[0], "bytes": key[1], "figure": key[2],
                "unit": UNITS.get(key[2], "us")}
        if not tb or not ti:
            rows.append({**base, "target": f"only in {'beff' if tb else 'IMB'}"})
            continue
        mb, mi = statistics.median(tb), statistics.median(ti)
        target, why = judge(key[2], mb, mi, key[1] // threads if key[1] > 0 else key[1],
                            key[0], streams)
        if why and min(tb) <= max(ti) and min(ti) <= max(tb):
            why += "; the min..max ranges overlap (within this run's noise)"
        rows.append({**base, "beff": mb, "imb": mi, "ratio": mb / mi if mi > 0 else math.inf,
                     "diff": mb - mi, "beff_min": min(tb), "beff_max": max(tb),
                     "imb_min": min(ti), "imb_max": max(ti), "target": target, "why": why})
    head = (f"{'benchmark':<30} {'size':>7} {'figure':>7} {'beff':>10} {'IMB':>10} "
            f"{'ratio':>6} {'diff':>9}   {'beff min..max':>17} {'IMB min..max':>17}  target")
    print(head)
    print("-" * len(head))
    for r in rows:
        size = fmt_size(int(str(r["bytes"])))
        f = str(r["figure"])
        if "ratio" not in r:
            print(f"{r['benchmark']:<30} {size:>7} {f:>7}  {r['target']}")
            continue
        v = {k: fmt_value(f, float(str(r[k]))) for k in
             ("beff", "imb", "beff_min", "beff_max", "imb_min", "imb_max")}
        diff = fmt_value(f, float(str(r["diff"])), "+")
        print(f"{r['benchmark']:<30} {size:>7} {f:>7} {v['beff']:>10} {v['imb']:>10} "
              f"{float(str(r['ratio'])):>6.2f} {diff:>9}"
              f"   {v['beff_min'] + '..' + v['beff_max']:>17} "
              f"{v['imb_min'] + '..' + v['imb_max']:>17}  {r['target']}")
    return rows


def summarize(rows: list[dict[str, object]], threads: int = 1,
              expected: tuple[str, ...] | list[str] = ()) -> None:
    """t and Msg/sec at :data:`SUMMARY_SIZES` per benchmark (one thread's message in MT), then
    each miss there with its reason, and the ``expected`` benchmarks neither tool measured."""
    at = {(str(r["benchmark"]), int(str(r["bytes"])) // threads, str(r["figure"])): r
          for r in rows}
    benches = list(dict.fromkeys(str(r["benchmark"]) for r in rows))

    def cell(r: dict[str, object] | None, width: int) -> str:
        if r is None:
            return f"{'-':>{width}}"
        if "ratio" not in r:
            return f"{r['target']:>{width}}"
        f = str(r["figure"])
        b, i = (fmt_value(f, float(str(r[k]))) for k in ("beff", "imb"))
        return f"{b:>10} {i:>10} {float(str(r['ratio'])):>6.3f} {r['target']:>6}"

    width = 10 + 1 + 10 + 1 + 6 + 1 + 6
    print()
    print(f"summary at {', '.join(fmt_size(n) for n in SUMMARY_SIZES)}"
          f"{' (one thread' + chr(39) + 's message)' if threads > 1 else ''}: medians over the "
          "rounds, ratio beff / IMB, target")
    head = (f"{'benchmark':<18} {'size':>7}   {'t beff':>10} {'t IMB':>10} {'ratio':>6} "
            f"{'':>6}   {'Msg/s beff':>10} {'Msg/s IMB':>10} {'ratio':>6} {'':>6}")
    print(head)
    print("-" * len(head))
    misses: list[str] = []
    for bench in benches:
        for size in SUMMARY_SIZES:
            t, rate = at.get((bench, size, "t_avg")), at.get((bench, size, "msg/s"))
            if t is None and rate is None:
                continue
            print(f"{bench:<18} {fmt_size(size):>7}   {cell(t, width)}   {cell(rate, width)}")
            misses += [f"  {bench} {fmt_size(size)} {'t' if r is t else 'Msg/sec'}: {r['why']}"
                       for r in (t, rate) if r is not None and r.get("target") == "MISSED"]
    print("misses:" if misses else "misses: none")
    for line in misses:
        print(line)
    absent = [b for b in expected if b not in benches]
    if absent:
        why = (" (IMB-P2P runs Stencil2D from 4 ranks, Stencil3D from 8: a grid with every "
               "side at least 2)") if any(b.startswith("Stencil") for b in absent) else ""
        print(f"not measured by either tool: {', '.join(absent)}{why}")


def report_wall(beff: Series, imb: Series) -> dict[str, float]:
    wb, wi = statistics.median(beff.walls), statistics.median(imb.walls)
    ratio = wb / wi
    print(f"{'tool':<5} {'median wall (s)':>16} {'runs (s)':>30}")
    for s, w in ((beff, wb), (imb, wi)):
        runs = ", ".join(f"{x:.1f}" for x in s.walls)
        print(f"{s.name:<5} {w:>16.2f} {runs:>30}")
    print(f"ratio beff / IMB = {ratio:.2f}  "
          f"({'ok' if ratio <= TARGET_WALL_RATIO else 'MISSED'}: target <= {TARGET_WALL_RATIO})")
    return {"beff_s": wb, "imb_s": wi, "ratio": ratio}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("imb", type=Path, help="path of an IMB binary you built (IMB-MPI1, "
                                                "-NBC, -MPI4, -EXT, -RMA, -IO, -P2P or -MT)")
    parser.add_argument("--suite", choices=sorted(set(SUITES.values())),
                        help="beff's suite (default: from the binary's name)")
    parser.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each tool (default 5)")
    parser.add_argument("--benchmarks",
                        help=f"comma-separated names ('' = IMB's default list; default per "
                             f"suite: {DEFAULT_BENCHMARKS})")
    parser.add_argument("--flags", help=f"IMB flags given to both tools (default per suite: "
                                         f"{DEFAULT_FLAGS})")
    parser.add_argument("--sizes",
                        help=f"all but IMB-MPI1: message sizes, passed as a -msglen file, or "
                             f"to IMB-MT as -count (one thread's message) (default "
                             f"{DEFAULT_SIZES}; P2P and MT: {RATE_SIZES})")
    parser.add_argument("--threads", type=int, default=1,
                        help="IMB-MT: OMP_NUM_THREADS for both tools (default 1)")
    parser.add_argument("--beff-flags", default="",
                        help="beff-only options added to beff's command (e.g. '--format imb')")
    parser.add_argument("--wall", action="store_true",
                        help="compare the wall time of the whole commands instead")
    parser.add_argument("--max-load", type=float, default=1.5,
                        help="wait before a round while the 1-minute load is above (default 1.5)")
    parser.add_argument("--load-wait", type=float, default=600.0,
                        help="wait at most this many seconds per round for the load (default 600)")
    parser.add_argument("--max-foreign", type=float, default=0.2,
                        help="a round is disturbed when other processes used more than this "
                             "many cores during one of its runs (default 0.2)")
    parser.add_argument("--retries", type=int, default=10,
                        help="repeat disturbed rounds, at most this many times in all "
                             "(default 10; then they are kept)")
    parser.add_argument("--json", type=Path, help="also write every round's figures here")
    args = parser.parse_args(argv)
    imb_bin = args.imb.resolve()
    if not (imb_bin.is_file() and os.access(imb_bin, os.X_OK)):
        parser.error(f"{args.imb} is not an executable file")
    if args.rounds < 1 or args.np < 1 or args.threads < 1:
        parser.error("need --rounds >= 1, --np >= 1 and --threads >= 1")
    suite = args.suite or SUITES.get(imb_bin.name.split(".")[0])
    if suite is None:
        parser.error(f"cannot tell the suite from {imb_bin.name}: give --suite")
    flags = shlex.split(DEFAULT_FLAGS[suite] if args.flags is None else args.flags)
    if args.benchmarks is None:
        args.benchmarks = DEFAULT_BENCHMARKS[suite]
    if "-npmin" not in flags and suite not in RATE_SUITES:
        flags += ["-npmin", str(args.np)]
    names = [n for n in args.benchmarks.split(",") if n.strip()]
    sizes = [int(n) for n in (args.sizes or (RATE_SIZES if suite in RATE_SUITES
                                             else DEFAULT_SIZES)).split(",")]
    threads, streams = 1, 0.0
    if suite == "mt":
        threads, streams = args.threads, args.np * args.threads / 2  # pairs of threads
        os.environ["OMP_NUM_THREADS"] = str(threads)  # IMB-MT's OpenMP and beff's -threads
        if "-thread_level" not in flags:  # IMB-MT's default (single) runs one thread
            flags += ["-thread_level", "multiple"]
        if "-count" not in flags:
            given = flags[flags.index("-datatype") + 1:][:1] if "-datatype" in flags else []
            step = 1 if [d.lower() for d in given] == ["char"] else 4  # MPI_CHAR, MPI_INT
            if any(n % step for n in sizes):
                parser.error(f"--sizes: IMB-MT's MPI_INT messages are multiples of {step} B")
            flags += ["-count", ",".join(str(n // step) for n in sizes)]
    elif suite == "p2p":
        streams = args.np  # IMB-P2P's Msg/sec: iterations x ranks / the slowest rank's time
    elif args.threads != 1:
        parser.error("--threads is for IMB-MT")

    mpiexec = find_tool("mpiexec", "compare_imb")
    compile_beff()
    launch = [mpiexec, "-n", str(args.np)]
    beff, imb = Series("beff"), Series("IMB")
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="beff-compare-imb-") as tmp:
        out = Path(tmp) / "beff.h5"
        if suite == "io":  # both tools write their files into the same (current) directory
            os.chdir(tmp)
        if suite not in ("mpi1", "mt") and not {"-msglen", "-msglog", "-msgsz"} & set(flags):
            lengths = Path(tmp) / "msglen.txt"
            lengths.write_text("".join(f"{n}\n" for n in sizes))
            flags += ["-msglen", str(lengths)]
        beff_cmd = [*launch, sys.executable, "-m", "beff", "imb", suite, *flags, "-o", str(out),
                    "--no-progress", *shlex.split(args.beff_flags), *names]
        imb_cmd = [*launch, str(imb_bin), *flags, *names]
        r = retries = 0
        while r < args.rounds:
            # One check per round, so that a pair runs back to back (the pair's own two busy
            # ranks raise the load average too; a foreign load shows up before the next pair).
            load = wait_for_load(args.max_load, args.load_wait)
            got = []
            for side, cmd in ((beff, beff_cmd), (imb, imb_cmd)):
                before = load if side is beff else os.getloadavg()[0]
                out.unlink(missing_ok=True)
                text, wall, foreign = run(cmd)
                if args.wall:
                    values = {}
                elif suite in RATE_SUITES:
                    values = (read_beff_table(out, args.np, suite) if side is beff
                              else parse_imb(text, args.np, RATE_FIGURES))
                else:
                    values = read_beff(out, args.np) if side is beff else parse_imb(text, args.np)
                got.append((side, before, wall, foreign, values))
            disturbed = max(g[3] for g in got) > args.max_foreign
            note = (f"load {got[0][1]:.2f}/{got[1][1]:.2f}, wall {got[0][2]:.1f}/"
                    f"{got[1][2]:.1f} s, foreign CPU {got[0][3]:.2f}/{got[1][3]:.2f} cores")
            if disturbed and retries < args.retries:
                retries += 1
                print(f"round {r + 1}: disturbed ({note}), repeated", file=sys.stderr,
                      flush=True)
                continue
            for side, before, wall, foreign, values in got:
                side.loads.append(before)
                side.walls.append(wall)
                side.foreign.append(foreign)
                side.add(values)
            r += 1
            print(f"round {r}/{args.rounds} done ({note})", file=sys.stderr, flush=True)

    what = ("wall time of the whole command" if args.wall else
            "times (us), Mbytes/sec, Msg/sec" if suite in RATE_SUITES else
            "times (us), overlap (%)")
    per_rank = f" x {threads} thread{'s' if threads > 1 else ''}" if suite == "mt" else ""
    print(f"beff imb {suite} vs {imb_bin.name} ({imb_bin}), {args.np} ranks{per_rank}, {what}, "
          f"median of {args.rounds} alternating rounds")
    print(f"beff: {shlex.join(beff_cmd).replace(str(out), 'TMP.h5')}")
    print(f"IMB:  {shlex.join(imb_cmd)}")
    cvars = {k: v for k, v in os.environ.items()
             if k.startswith(("MPIR_CVAR_", "MPICH_", "OMP_"))}
    print(f"env:  {cvars or 'no MPIR_CVAR_*/MPICH_*/OMP_* variables'} (same for both)")
    loads = beff.loads + imb.loads
    print(f"1-min load before runs: median {statistics.median(loads):.2f}, "
          f"max {max(loads):.2f} (limit {args.max_load}); CPU used by other processes during "
          f"the kept runs: max {max(beff.foreign + imb.foreign):.2f} cores "
          f"(limit {args.max_foreign}, {retries} rounds repeated)")
    print(f"date: {started.strftime('%Y-%m-%d %H:%M UTC')}   host: {platform.node()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    print()
    summary: object = (report_wall(beff, imb) if args.wall
                       else report(beff, imb, threads, streams))
    if not args.wall and suite in RATE_SUITES and isinstance(summary, list):
        summarize(summary, threads, names or (P2P_BENCHMARKS if suite == "p2p" else ()))
    if args.json is not None:
        args.json.write_text(json.dumps({
            "date": started.isoformat(), "rounds": args.rounds, "np": args.np,
            "threads": threads,
            "flags": flags, "benchmarks": names, "wall": args.wall,
            "beff": {"walls_s": beff.walls, "loads": beff.loads, "foreign_cores": beff.foreign,
                     "figures": {":".join(map(str, k)): v for k, v in beff.times.items()}},
            "imb": {"walls_s": imb.walls, "loads": imb.loads, "foreign_cores": imb.foreign,
                    "figures": {":".join(map(str, k)): v for k, v in imb.times.items()}},
            "summary": summary,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
