"""What ``beff map`` costs: the wall time of whole runs at 2 and 4 ranks (8 and 16 with
``--big``, oversubscribed on a small machine), and the time and memory per rank of building
the schedule for 10^4 and 10^6 ranks, with what rank 0 then holds.

Run: ``python benchmarks/bench_map.py [--repeat 3] [--big] [-- extra beff map flags]``.
The runs map every rank of this one host (``--all-ranks``) with the default sizes and
budget unless flags are given after ``--``. Prints the 1-minute load before and after:
report it, with the core count (ranks beyond the cores time-share them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from tempfile import TemporaryDirectory

from _tools import find_tool

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from beff.netmap import schedule  # noqa: E402


def run_once(mpiexec: str, nprocs: int, extra: list[str], where: Path) -> tuple[float, dict]:
    env = dict(os.environ, PYTHONPATH=str(HERE), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    out = where / f"map-{nprocs}.h5"
    cmd = [mpiexec, "-n", str(nprocs), sys.executable, "-m", "beff", "map", "--all-ranks",
           "--format", "json", "--no-progress", "--force", "-o", str(out), *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-800:]}")
    entry = json.loads(proc.stdout)["results"][0]
    return elapsed, entry


def whole_runs(nprocs_list: list[int], repeat: int, extra: list[str]) -> None:
    mpiexec = find_tool("mpiexec", "bench_map")
    cores = os.cpu_count() or 1
    print(f"whole runs ({cores} cores here; beff map --all-ranks {' '.join(extra)}):")
    print(f"{'ranks':>5} {'wall s (median)':>16} {'min':>7} {'max':>7} {'measured s':>10} "
          f"{'samples/pair':>12} {'shifts':>6}")
    with TemporaryDirectory() as tmp:
        for n in nprocs_list:
            walls, runtimes, reps = [], [], []
            shifts = 0
            for _ in range(repeat):
                wall, entry = run_once(mpiexec, n, extra, Path(tmp))
                walls.append(wall)
                runtimes.append(entry["runtime_s"])
                reps.append(entry["repetitions"])
                shifts = len(entry["shifts"])
            note = " (oversubscribed)" if n > cores else ""
            print(f"{n:>5} {statistics.median(walls):>16.2f} {min(walls):>7.2f} "
                  f"{max(walls):>7.2f} {statistics.median(runtimes):>10.2f} "
                  f"{statistics.median(reps):>12.0f} {shifts:>6}{note}")


def measure(func: object, *args: object) -> tuple[object, float, int]:
    """(result, seconds, peak bytes allocated while it ran)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    result = func(*args)  # type: ignore[operator]
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak


def my_partners(me: int, P: int, shifts: list[int]) -> list[tuple[int, int]]:
    return [schedule.partners(me, P, k) for k in shifts]


def ranks_table(P: int) -> list[dict[str, object]]:
    """A ranks table as beff's start-up gathers it on every rank (``Job.everywhere``)."""
    return [{"rank": r, "host": f"node{r:07d}", "pid": 100000 + r, "cpus": "0-63",
             "ncpus": 64, "numa": "0,1", "local_rank": 0, "local_size": 1,
             "node_leader": r, "host_cpu_count": 64, "memory_bytes": 1 << 38, "node": r}
            for r in range(P)]


def schedule_cost() -> None:
    print("\nbuilding the schedule on one rank (the last, which searches furthest):")
    print(f"{'ranks':>9} {'shifts':>7} {'mapped ranks s':>14} {'MiB':>6} {'shifts s':>9} "
          f"{'MiB':>6} {'partners s':>10} {'rank 0 holds (R=5)':>19}")
    for P in (10**4, 10**6):
        local = [0] * P  # one rank per node: every local rank 0
        for K in (0, 100, 10):
            if P == 10**6 and K == 0:
                continue  # every shift of 10^6 ranks: 10^12 pairs, never one job
            mapped, t_map, m_map = measure(schedule.mapped_ranks, local, 1, False)
            shifts, t_sh, m_sh = measure(schedule.choose_shifts, P, K, 12345)
            me = P - 1

            _, t_p, _ = measure(my_partners, me, P, shifts)
            nshifts = len(shifts)  # type: ignore[arg-type]
            held = schedule.record_bytes(P, nshifts, 5)
            print(f"{P:>9,} {nshifts:>7,} {t_map:>14.4f} {m_map / 2**20:>6.1f} "
                  f"{t_sh:>9.4f} {m_sh / 2**20:>6.2f} {t_p:>10.4f} "
                  f"{held / 2**30:>15.2f} GiB")
            del mapped
        table, t_t, m_t = measure(ranks_table, P)
        del table
        print(f"{P:>9,}   the ranks table beff's start-up gathers on every rank: "
              f"{m_t / 2**20:,.0f} MiB ({m_t / P:.0f} B a rank), built in {t_t:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--big", action="store_true", help="also 8 and 16 ranks")
    parser.add_argument("--no-runs", action="store_true", help="only the schedule's cost")
    parser.add_argument("extra", nargs="*", help="beff map flags (after --)")
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    if not args.no_runs:
        whole_runs([2, 4, 8, 16] if args.big else [2, 4], args.repeat, args.extra)
    schedule_cost()
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
