"""Memory of one rank's state (message buffers aside) in ``beff run``, ``imb mpi1``, ``map``.

Run: ``python benchmarks/bench_memory.py [--nprocs 1000 10000 ...] [--trace-max 10000]``
(the default, P = 10^3 .. 10^6: 5 minutes on a loaded 2-core VM, 2.2 GiB at most).
No MPI: for each (command, role, P) a fresh process builds what one rank holds, with beff's
own code where it is pure, and prints its peak RSS over the RSS after the imports (MiB),
tracemalloc's peak (it also counts calloc'ed pages never touched; rank 0 only up to
--trace-max, tracing slows the ranks table down) and the seconds taken.  "rank 1" measures;
"rank 0" also holds the ranks table and what is stored.  Modelled:
every rank: its facts (collect_rank) and runtime.node_ids (runtime.node_ids_of).
rank 0: the ranks table (64 ranks a node on 256 GiB, hosts node00042, cpus 0-63) pickled
rank by rank into one buffer and loaded as mpi4py's gather does, placement(), 4 start-up
floats a rank, placement() again (the attrs), the gathered compiled-loop counts.
run: build_patterns; bind_patterns, one pattern at a time: a random permutation (rank 0
draws, every rank gets the Bcast copy) or the worst-cyclic one, Group.Incl of the int32
array, the steps, and a rank other than 0 forgets the permutation;
one communicator's Alltoallv vectors (Loops._prepare); State; rank 0 also 3 records'
stacked permutations (make_record, P <= 65536).
imb mpi1: PingPong, and Allreduce at -npmin 2's counts 2, 4, .., P; default sizes, 10
batches: a rank's per-size arrays; rank 0 per count the pickled gather of every rank's
samples, the Measurement (measured.from_batches) and annotate(), all kept (the results).
map: --all-ranks, K = P-1 shifts (or --shifts 64), 3 samples a pair (the least): every rank
the shifts and its samples (3, 3, K); rank 0 check_ranks, the mapped ranks' hosts and
nodes, _judged, the MapRecord (K, P, 3) x 3, a bandwidth pass's Gather buffer, derive().
Left out: MPI objects and the MPI library's memory (communicators, groups), HDF5 writes,
rendering.  What would not fit in 4 GiB is not built but computed from its array shapes
(schedule.record_bytes for the map) and marked so; a map check_placement refuses is marked.
"""

from __future__ import annotations

import argparse
import json
import pickle
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from beff.bench.plan import counts_for, sizes_for
from beff.bench.registry import resolve
from beff.core import suite as suites
from beff.core.config import build_config
from beff.core.errors import UsageError
from beff.core.metadata import placement
from beff.core.runtime import STARTUP_COLUMNS, node_ids_of
from beff.netmap import schedule
from beff.netmap.job import MapJob
from beff.netmap.record import derive
from beff.patterns import N_RANDOM, GroupComm, build_patterns
from beff.results import build as measured
from beff.results.model import OK
from beff.results.placement import annotate

MIB, LIMIT, PER_NODE, REPS, SEED = 1 << 20, 4 << 30, 64, 3, 1_700_000_000
COMMANDS = {"run": "run", "imb": "imb mpi1", "map": "map", "map64": "map --shifts 64"}
Built = tuple[list[Any], int, str]  # what is kept alive, bytes computed (not built), note


def facts(rank: int) -> dict[str, Any]:
    """A plausible collect_rank dict."""
    return {"rank": rank, "host": f"node{rank // PER_NODE:05d}", "pid": 200_000 + rank % 7919,
            "cpus": "0-63", "ncpus": 64, "numa": "0,1", "local_rank": rank % PER_NODE,
            "local_size": PER_NODE, "node_leader": rank - rank % PER_NODE, "host_cpu_count": 64,
            "memory_bytes": 256 << 30}


