"""beff's IMB suites against the real IMB-MPI1, IMB-NBC, IMB-MPI4, IMB-EXT or IMB-RMA: the same
flags, run alternately, side by side.

README
======

This script does not build IMB. Build IMB-MPI1, IMB-NBC, IMB-MPI4, IMB-EXT or IMB-RMA (Intel
MPI Benchmarks, e.g. 2021.11) yourself against the MPI that beff uses (for the ``mpich`` wheel
in a venv: ``make IMB-MPI1 IMB-NBC IMB-MPI4 IMB-EXT IMB-RMA CC=mpicc CXX=mpicxx`` with that
venv's wrappers first on PATH) and pass the binary's path; the suite follows from its name
(``--suite`` overrides). EXT and RMA rows are named benchmark/mode.
Run from the repository root, with beff installed in the Python that runs it::

    python benchmarks/compare_imb.py /path/to/IMB-MPI1
    python benchmarks/compare_imb.py /path/to/IMB-MPI1 --rounds 7 \\
        --benchmarks Allreduce,Bcast,Barrier --flags "-msgsize 8,1024,65536 -iter 1000 -time 1"
    python benchmarks/compare_imb.py /path/to/IMB-MPI1 --wall --rounds 2 \\
        --benchmarks "" --flags "-msglog 0:20 -time 0.5"      # wall time, full default list
    python benchmarks/compare_imb.py /path/to/IMB-NBC --np 4     # NBC's default list

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

   with the same FLAGS (IMB's own syntax; ``-npmin NP`` is added unless given) and the same
   environment (this process's; the ``MPIR_CVAR_*``/``MPICH_*`` variables in it are printed);
3. reads per (benchmark, size) the figures: IMB-MPI1's t_avg (us; t[usec], the slower rank's
   time, for single-transfer tables), or IMB-NBC/MPI4's t_ovrl, t_pure, t_CPU (us) and
   overlap (%) of overlap tables; beff's from its result file (``beff.results.archive.load``
   and ``beff.results.stats``), IMB's from its text output;
4. prints, per (benchmark, size, figure), the median of each tool over the rounds, the ratio
   beff / IMB and the difference beff - IMB of those medians, each side's min..max spread,
   and the verdict against the target: times (t_avg, t_pure) within [0.95, 1.05], or below
   64 KiB also within 0.1 us; t_CPU within [0.9, 1.1]; overlap within 10 percentage points;
   t_ovrl is shown without a target.

With ``--wall`` it times each whole ``mpiexec`` command instead and prints the median wall
time of each tool and their ratio (target: beff <= 1.2 x IMB).

Numbers from a small or shared machine are noisy: look at the spreads and the load column,
and raise ``--rounds`` when they are wide. Do not set progress-throttling variables
(``MPIR_CVAR_CH4_PROGRESS_THROTTLE`` ...) unless the ranks oversubscribe the cores; when you
do, both tools get them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from _tools import find_tool, run, wait_for_load  # benchmarks/ is on sys.path as a script

DEFAULT_BENCHMARKS = {
    "mpi1": "PingPong,PingPing,Sendrecv,Exchange,Allreduce,Reduce,Bcast,Alltoall,Allgather,Barrier",
    "nbc": "",  # IMB's default list
    "mpi4": "",
    "ext": "",
    "rma": "",
    # IMB-IO: the blocking benchmarks (the issue's targets), in aggregate mode
    "io": "S_Write_Indv,S_Read_Indv,P_Write_Expl,P_Read_Expl,C_Write_Indv,C_Read_Indv",
}
DEFAULT_FLAGS = {"mpi1": "-msgsize 0,8,1024,65536,1048576 -iter 1000 -time 1",
                 "nbc": "-iter 1000 -time 1", "mpi4": "-iter 1000 -time 1",
                 "ext": "-iter 1000 -time 1", "rma": "-iter 1000 -time 1",
                 "io": "-iter 1000 -time 1 -aggregate_mode aggregate"}
# IMB-NBC, MPI4, EXT and RMA have no -msgsize: these sizes go to both tools in a -msglen
# file, unless the flags give -msglen or -msglog.
DEFAULT_SIZES = "8,1024,65536"
SUITES = {"IMB-MPI1": "mpi1", "IMB-NBC": "nbc", "IMB-MPI4": "mpi4", "IMB-EXT": "ext",
          "IMB-RMA": "rma", "IMB-IO": "io"}
# IMB-IO's targets (file systems are noisier): within 10 %, or below LARGE within 1 us.
IO_TARGET_RATIO = (0.9, 1.1)
IO_TARGET_DIFF_US = 1.0
# Below LARGE bytes: within TARGET_RATIO or TARGET_DIFF_US; from LARGE on: within TARGET_RATIO.
TARGET_RATIO = (0.95, 1.05)
TARGET_DIFF_US = 0.1
LARGE = 65536
TARGET_WALL_RATIO = 1.2
TARGET_CPU_RATIO = (0.9, 1.1)
TARGET_OVERLAP_PP = 10.0
NO_SIZE = -1  # key of benchmarks without a message size (Barrier)
# IMB column -> figure name
FIGURES = {"t_avg[usec]": "t_avg", "t[usec]": "t_avg", "t_ovrl[usec]": "t_ovrl",
           "t_pure[usec]": "t_pure", "t_CPU[usec]": "t_cpu", "overlap[%]": "overlap"}

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


def parse_imb(output: str, nprocs: int) -> dict[Key, float]:
    """{(benchmark, bytes, figure): value} from IMB-format text, for the sections at
    ``nprocs`` (t[usec], the slower rank's time, for the single-transfer tables); a benchmark
    that has none (IMB-IO's S_: one process) gives its section at the most processes."""
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
                for col, figure in FIGURES.items():
                    if col in row and not (col == "t[usec]" and "t_avg[usec]" in row):
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


def fmt_size(nbytes: int) -> str:
    if nbytes == NO_SIZE:
        return "-"
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def verdict(figure: str, ratio: float, diff: float, nbytes: int, bench: str = "") -> str:
    if figure == "t_ovrl" and bench != "Truly_passive_put":  # NBC: no target of its own
        return "-"
    if figure == "overlap":
        return "ok" if abs(diff) <= TARGET_OVERLAP_PP else "MISSED"
    io = bench.split("/")[0][:2] in ("S_", "P_", "C_")
    lo, hi = TARGET_CPU_RATIO if figure == "t_cpu" else (IO_TARGET_RATIO if io else TARGET_RATIO)
    if lo <= ratio <= hi or (figure != "t_cpu" and nbytes < LARGE
                             and abs(diff) <= (IO_TARGET_DIFF_US if io else TARGET_DIFF_US)):
        return "ok"
    return "MISSED"


def report(beff: Series, imb: Series) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    order = list(dict.fromkeys(list(imb.times) + list(beff.times)))
    for key in order:
        tb, ti = beff.times.get(key), imb.times.get(key)
        if not tb or not ti:
            rows.append({"benchmark": key[0], "bytes": key[1], "figure": key[2],
                         "target": "only in one tool"})
            continue
        mb, mi = statistics.median(tb), statistics.median(ti)
        ratio = mb / mi if mi > 0 else float("inf")
        diff = mb - mi
        rows.append({"benchmark": key[0], "bytes": key[1], "figure": key[2], "beff_us": mb,
                     "imb_us": mi,
                     "ratio": ratio, "diff_us": diff, "beff_min_us": min(tb),
                     "beff_max_us": max(tb), "imb_min_us": min(ti), "imb_max_us": max(ti),
                     "target": verdict(key[2], ratio, diff, key[1], key[0])})
    head = (f"{'benchmark':<30} {'size':>7} {'figure':>7} {'beff':>9} {'IMB':>9} {'ratio':>6} "
            f"{'diff':>8}   {'beff min..max':>15} {'IMB min..max':>15}  target")
    print(head)
    print("-" * len(head))
    for r in rows:
        size = fmt_size(int(str(r["bytes"])))
        if "ratio" not in r:
            print(f"{r['benchmark']:<30} {size:>7} {r['figure']:>7}  {r['target']}")
            continue
        b_range = f"{r['beff_min_us']:.2f}..{r['beff_max_us']:.2f}"
        i_range = f"{r['imb_min_us']:.2f}..{r['imb_max_us']:.2f}"
        print(f"{r['benchmark']:<30} {size:>7} {r['figure']:>7} {r['beff_us']:>9.2f} "
              f"{r['imb_us']:>9.2f} {r['ratio']:>6.2f} {r['diff_us']:>+8.2f}   "
              f"{b_range:>15} {i_range:>15}  {r['target']}")
    return rows


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
    parser.add_argument("imb", type=Path, help="path of an IMB-MPI1, IMB-NBC or IMB-MPI4 "
                                                "binary you built")
    parser.add_argument("--suite", choices=sorted(set(SUITES.values())),
                        help="beff's suite (default: from the binary's name)")
    parser.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each tool (default 5)")
    parser.add_argument("--benchmarks",
                        help=f"comma-separated names ('' = IMB's default list; default per "
                             f"suite: {DEFAULT_BENCHMARKS})")
    parser.add_argument("--flags", help=f"IMB flags given to both tools (default per suite: "
                                         f"{DEFAULT_FLAGS})")
    parser.add_argument("--sizes", default=DEFAULT_SIZES,
                        help=f"all but IMB-MPI1: message sizes, passed as a -msglen file "
                             f"(default {DEFAULT_SIZES})")
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
    if args.rounds < 1 or args.np < 1:
        parser.error("need --rounds >= 1 and --np >= 1")
    suite = args.suite or SUITES.get(imb_bin.name.split(".")[0])
    if suite is None:
        parser.error(f"cannot tell the suite from {imb_bin.name}: give --suite")
    flags = shlex.split(DEFAULT_FLAGS[suite] if args.flags is None else args.flags)
    if args.benchmarks is None:
        args.benchmarks = DEFAULT_BENCHMARKS[suite]
    if "-npmin" not in flags:
        flags += ["-npmin", str(args.np)]
    names = [n for n in args.benchmarks.split(",") if n.strip()]

    mpiexec = find_tool("mpiexec", "compare_imb")
    launch = [mpiexec, "-n", str(args.np)]
    beff, imb = Series("beff"), Series("IMB")
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="beff-compare-imb-") as tmp:
        out = Path(tmp) / "beff.h5"
        if suite == "io":  # both tools write their files into the same (current) directory
            os.chdir(tmp)
        if suite != "mpi1" and not {"-msglen", "-msglog"} & set(flags):
            lengths = Path(tmp) / "msglen.txt"
            lengths.write_text("\n".join(args.sizes.split(",")) + "\n")
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
                values = {} if args.wall else (
                    read_beff(out, args.np) if side is beff else parse_imb(text, args.np))
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

    what = "wall time of the whole command" if args.wall else "times (us), overlap (%)"
    print(f"beff imb {suite} vs {imb_bin.name} ({imb_bin}), {args.np} ranks, {what}, "
          f"median of {args.rounds} alternating rounds")
    print(f"beff: {shlex.join(beff_cmd).replace(str(out), 'TMP.h5')}")
    print(f"IMB:  {shlex.join(imb_cmd)}")
    cvars = {k: v for k, v in os.environ.items() if k.startswith(("MPIR_CVAR_", "MPICH_"))}
    print(f"env:  {cvars or 'no MPIR_CVAR_*/MPICH_* variables'} (same for both)")
    loads = beff.loads + imb.loads
    print(f"1-min load before runs: median {statistics.median(loads):.2f}, "
          f"max {max(loads):.2f} (limit {args.max_load}); CPU used by other processes during "
          f"the kept runs: max {max(beff.foreign + imb.foreign):.2f} cores "
          f"(limit {args.max_foreign}, {retries} rounds repeated)")
    print(f"date: {started.strftime('%Y-%m-%d %H:%M UTC')}   host: {platform.node()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    print()
    summary: object = report_wall(beff, imb) if args.wall else report(beff, imb)
    if args.json is not None:
        args.json.write_text(json.dumps({
            "date": started.isoformat(), "rounds": args.rounds, "np": args.np,
            "flags": flags, "benchmarks": names, "wall": args.wall,
            "beff": {"walls_s": beff.walls, "loads": beff.loads, "foreign_cores": beff.foreign,
                     "figures": {":".join(map(str, k)): v for k, v in beff.times.items()}},
            "imb": {"walls_s": imb.walls, "loads": imb.loads, "foreign_cores": imb.foreign,
                    "figures": {":".join(map(str, k)): v for k, v in imb.times.items()}},
            "summary": summary,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
