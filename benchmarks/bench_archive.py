"""What the result file costs a run: bytes written per update, against the file's final size.

Run: ``python benchmarks/bench_archive.py [--ranks 1024] [--dir /tmp]``. No MPI: the
results are fake, written through :class:`beff.results.archive.ResultFile` exactly as rank 0
of ``beff imb mpi1`` writes them (``create``, one ``add`` per benchmark and process count,
``set_attrs``, ``finish``).

The run simulated is IMB-MPI1's default list at P ranks, approximately:

* the 19 default benchmarks in IMB's order (PingPong ... Barrier);
* PingPong and PingPing at 2 ranks only (P - 2 idle); Sendrecv, Exchange and the
  collectives at IMB's process counts 2, 4, 8, ..., P (and P itself when it is not a power
  of two), as ``-npmin 2`` sweeps them;
* message lengths 0 and 2^0 .. 2^22 (24 sizes; Barrier: one);
* 10 batches per size; ``samples`` float64 and ``batch_iters`` int64 of shape
  [sizes, participating ranks, batches], ``times`` [sizes, ranks], ``needed_gb`` per size,
  and the per-measurement JSON attributes a run stores (placement groups with their world
  ranks);
* root attributes and a ``/ranks`` table of P ranks, as ``start_run_file`` writes them.

Reported: the number of updates (create, add, set_attrs, finish), the final file size, the
bytes the process wrote (``wchar`` of /proc/self/io: every byte passed to write(), pwrite(),
sendfile() or copy_file_range(), so the working copies of a copy-and-rename update count in
full, and nothing else of the script writes much), their ratio to the final size, the
slowest single update and the total time. The result file lives in a fresh directory under
``--dir`` and is removed afterwards (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from beff.results.archive import ResultFile
from beff.results.model import OK, Measurement

BENCHMARKS = [  # IMB-MPI1's default list, in its order: (name, kind, fixed group size)
    ("PingPong", "single_transfer", 2), ("PingPing", "single_transfer", 2),
    ("Sendrecv", "parallel_transfer", 0), ("Exchange", "parallel_transfer", 0),
    ("Allreduce", "collective", 0), ("Reduce", "collective", 0),
    ("Reduce_local", "collective", 0), ("Reduce_scatter", "collective", 0),
    ("Reduce_scatter_block", "collective", 0), ("Allgather", "collective", 0),
    ("Allgatherv", "collective", 0), ("Gather", "collective", 0), ("Gatherv", "collective", 0),
    ("Scatter", "collective", 0), ("Scatterv", "collective", 0), ("Alltoall", "collective", 0),
    ("Alltoallv", "collective", 0), ("Bcast", "collective", 0), ("Barrier", "sync", 0),
]
SIZES = np.array([0] + [1 << k for k in range(23)], dtype=np.int64)  # 0, 2^0 .. 2^22


def process_counts(ranks: int) -> list[int]:
    counts, n = [], 2
    while n < ranks:
        counts.append(n)
        n *= 2
    return [*counts, ranks]


def measurement(rng: np.random.Generator, name: str, kind: str, nprocs: int, ranks: int,
                batches: int) -> Measurement:
    sizes = SIZES[:1] if kind == "sync" else SIZES
    s = len(sizes)
    reps = np.maximum(1, 1000 >> np.maximum(0, np.log2(np.maximum(sizes, 1)).astype(int) - 12))
    per_iter = 1e-6 + sizes[:, None, None] / 5e9
    batch_iters = np.broadcast_to((reps // batches + 1)[:, None, None],
                                  (s, nprocs, batches)).astype(np.int64)
    samples = per_iter * batch_iters * rng.uniform(1.0, 1.2, (s, nprocs, batches))
    times = samples.sum(axis=2) / batch_iters.sum(axis=2)
    hosts = [f"node{r // 64:04d}" for r in range(nprocs)]
    attrs: dict[str, Any] = {
        "backend": "jit", "description": f"IMB-MPI1 {name} (simulated)",
        "placement": f"ranks 0-{nprocs - 1} on {len(set(hosts))} nodes",
        "placement_groups": [{"group": 0, "ranks": list(range(nprocs)),
                              "hosts": sorted(set(hosts)), "nodes": len(set(hosts)),
                              "inter_node": len(set(hosts)) > 1}],
    }
    return Measurement(
        suite="mpi1", benchmark=name, kind=kind, nprocs=nprocs, ngroups=1, multi=None,
        idle=ranks - nprocs, sizes=sizes, repetitions=reps, status=[OK] * s, times=times,
        group=np.zeros(nprocs, dtype=np.int64), world_ranks=np.arange(nprocs), samples=samples,
        batch_iters=batch_iters, time_scale=0.5 if name == "PingPong" else 1.0,
        needed_gb=sizes * 2.0 / (1 << 30), attrs=attrs)


def run_measurements(ranks: int) -> list[tuple[str, str, int]]:
    return [(name, kind, n) for name, kind, fixed in BENCHMARKS
            for n in ([fixed] if fixed else process_counts(ranks))]


def root_attrs(ranks: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows = [{"rank": r, "host": f"node{r // 64:04d}", "cpus": f"{r % 64}", "numa": "0",
             "local_rank": r % 64, "local_size": 64, "node": r // 64, "pid": 100000 + r,
             "memory_bytes": 256 << 30} for r in range(ranks)]
    attrs: dict[str, Any] = {
        "command_line": ["imb", "mpi1"], "config": {"suite": "mpi1", "batches": 10},
        "config_sources": {"suite": "cli"}, "versions": {"beff": "bench"},
        "mpi": {"library_version": "simulated"}, "host": {"nodename": "node0000"},
        "env": {}, "placement": {"nodes": (ranks + 63) // 64, "oversubscribed": False},
        "nprocs": ranks, "suite": "mpi1", "benchmarks": [b[0] for b in BENCHMARKS],
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return attrs, rows


def io_counters() -> dict[str, int]:
    with open("/proc/self/io") as fh:
        return {k: int(v) for k, v in (line.split(":") for line in fh)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--dir", default="/tmp", help="where the result file is written")
    parser.add_argument("--keep", action="store_true", help="keep the result file")
    args = parser.parse_args()

    rng = np.random.default_rng(1)
    plan = run_measurements(args.ranks)
    attrs, rows = root_attrs(args.ranks)
    where = Path(tempfile.mkdtemp(prefix="bench-archive-", dir=args.dir))
    out = ResultFile(where / "run.h5")
    worst = (0.0, "")
    updates = 0
    busy = 0.0

    def timed(what: str, call: Callable[[], None]) -> None:
        nonlocal worst, updates, busy
        start = time.perf_counter()
        call()
        took = time.perf_counter() - start
        updates += 1
        busy += took
        worst = max(worst, (took, what))

    made = 0.0
    io0 = io_counters()
    start = time.perf_counter()
    timed("create", lambda: out.create(attrs, rows, exclusive=True))
    for i, (name, kind, nprocs) in enumerate(plan):
        t0 = time.perf_counter()
        m = measurement(rng, name, kind, nprocs, args.ranks, args.batches)
        made += time.perf_counter() - t0
        timed(f"add {name} np{nprocs}", functools.partial(out.add, m))
        if (i + 1) % 20 == 0:
            print(f"  {i + 1}/{len(plan)} results, "
                  f"{(io_counters()['wchar'] - io0['wchar']) / 1e6:,.1f} MB written",
                  file=sys.stderr, flush=True)
    timed("set_attrs", lambda: out.set_attrs(warnings=[]))
    timed("finish", lambda: out.finish("complete"))
    total = time.perf_counter() - start
    io1 = io_counters()

    leftovers = sorted(p.name for p in where.iterdir() if p.name != "run.h5")
    final = out.path.stat().st_size
    wchar = io1["wchar"] - io0["wchar"]
    disk = io1["write_bytes"] - io0["write_bytes"]
    print(f"ranks {args.ranks}, {len(plan)} results, batches {args.batches}")
    print(f"updates                {updates} (create, {len(plan)} add, set_attrs, finish)")
    print(f"final file size        {final / 1e6:,.1f} MB")
    print(f"total written (wchar)  {wchar / 1e6:,.1f} MB")
    print(f"ratio written / final  {wchar / final:.2f}")
    print(f"(write_bytes to disk   {disk / 1e6:,.1f} MB: block I/O the kernel charged)")
    print(f"worst single update    {worst[0]:.3f} s ({worst[1]})")
    print(f"total time             {total:.1f} s (updates {busy:.1f} s, making the fake "
          f"results {made:.1f} s)")
    print(f"other files left       {leftovers or 'none'}")
    if not args.keep:
        shutil.rmtree(where)
    else:
        print(f"kept                   {out.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