def gather(P: int, item: Callable[[int], Any], same: bool = False) -> list[Any]:
    """mpi4py's object gather at the root: the ranks' pickles (``item(rank)``; ``same``: all
    alike) in one buffer, loaded one by one."""
    buf, offsets = bytearray(), np.zeros(P + 1, dtype=np.int64)
    if same:
        one = pickle.dumps(item(0), protocol=5)
        buf, offsets[1:] = bytearray(one) * P, np.arange(1, P + 1) * len(one)
    for r in range(0 if same else P):
        buf += pickle.dumps(item(r), protocol=5)
        offsets[r + 1] = len(buf)
    with memoryview(buf) as view:
        return [pickle.loads(view[offsets[r]:offsets[r + 1]]) for r in range(P)]


def every_rank(P: int, rank: int) -> list[Any]:
    """runtime._node_ids and the rank's own facts."""
    leaders = np.arange(P, dtype=np.int64) // PER_NODE * PER_NODE
    return [node_ids_of(leaders), facts(rank)]


def rank0(P: int) -> list[Any]:
    """runtime.begin's and runner.measure's rank 0, every command: table, attrs, counts."""
    ranks = gather(P, facts)
    placement(ranks)
    phases = np.random.default_rng(0).random((P, len(STARTUP_COLUMNS)))  # startup_phases
    for row, values in zip(ranks, phases.tolist(), strict=True):
        row.update(zip(STARTUP_COLUMNS, values, strict=True))
    return [ranks, placement(ranks), [0] * P]


def run_state(P: int, root: bool, _: int) -> Built:
    keep = every_rank(P, 0 if root else 1) + (rank0(P) if root else [])
    pats = build_patterns(P, N_RANDOM, seed=SEED)
    me, steps = 0 if root else 1, []
    for p in pats:  # bind_patterns, one pattern at a time
        if isinstance(p.comm, GroupComm) and p.kind == "random":  # rank 0 draws, Bcast
            perm = np.empty(P, dtype=np.int32)
            perm[:] = p.comm.perm if root else np.arange(P, dtype=np.int32)
            p.comm.adopt(perm)
        if p.perm is not None:  # Group.Incl of it (the worst-cyclic one computed)
            incl = np.asarray(p.perm, dtype=np.int32)  # what mpi4py converts it to
            del incl
        steps.append(p.steps(me if me < p.comm.size else None))
        if not root and isinstance(p.comm, GroupComm):  # a rank other than 0 forgets it
            p.comm.release()
    vectors = [np.zeros(P, np.int32) for _ in range(4)]  # Loops._prepare, one comm at a time
    state = np.full((3, 30, len(pats), 3), 1e30)  # State.bw_local [rep, len, pat, meth]
    records = [np.stack([p.perm for p in pats if p.kind == "random"]) for _ in range(3)] \
        if root and P <= 1 << 16 else []
    return keep + [pats, steps, vectors, state, records], 0, ""


def imb_state(P: int, root: bool, _: int) -> Built:
    held = rank0(P) if root else [[]]
    keep, computed, note = every_rank(P, 0 if root else 1) + held, 0, ""
    cfg = build_config({}, None, suites.get("mpi1"))
    for spec in resolve("mpi1", ["PingPong", "Allreduce"], [], []):
        sizes, counts = sizes_for(spec, cfg), counts_for(spec, cfg, P)
        S, B = len(sizes), cfg.batches
        mine = (np.full((S, B, 1), 1e-6), np.full((S, B), 100, np.int64), 0, 1,
                np.zeros(S, np.int64), {})  # what Driver._measure gathers
        keep += [counts, mine]
        # samples, times, 2 ids a rank (batch_iters: one rank's, broadcast, as from_batches
        # keeps it where every rank ran the same iterations)
        stored = mine[0].nbytes + 8 * S + 16
        sent = len(pickle.dumps(mine, protocol=5))
        if root and (stored + sent) * sum(counts) > LIMIT:
            computed += stored * sum(counts) + sent * counts[-1]
            note = f"{spec.name}'s Measurements and gather"
        elif root:
            for n in counts:
                got = gather(n, lambda _, m=mine: m, same=True)  # world ranks: below
                samples, iters, groups, *_ = zip(*got, strict=True)
                m = measured.from_batches(
                    spec, sizes=sizes, repetitions=np.full(S, 100), status=[OK] * S,
                    samples=np.stack(samples, axis=1), batch_iters=np.stack(iters, axis=1),
                    nprocs=n, group=groups, world_ranks=tuple(range(n)),
                    needed_gb=np.zeros(S), backend="numba")
                del got, samples, iters
                m.attrs["map_rows"] = []
                annotate(m, held[0])
                keep.append(m)
    return keep, computed, note


