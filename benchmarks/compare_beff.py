"""beff run against the original b_eff 3.6 program: the same memory per process, run alternately.

README
======

This script does not build b_eff. Build b_eff.c (3.6.0.1) yourself against the MPI that beff
uses, with the memory per process compiled in, e.g. for the ``mpich`` wheel in a venv::

    mpicc -O2 -DMEMORY_PER_PROCESSOR=64 -o b_eff_64 b_eff.c -lm             # full run
    mpicc -O2 -DMEMORY_PER_PROCESSOR=64 -DSHORT -o b_eff_64_short b_eff.c -lm # SHORT mode

and pass the binary's path and the same memory (MiB); with ``--short`` beff runs ``--quick``,
its SHORT mode. Run from the repository root, with beff installed in the Python that runs it::

    python benchmarks/compare_figures.py /path/to/b_eff_64_short --memory 64 --short
    python benchmarks/compare_figures.py /path/to/b_eff_64 --memory 64 --rounds 3

What it does: before each round it waits until the 1-minute load is at most ``--max-load``;
then it runs, ALTERNATELY (beff, b_eff, beff, b_eff, ...) ``--rounds`` times each, on
``--np`` ranks:

* beff:  ``mpiexec -n NP python -m beff run --memory-per-proc MEMMiB [--quick] -o TMP.h5``
* b_eff: ``mpiexec -n NP B_EFF`` in a temporary directory (it writes b_eff.sum and others)

and reads from each the numbers of b_eff's summary table: b_eff, the ring-only latency
(P / geometric mean of the ring patterns' bandwidth at 1 byte, in microseconds), the
ping-pong latency (half a 1-byte round trip) and the b_eff at Lmax. It prints the median of
each over the rounds, the ratio beff / b_eff and the verdict: within 5 %. Then b_eff(L) at
every message length: beff's from its file, the original's from its b_eff.prot, read by
``beff import``'s reader; again medians, ratios and verdicts (5 %). ``--keep DIR`` keeps each
round's files (the .prot, .sum and .h5) for a closer look.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _tools import (  # benchmarks/ is on sys.path as a script
    compile_beff,
    find_tool,
    run,
    wait_for_load,
)

# (label, key in beff's summary, column of b_eff.sum's "accumulated" line, has a target)
FIGURES = (
    ("b_eff [MB/s]", "b_eff_MBps", 1, True),
    ("b_eff at Lmax [MB/s]", "b_eff_lmax_MBps", 3, True),
    ("ring latency [us]", "latency_ring_us", 6, True),
    ("ping-pong latency [us]", "pingpong_latency_us", 7, True),
)
TARGET = 0.05  # every figure, and b_eff(L) at every length


def parse_sum(path: Path) -> dict[str, float]:
    """The figures of b_eff.sum's ``accumulated | P b_eff Lmax MB ...`` line."""
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("accumulated"):
            cells = line.split("|", 1)[1].split()
            # P, b_eff, Lmax, "MB", b_eff@Lmax rings&random, rings only, 3 latencies, pp bw
            numbers = [cells[0], cells[1], cells[2], *cells[4:]]
            return {key: float(numbers[col]) for _, key, col, _ in FIGURES}
    sys.exit(f"compare_figures: no 'accumulated' line in {path}")


def read_beff(path: Path) -> dict[str, float]:
    from beff.effbw.view import beff_summary
    from beff.results.archive import load

    summary = beff_summary(load(path))
    if summary is None:
        sys.exit(f"compare_figures: {path} holds no b_eff summary")
    return {key: float(summary[key]) for _, key, _, _ in FIGURES}


def lengths_beff(path: Path) -> dict[int, float]:
    """b_eff(L) per message length (accumulated MB/s) of a beff result file."""
    from beff.effbw.view import beff_summary
    from beff.results.archive import load

    summary = beff_summary(load(path)) or {}
    return {int(r["bytes"]): float(r["b_eff_MBps"]) for r in summary.get("per_length", [])}


