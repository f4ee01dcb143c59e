"""Time and memory of building all b_eff patterns for many ranks (default: a million).

Run: ``python benchmarks/bench_patterns.py [--nprocs N] [--random 30] [--repeat 3]``.
Reports the build (random permutations are computed lazily), the materialization of
every random permutation (what the MPI layer pays when it creates the communicators) and
deriving neighbour tables of a sample of ranks.  Target for P = 1e6: < 5 s, < 1 GiB.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from beff.patterns import PatternSet, build_patterns
from beff.patterns.probing import park_sequential, probe_hashes

T = TypeVar("T")


def timed(func: Callable[[], T]) -> tuple[T, float, float]:
    """Result, wall seconds and CPU seconds of one call (CPU time shows a busy machine)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = func()
    return result, time.perf_counter() - start, time.process_time() - cpu


def traced_peak(func: Callable[[], object]) -> int:
    """Peak bytes allocated during one call (tracemalloc sees numpy's buffers too).

    A separate run: tracing slows Python-level allocations down a lot.
    """
    tracemalloc.start()
    func()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, default=1_000_000)
    parser.add_argument("--random", type=int, default=30, help="random patterns (SHORT: 6)")
    parser.add_argument("--seed", type=int, default=1_700_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="report the fastest of N runs")
    parser.add_argument("--verify", action="store_true",
                        help="check one permutation against the plain probing loop (slow)")
    args = parser.parse_args()

    def build() -> PatternSet:
        return build_patterns(args.nprocs, args.random, seed=args.seed)

    def build_and_materialize() -> None:
        build().materialize()

    best_build = best_all = best_cpu = float("inf")
    for _ in range(args.repeat):
        patterns, seconds, _ = timed(build)
        best_build = min(best_build, seconds)
        _, seconds, cpu = timed(build_and_materialize)
        best_all, best_cpu = min(best_all, seconds), min(best_cpu, cpu)
    peak_build = traced_peak(build)
    peak_all = traced_peak(build_and_materialize)
    best_perm = best_all / max(1, args.random)

    sample = np.linspace(0, args.nprocs - 1, num=min(args.nprocs, 10_000), dtype=np.int64)
    start = time.perf_counter()
    nsteps = sum(len(p.steps(int(r))) for p in patterns for r in sample
                 if r < p.comm.size)
    per_rank = (time.perf_counter() - start) / len(sample)

    mib = 1 << 20
    print(f"P = {args.nprocs}, {len(patterns)} patterns ({args.random} random), "
          f"fastest of {args.repeat}")
    print(f"build (lazy permutations):        {best_build:8.3f} s   "
          f"peak {peak_build / mib:8.1f} MiB")
    print(f"build + all {args.random:2d} permutations:     {best_all:8.3f} s   "
          f"peak {peak_all / mib:8.1f} MiB   ({best_perm:.3f} s per permutation, "
          f"CPU {best_cpu:.3f} s)")
    print(f"steps of one rank, all patterns:  {per_rank * 1e6:8.1f} us   ({nsteps} steps)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS:                  {rss:8.1f} MiB")

    if args.verify:
        hashes = probe_hashes(args.nprocs, 0, args.seed)
        fast = build_patterns(args.nprocs, 1, seed=args.seed)[6].perm
        slow = np.empty(args.nprocs, dtype=np.int32)
        slow[park_sequential(hashes, args.nprocs)] = np.arange(args.nprocs, dtype=np.int32)
        same = fast is not None and np.array_equal(fast, slow)
        print(f"permutation 0 equals the plain probing loop: {same}")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
