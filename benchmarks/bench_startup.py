"""How long beff takes to answer at once: ``beff --version``, and a refused bad flag at 1 and
4 ranks (``mpiexec -n N beff imb mpi1 -time nope``), whole commands, median of N launches.

Run: ``python benchmarks/bench_startup.py [--repeat 15] [--tree OTHER_CHECKOUT]``. With
``--tree``, each case alternates launches of this checkout's beff and OTHER_CHECKOUT's (put
first on PYTHONPATH; same Python and MPI), so that before/after figures share the machine's
state. Targets (issue 24): under 1 s for ``--version`` and under 2 s for a bad flag at 4
ranks, on a quiet machine. Prints the 1-minute load before and after: report it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _tools import find_tool

HERE = Path(__file__).resolve().parents[1]


def cases(mpiexec: str) -> dict[str, list[str]]:
    py = [sys.executable, "-m", "beff"]
    return {
        "beff --version": [*py, "--version"],
        "bad flag, 1 rank": [mpiexec, "-n", "1", *py, "imb", "mpi1", "-time", "nope"],
        "bad flag, 4 ranks": [mpiexec, "-n", "4", *py, "imb", "mpi1", "-time", "nope"],
    }


def once(cmd: list[str], tree: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    elapsed = time.perf_counter() - start
    expected = 0 if "--version" in cmd else 2
    if proc.returncode != expected:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--tree", type=Path, help="another checkout to alternate with")
    args = parser.parse_args()
    trees = {"this": HERE}
    if args.tree is not None:
        trees["other"] = args.tree.resolve()
    mpiexec = find_tool("mpiexec", "bench_startup")
    print(f"load before: {os.getloadavg()[0]:.2f}")
    for name, cmd in cases(mpiexec).items():
        times: dict[str, list[float]] = {t: [] for t in trees}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                times[label].append(once(cmd, tree))
        row = ", ".join(f"{label} median {statistics.median(v):.3f} s "
                        f"(min {min(v):.3f}, max {max(v):.3f})" for label, v in times.items())
        print(f"{name}: {row}")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