def lengths_c(workdir: Path) -> dict[int, float]:
    """b_eff(L) per length of the original's run, from its b_eff.prot (read by beff import)."""
    from beff.effbw.importer import parse
    from beff.effbw.view import beff_summary

    prot = workdir / "b_eff.prot"
    if not prot.is_file():
        return {}
    summary = beff_summary(parse(prot.read_text(errors="replace"), prot)) or {}
    return {int(r["bytes"]): float(r["b_eff_MBps"]) for r in summary.get("per_length", [])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("b_eff", type=Path, help="path of a b_eff binary you built")
    parser.add_argument("--memory", type=int, required=True,
                        help="MEMORY_PER_PROCESSOR (MiB) the binary was compiled with")
    parser.add_argument("--short", action="store_true",
                        help="the binary was compiled with -DSHORT (beff runs --quick)")
    parser.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each tool (default 5)")
    parser.add_argument("--beff-flags", default="", help="extra options of beff run")
    parser.add_argument("--max-load", type=float, default=1.5,
                        help="wait before a round while the 1-minute load is above (default 1.5)")
    parser.add_argument("--load-wait", type=float, default=600.0,
                        help="wait at most this many seconds per round for the load")
    parser.add_argument("--keep", type=Path,
                        help="keep each round's outputs here (round-K/beff.h5, round-K/b_eff.*)")
    args = parser.parse_args(argv)
    binary = args.b_eff.resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        parser.error(f"{args.b_eff} is not an executable file")
    launch = [find_tool("mpiexec", "compare_figures"), "-n", str(args.np)]
    compile_beff()
    beff_runs: list[dict[str, float]] = []
    c_runs: list[dict[str, float]] = []
    beff_lengths: list[dict[int, float]] = []
    c_lengths: list[dict[int, float]] = []
    with tempfile.TemporaryDirectory(prefix="beff-compare-beff-") as tmp:
        out = Path(tmp) / "beff.h5"
        beff_cmd = [*launch, sys.executable, "-m", "beff", "run", "--memory-per-proc",
                    f"{args.memory}MiB", "-o", str(out), "--no-progress",
                    *(["--quick"] if args.short else []), *shlex.split(args.beff_flags)]
        c_cmd = [*launch, str(binary)]
        for r in range(args.rounds):
            load = wait_for_load(args.max_load, args.load_wait)
            out.unlink(missing_ok=True)
            _, wall_b, foreign_b = run(beff_cmd)
            beff_runs.append(read_beff(out))
            cwd = Path(tmp) / f"c{r}"
            cwd.mkdir()
            os.chdir(cwd)
            _, wall_c, foreign_c = run(c_cmd)
            os.chdir(tmp)
            c_runs.append(parse_sum(cwd / "b_eff.sum"))
            beff_lengths.append(lengths_beff(out))
            c_lengths.append(lengths_c(cwd))
            if args.keep is not None:
                kept = args.keep / f"round-{r + 1}"
                kept.mkdir(parents=True, exist_ok=True)
                shutil.copy2(out, kept / "beff.h5")
                for f in cwd.glob("b_eff.*"):
                    shutil.copy2(f, kept / f.name)
            print(f"round {r + 1}/{args.rounds}: load {load:.2f}, wall {wall_b:.1f}/{wall_c:.1f} s,"
                  f" foreign CPU {foreign_b:.2f}/{foreign_c:.2f} cores", file=sys.stderr,
                  flush=True)
        os.chdir("/")
    print(f"beff run vs b_eff 3.6 ({binary}), {args.np} ranks, {args.memory} MiB per process"
          f"{', SHORT mode' if args.short else ''}, median of {args.rounds} alternating rounds")
    print(f"beff:  {shlex.join(beff_cmd).replace(str(out), 'TMP.h5')}")
    print(f"b_eff: {shlex.join(c_cmd)}")
    head = (f"{'figure':<24} {'beff':>10} {'b_eff':>10} {'ratio':>6}   {'beff range':>19} "
            f"{'b_eff range':>19}  target")
    print(head)
    print("-" * len(head))
    for label, key, _, targeted in FIGURES:
        vb = [x[key] for x in beff_runs]
        vc = [x[key] for x in c_runs]
        mb, mc = statistics.median(vb), statistics.median(vc)
        ratio = mb / mc if mc else float("inf")
        verdict = ("ok" if abs(ratio - 1) <= TARGET else "MISSED") if targeted else "-"
        print(f"{label:<24} {mb:>10.3f} {mc:>10.3f} {ratio:>6.2f}   "
              f"{f'{min(vb):.3f}..{max(vb):.3f}':>19} {f'{min(vc):.3f}..{max(vc):.3f}':>19}  "
              f"{verdict}")
    common = sorted(set.intersection(*(set(d) for d in beff_lengths + c_lengths))) \
        if beff_lengths and c_lengths else []
    if common:
        print()
        head = (f"{'b_eff(L) [MB/s]':>16} {'beff':>10} {'b_eff':>10} {'ratio':>6}   "
                f"{'beff range':>21} {'b_eff range':>21}  target")
        print(head)
        print("-" * len(head))
        for L in common:
            vb = [d[L] for d in beff_lengths]
            vc = [d[L] for d in c_lengths]
            mb, mc = statistics.median(vb), statistics.median(vc)
            ratio = mb / mc if mc else float("inf")
            print(f"{L:>14} B {mb:>10.2f} {mc:>10.2f} {ratio:>6.2f}   "
                  f"{f'{min(vb):.2f}..{max(vb):.2f}':>21} {f'{min(vc):.2f}..{max(vc):.2f}':>21}"
                  f"  {'ok' if abs(ratio - 1) <= TARGET else 'MISSED'}")


if __name__ == "__main__":
    main()

