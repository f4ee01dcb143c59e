"""What ``--per-iteration`` costs: IMB-MPI1's (or IMB-P2P's) t_avg with the mode off and on,
alternately.

Run from the repository root, with beff installed in the Python that runs it, on a quiet
machine::

    python benchmarks/bench_per_iteration.py                 # 2 ranks, 7 rounds
    python benchmarks/bench_per_iteration.py --np 4 --rounds 5 --iter 20000
    python benchmarks/bench_per_iteration.py --suite p2p     # PingPong and Unirandom

Each round runs ``mpiexec -n NP python -m beff imb mpi1 PingPong Allreduce -msgsize 0,1048576
-iter_policy off -iter N`` (``--suite p2p``: ``beff imb p2p PingPong Unirandom -msgsz 0,1m
-iter N,N -pause 0``, N repetitions at both sizes) once without and once with
``--per-iteration`` (which one first
alternates from round to round), and reads each run's t_avg per benchmark and size from its
file. It prints, per row, the median t_avg of each mode over the rounds, their difference in
ns and ratio, each side's min..max, and the CPU time that other processes took during the
runs (beff.core.disturbance's /proc figure, in cores). The mode adds one MPI_Wtime per
iteration to PingPong's loop (Allreduce already reads two per call) and a store.
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


def t_avg(path: Path) -> dict[tuple[str, int], float]:
    from beff.results import stats
    from beff.results.archive import load

    out = {}
    for m in load(path).measurements:
        s = stats.summarize(m, None)
        for i, size in enumerate(m.sizes):
            out[m.benchmark, int(size)] = float(s.t_avg[i])
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iter", type=int, default=20000, help="repetitions per size")
    parser.add_argument("--suite", choices=("mpi1", "p2p"), default="mpi1")
    args = parser.parse_args(argv)
    mpiexec = find_tool("mpiexec", "mpiexec")
    compile_beff()
    work = Path(tempfile.mkdtemp(prefix="bench-per-iteration-"))
    got: dict[bool, list[dict[tuple[str, int], float]]] = {False: [], True: []}
    foreign: list[float] = []
    try:
        for r in range(args.rounds):
            for on in ((False, True) if r % 2 == 0 else (True, False)):
                out = work / f"r{r}-{int(on)}.h5"
                if args.suite == "mpi1":
                    flags = ["PingPong", "Allreduce", "-msgsize", "0,1048576", "-iter_policy",
                             "off", "-iter", str(args.iter), "-time", "600"]
                else:  # N repetitions at both sizes: numerator N MiB, 1 MiB at most
                    flags = ["PingPong", "Unirandom", "-msgsz", "0,1m", "-iter",
                             f"{args.iter},{args.iter}", "-pause", "0"]
                cmd = [mpiexec, "-n", str(args.np), sys.executable, "-m", "beff", "imb",
                       args.suite, *flags, "--no-progress", "-o", str(out),
                       *(["--per-iteration"] if on else [])]
                _, wall, load = run(cmd)
                foreign.append(load)
                got[on].append(t_avg(out))
                print(f"round {r + 1} {'on ' if on else 'off'}: {wall:.1f} s, others "
                      f"{load:.2f} cores", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"--per-iteration's cost, IMB-{args.suite.upper()}: {args.np} ranks, "
          f"{args.iter} repetitions, {args.rounds} rounds alternating; others took "
          f"{statistics.median(foreign):.2f} cores (median; max {max(foreign):.2f})")
    print(f"{'benchmark':<10} {'bytes':>8} {'off t_avg us':>13} {'on t_avg us':>12} "
          f"{'on-off ns':>10} {'on/off':>7}   off min..max        on min..max")
    for key in got[False][0]:
        off = [g[key] for g in got[False]]
        on = [g[key] for g in got[True]]
        a, b = statistics.median(off), statistics.median(on)
        print(f"{key[0]:<10} {key[1]:>8} {a:>13.3f} {b:>12.3f} {(b - a) * 1e3:>10.1f} "
              f"{b / a:>7.3f}   {min(off):.3f}..{max(off):.3f}   {min(on):.3f}..{max(on):.3f}")


if __name__ == "__main__":
    main()