def map_state(P: int, root: bool, shifts: int) -> Built:
    job = MapJob(suites.get("map"))
    job.opts = {**build_config({}, None, suites.get("map")).options, "all_ranks": True,
                "shifts": shifts}
    job.derived, job.nprocs, job.nmapped, job.reps = {"seed": SEED, "per_node": 0}, P, P, REPS
    job.shifts = schedule.choose_shifts(P, shifts, SEED)  # every rank, from P alone
    K = len(job.shifts)
    keep: list[Any] = every_rank(P, 0 if root else 1) + [job, np.full((3, REPS, K), 0.1)]
    if not root:
        return keep, 0, ""
    keep += rank0(P)
    ranks, note = keep[-3], ""
    try:
        job.check_ranks(ranks)
    except UsageError:
        note = "beff refuses it (check_placement)"
    job.mapped = schedule.mapped_ranks([int(r["local_rank"]) for r in ranks], 0, True)
    job.hosts = [str(ranks[w]["host"]) for w in job.mapped]
    job.node = [int(ranks[w]["node"]) for w in job.mapped]
    job._judged(ranks)
    record = schedule.record_bytes(P, K, REPS) + 16 * K * P  # and a bandwidth pass's Gather
    if record > LIMIT // 4:  # derive() needs some 3 times as much again
        return keep, record, f"the record and Gather buffer; {note}".rstrip("; ")
    rec = job._record()
    got = np.full((P, 2, 1, K), 1e-3)  # comm.Gather of a bandwidth pass
    for target in (rec.send_time, rec.recv_time, rec.latency_time):
        target[:] = got[:, 0].transpose(2, 0, 1)
    derive(rec)
    return keep + [rec, got], 0, note


BUILDERS = {"run": run_state, "imb": imb_state, "map": map_state, "map64": map_state}


def one(command: str, role: str, P: int, trace: bool) -> None:
    """In a fresh process: build one rank's state, print its figures as JSON."""
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    _kept, computed, note = BUILDERS[command](P, role == "0", 64 if command == "map64" else 0)
    seconds = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1] if trace else 0
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024
    print(json.dumps({"bytes": grown, "traced": traced, "computed": computed,
                      "seconds": seconds, "note": note}))


def measure(command: str, role: str, P: int, trace: bool) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--one", command, role, str(P)] + ["--trace"] * trace
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode:
        return {"bytes": 0, "traced": 0, "computed": 0, "seconds": 0.0,
                "note": f"failed: {done.stderr.strip().splitlines()[-1:]}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nprocs", type=int, nargs="+",
                        default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--trace-max", type=int, default=10_000,
                        help="largest P whose rank-0 rows are traced too (slow)")
    parser.add_argument("--one", nargs=3, metavar=("COMMAND", "ROLE", "P"), help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(args.one[0], args.one[1], int(args.one[2]), args.trace)
        return 0
    began = time.perf_counter()
    print(f"{'command':<16} {'role':<6} {'P':>9} {'MiB':>12} {'traced MiB':>11} {'s':>7}  note")
    for command, name in COMMANDS.items():
        for role in ("1", "0"):
            for P in args.nprocs:
                row, traced = measure(command, role, P, False), "-"
                if P <= args.trace_max or role == "1":
                    traced = f"{measure(command, role, P, True)['traced'] / MIB:,.1f}"
                note = row["note"]
                if row["computed"]:
                    note = f"{row['computed'] / MIB:,.0f} MiB computed, not built: {note}"
                print(f"{name:<16} {'rank ' + role:<6} {P:>9,} "
                      f"{(row['bytes'] + row['computed']) / MIB:>12,.1f} {traced:>11} "
                      f"{row['seconds']:>7.2f}  {note}", flush=True)
    print(f"total {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
