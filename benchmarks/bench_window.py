"""IMB's barrier start against ``--sync window``: the same collectives, alternately.

Run from the repository root, with beff installed in the Python that runs it, on a quiet
machine::

    python benchmarks/bench_window.py                     # 2 and 4 ranks, 3 rounds
    python benchmarks/bench_window.py --np 2,4,8 --rounds 5

Each round runs, for each process count, ``mpiexec -n NP python -m beff imb mpi1 Bcast
Allreduce Barrier -msgsize 8,1024,65536 -npmin NP`` once with IMB's barrier start and once
with ``--sync window`` (which one first alternates from round to round). It prints per row
the median over the rounds of t_avg and t_max (µs) under each policy, and for the window
runs the largest clock residual (µs) and the invalid calls left out (summed over rounds),
with the CPU time other processes took during the runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tools import compile_beff, find_tool, run  # noqa: E402

Key = tuple[int, str, int]


def figures(path: Path) -> dict[Key, tuple[float, float, float, int]]:
    """(np, benchmark, bytes) -> t_avg, t_max (µs), residual (µs), invalid calls."""
    from beff.results import stats
    from beff.results.archive import load

    out = {}
    for m in load(path).measurements:
        s = stats.summarize(m, None)
        clock = m.attrs.get("clock", {})
        residual = max(clock.get("residual_s") or [0.0]) * 1e6
        invalid = m.attrs.get("invalid") or [0] * len(m.sizes)
        for i, size in enumerate(m.sizes):
            nbytes = int(size) if "bytes" in m.columns else 0
            out[m.nprocs, m.benchmark, nbytes] = (float(s.t_avg[i]), float(s.t_max[i]),
                                                  residual, int(invalid[i]))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--np", default="2,4", help="process counts (default 2,4)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    mpiexec = find_tool("mpiexec", "mpiexec")
    compile_beff()
    work = Path(tempfile.mkdtemp(prefix="bench-window-"))
    got: dict[str, list[dict[Key, tuple[float, float, float, int]]]] = {"barrier": [],
                                                                        "window": []}
    foreign: list[float] = []
    try:
        for r in range(args.rounds):
            for nprocs in (int(n) for n in args.np.split(",")):
                order = ("barrier", "window") if r % 2 == 0 else ("window", "barrier")
                for policy in order:
                    out = work / f"r{r}-{nprocs}-{policy}.h5"
                    cmd = [mpiexec, "-n", str(nprocs), sys.executable, "-m", "beff", "imb",
                           "mpi1", "Bcast", "Allreduce", "Barrier", "-msgsize", "8,1024,65536",
                           "-npmin", str(nprocs), "--no-progress", "-o", str(out),
                           *(["--sync", "window"] if policy == "window" else [])]
                    _, wall, load = run(cmd)
                    foreign.append(load)
                    got[policy].append(figures(out))
                    print(f"round {r + 1} np={nprocs} {policy}: {wall:.1f} s, others "
                          f"{load:.2f} cores", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"barrier vs window starts: {args.rounds} rounds alternating; others took "
          f"{statistics.median(foreign):.2f} cores (median; max {max(foreign):.2f})")
    print(f"{'np':>3} {'benchmark':<10} {'bytes':>6} {'barrier t_avg':>13} {'t_max':>8} "
          f"{'window t_avg':>13} {'t_max':>8} {'residual us':>12} {'invalid':>8}")
    keys = sorted({k for g in got["barrier"] for k in g})
    for key in keys:
        b = [g[key] for g in got["barrier"] if key in g]
        w = [g[key] for g in got["window"] if key in g]
        med = statistics.median
        print(f"{key[0]:>3} {key[1]:<10} {key[2] if key[1] != 'Barrier' else '-':>6} "
              f"{med(x[0] for x in b):>13.2f} {med(x[1] for x in b):>8.2f} "
              f"{med(x[0] for x in w):>13.2f} {med(x[1] for x in w):>8.2f} "
              f"{max(x[2] for x in w):>12.3f} {sum(x[3] for x in w):>8d}")


if __name__ == "__main__":
    main()
