"""IMB-P2P's job: its own schedule, not IMB-MPI1's time-based calibration.

For each benchmark (in IMB-P2P's order, or as named) and each message size, on every rank of
MPI_COMM_WORLD (a duplicate of it), as in IMB-P2P:

    n, w = round(numerator / size) capped to [1, max], n div 10 (>= 1 when n > 1)
    pause; barrier; w warm-up iterations; barrier; n timed iterations; pause; barrier

The n timed iterations run as ``--batches`` batches one after the other (their seconds sum
to one loop's); the warm-up as 1 and w - 1. Between them, nothing but the stall guard's
re-arming: a slow batch is not a hung rank when the ones before it were as slow.

(SendRecv_Replace has no barrier between its warm-up and its timed loop.) The pause is
``-pause`` microseconds of sleep; the barrier is IMB-P2P's own (zero-byte MPI_Sendrecv
rounds). A benchmark that IMB-P2P does not run on P processes (PingPong on an odd count, a
stencil without a decomposition) gets a record without rows that says why, and IMB-P2P's
line in its text. Each rank's loop seconds, message counts and defects are gathered on rank 0
into one :class:`~beff.results.model.Measurement` per benchmark.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from beff.bench import measured
from beff.bench.ctx import Ctx
from beff.bench.registry import BenchmarkSpec, resolve
from beff.bench.schedule import split_batches
from beff.core import capi
from beff.core import mpi as _mpi
from beff.core.config import RunConfig, stall_limit
from beff.core.progress import Bar
from beff.core.suite import Suite
from beff.imb.p2p import kernels, partners
from beff.imb.p2p.options import MIB, message_sizes, parse_iter
from beff.results.model import OK, Measurement, Result, RunRecord, measurement_key
from beff.results.placement import annotate

# IMB-P2P times SendRecv_Replace's loop right after its warm-up, without a barrier.
NO_BARRIER_AFTER_WARM_UP = frozenset({"SendRecv_Replace"})


# A size whose warm-up says it will take long is guarded for this many times that, on top
# of the stall limit: a slower phase of the load must not make it look hung.
SLOW_MARGIN = 4.0

class P2PJob:
    """One run of IMB-P2P."""

    streaming = True
    network = True

    def __init__(self, suite: Suite) -> None:
        self.suite = suite.name
        self.derived: dict[str, Any] = {}
        self.benchmarks: list[str] = []
        self.ranks: list[dict[str, Any]] = []
        self.cfg: RunConfig | None = None
        self.done: dict[str, bool] = {}  # --resume: the file's results (key -> failed)

    # ------------------------------------------------------------------ rank 0, before
    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        sizes = message_sizes(cfg.options, cfg.given())
        max_iter, numerator = parse_iter(cfg.options["iter"])
        self.derived.update(sizes=sizes, iter_max=max_iter, iter_numerator_bytes=numerator * MIB)
        self.benchmarks = [s.name for s in resolve(self.suite, cfg.options.benchmarks, [], [])]

    def resume(self, record: RunRecord) -> None:
        """Rank 0, ``--resume``: the results ``record`` holds are not measured again."""
        self.done = {r.key: r.failed for r in record.measurements}

    def names(self) -> list[str]:
        return list(self.benchmarks)

    def specs(self) -> list[BenchmarkSpec]:
        return resolve(self.suite, self.benchmarks, [], [])

    # ------------------------------------------------------------------ every rank
    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        self.ranks = ranks or []
        self.cfg = cfg
        return {}

    def notes(self) -> list[str]:
        if self.cfg is not None and self.cfg.check and self.cfg.options.get("msgwr", True):
            return ["--check: -msgwr's writes into the send buffers are off (they would "
                    "change the data checked)"]
        return []

    def steps(self, nprocs: int) -> int:
        runs = [s for s in self.specs() if not partners.invalid(s.name, nprocs)]
        return len(runs) * len(self.derived["sizes"])

    def measure(self, MPI: types.ModuleType, cfg: RunConfig, emit: Callable[[Result], None],
                bar: Bar) -> str:
        world = MPI.COMM_WORLD
        for spec in self.specs():
            if measurement_key(self.suite, spec.name, "", world.Get_size(), None) \
                    in self.done:  # the resumed file's (the same on every rank)
                continue
            m = self.run(MPI, cfg, spec, bar)
            if m is not None:
                if not m.unsupported:
                    annotate(m, self.ranks)
                emit(m)
        _mpi.guard(None, "")
        world.Barrier()
        return ""

    def finish(self, results: list[Result], nprocs: int) -> list[str]:
        return []

    # ------------------------------------------------------------------ one benchmark
    def run(self, MPI: types.ModuleType, cfg: RunConfig, spec: BenchmarkSpec,
            bar: Bar) -> Measurement | None:
        """Every size of ``spec`` on every rank; rank 0 returns the Measurement."""
        world = MPI.COMM_WORLD
        P, rank = world.Get_size(), world.Get_rank()
        sizes = [int(s) for s in self.derived["sizes"]]
        _mpi.injected_fault(spec.name, rank)
        why = partners.invalid(spec.name, P)
        if why:
            return invalid_record(spec, sizes, P, why, cfg) if rank == 0 else None
        max_iter = int(self.derived["iter_max"])
        numerator = int(self.derived["iter_numerator_bytes"])
        pause = int(cfg.options.get("pause", 0)) / 1e6
        stall = stall_limit(cfg, 2 * pause + 1.0)
        S, B = len(sizes), max(1, cfg.batches)
        seconds = np.full((S, B), np.nan)  # each batch's timed seconds
        iters = np.zeros((S, B), dtype=np.int64)
        reps = np.zeros(S, dtype=np.int64)
        warm = np.zeros(S, dtype=np.int64)
        defects = np.zeros(S, dtype=np.int64)
        messages = np.full(S, np.nan)
        comm = world.Dup()
        try:
            ctx = Ctx(MPI, comm, cfg, spec)
            scratch = np.zeros(1, dtype=np.uint8)
            # The barrier's status lives as long as this loop over sizes: ctx.scratch would
            # tie it to ctx.resources, which each size replaces (and frees: a barrier then
            # wrote its status into the next size's arrays; seen under Open MPI).
            status_buf = np.zeros(capi.status_size(), dtype=np.uint8)
            status = int(status_buf.ctypes.data)
            barrier_args = (1, rank, P, int(scratch.ctypes.data), ctx.handle(MPI.BYTE),
                            ctx.handle(comm), status)

            def barrier() -> None:
                ctx.call(kernels.barrier_loop, *barrier_args)

            def sleep() -> None:
                if pause > 0:
                    time.sleep(pause)

            for i, nbytes in enumerate(sizes):
                _mpi.guard(stall, f"{spec.name} at {P} processes, {nbytes} bytes")
                if rank == 0:
                    bar(f"{spec.name} {nbytes} B")
                n, w = partners.iterations(nbytes, max_iter, numerator)
                ctx.begin_size()
                with contextlib.ExitStack() as ctx.resources, spec.kernel(ctx, nbytes) as run:
                    sleep()
                    barrier()
                    per = 0.0  # seconds per repetition, the slowest seen on this rank
                    for k in (1, w - 1) if w > 1 else (w,):  # the first one tells the pace
                        if not k:
                            continue
                        if SLOW_MARGIN * per * k > stall:  # slow is not hung (below)
                            _mpi.guard(stall + SLOW_MARGIN * per * k,
                                       f"{spec.name} at {P} processes, {nbytes} bytes "
                                       f"(warm-up: {w} repetitions)")
                        began = time.monotonic()
                        run(k)
                        per = max(per, (time.monotonic() - began) / k)
                    if spec.name not in NO_BARRIER_AFTER_WARM_UP:
                        barrier()
                    # IMB-P2P's n timed iterations, as batches one after the other
                    parts = split_batches(n, B)
                    ctx.batches = len(parts)
                    for b, k in enumerate(parts):
                        # Slow is not hung: a batch may last what the warm-up or the batch
                        # before it says (IMB-P2P's fixed 100,000 repetitions at a loaded
                        # node's 1 ms); each batch is progress, and re-arms the guard
                        expected = per * k
                        if SLOW_MARGIN * expected > stall:
                            _mpi.guard(stall + SLOW_MARGIN * expected,
                                       f"{spec.name} at {P} processes, {nbytes} bytes "
                                       f"(batch {b + 1} of {len(parts)}: {k} repetitions, "
                                       f"about {expected:.0f} s by the last ones)")
                        ctx.batch = b
                        began = time.monotonic()
                        seconds[i, b] = float(np.atleast_1d(run(k))[0])
                        per = max(per, (time.monotonic() - began) / k)
                    iters[i, : len(parts)] = parts
                    sleep()
                    barrier()
                reps[i], warm[i], defects[i] = n, w, ctx.defects
                messages[i] = ctx.prepared.get("messages", np.nan)
            _mpi.guard(stall, f"{spec.name} at {P} processes, gathering the results")
            gathered = comm.gather((seconds, iters, defects, messages), root=0)
        finally:
            comm.Free()
        if gathered is None:
            return None
        return measured.from_batches(
            spec, sizes=sizes, repetitions=reps, status=[OK] * S,
            samples=np.stack([g[0] for g in gathered], axis=1),  # [size, rank, batch]
            batch_iters=np.stack([g[1] for g in gathered], axis=1), nprocs=P,
            msgrate_factor=P * spec.bw_scale,
            defects=np.sum([g[2] for g in gathered], axis=0) if cfg.check else None,
            checked=cfg.check,
            prepared={"messages": np.stack([g[3] for g in gathered], axis=1)},
            attrs={"decomposition": partners.decomposition(spec.name, P),
                   "warm_up_repetitions": [int(v) for v in warm]})


def invalid_record(spec: BenchmarkSpec, sizes: list[int], nprocs: int, why: str,
                   cfg: RunConfig) -> Measurement:
    """The record of a benchmark IMB-P2P does not run on ``nprocs`` processes."""
    P = nprocs
    return measured.unmeasured(spec, sizes, P, f"{spec.name} not run on {P} process"
                                                f"{'es' if P != 1 else ''}: {why} (as in "
                                                "IMB-P2P)", cfg.check)


def job(suite: Suite) -> P2PJob:
    return P2PJob(suite)
