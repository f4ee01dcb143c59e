"""IMB-P2P's schedule, a policy of the one measuring loop (:mod:`beff.bench.driver`).

For each benchmark and message size, on every rank of MPI_COMM_WORLD (one group of all the
ranks), as in IMB-P2P:

    n, w = round(numerator / size) capped to [1, max], n div 10 (>= 1 when n > 1)
    pause; barrier; w warm-up iterations; barrier; n timed iterations; pause; barrier

The n timed iterations run as ``--batches`` batches one after the other (their seconds sum
to one loop's); the warm-up as 1 and w - 1, the first telling the pace for the stall guard.
(SendRecv_Replace has no barrier between its warm-up and its timed loop.) The pause is
``-pause`` microseconds of sleep; the barrier is IMB-P2P's own (zero-byte MPI_Sendrecv
rounds, :func:`beff.imb.p2p.kernels.barrier_loop`). A benchmark that IMB-P2P does not run
on P processes (PingPong on an odd count, a stencil without a decomposition) gets a record
without rows that says why. No calibration, no time budget, no memory check: IMB-P2P has
none.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from beff.bench.ctx import Ctx
from beff.bench.plan import SLOW_MARGIN, EveryRank, Run
from beff.bench.registry import BenchmarkSpec
from beff.core import capi
from beff.core import mpi as _mpi
from beff.core.config import RunConfig, stall_limit
from beff.imb.p2p import kernels, partners

if TYPE_CHECKING:
    from mpi4py.MPI import Comm

# IMB-P2P times SendRecv_Replace's loop right after its warm-up, without a barrier.
NO_BARRIER_AFTER_WARM_UP = frozenset({"SendRecv_Replace"})


class P2PPlan(EveryRank):
    """IMB-P2P's schedule: the sizes and repetition formula its options give (the job's
    ``derived`` values, in the measured config), its pauses and its barrier."""

    def __init__(self, cfg: RunConfig) -> None:
        super().__init__(cfg)
        o = cfg.options
        self.max_iter = int(o["iter_max"])
        self.numerator = int(o["iter_numerator_bytes"])
        self.pause = int(o.get("pause", 0)) / 1e6
        self.warm: list[int] = []  # each size's warm-up repetitions
        self.w = 0  # this size's
        self.barrier_args: tuple[Any, ...] = ()
        self.keep: list[np.ndarray] = []

    # ---------------------------------------------------------------- what is measured
    def sizes(self, spec: BenchmarkSpec) -> list[int]:
        return [int(s) for s in self.cfg.options["sizes"]]

    def not_run(self, spec: BenchmarkSpec, nprocs: int) -> str:
        why = partners.invalid(spec.name, nprocs)
        if not why:
            return ""
        return (f"{spec.name} not run on {nprocs} process{'es' if nprocs != 1 else ''}: "
                f"{why} (as in IMB-P2P)")

    def stall(self, size: int | None = None) -> float:
        return stall_limit(self.cfg, 2 * self.pause + 1.0)

    # ---------------------------------------------------------------- one process count
    def open(self, ctx: Ctx, sizes: list[int]) -> None:
        self.spec, self.np_, self.sizes_ = ctx.spec, ctx.size, sizes
        self.warm = [0] * len(sizes)
        # The barrier's status lives as long as the benchmark: a size's resources would tie
        # it to that size (a barrier then wrote its status into the next size's arrays; seen
        # under Open MPI).
        scratch = np.zeros(1, dtype=np.uint8)
        status = np.zeros(capi.status_size(), dtype=np.uint8)
        self.keep = [scratch, status]
        self.barrier_args = (1, ctx.rank, ctx.size, int(scratch.ctypes.data),
                             ctx.handle(ctx.MPI.BYTE), ctx.handle(ctx.comm),
                             int(status.ctypes.data))

    def _barrier(self, ctx: Ctx) -> None:
        ctx.call(kernels.barrier_loop, *self.barrier_args)

    def _sleep(self) -> None:
        if self.pause > 0:
            time.sleep(self.pause)

    def repetitions(self, ctx: Ctx, run: Run, rcomm: Comm, i: int, nbytes: int,
                    n0: int) -> tuple[int, str | None]:
        n, self.w = partners.iterations(nbytes, self.max_iter, self.numerator)
        self.warm[i] = self.w
        return n, None

    def warm_up(self, ctx: Ctx, run: Run, n: int) -> float:
        """pause; barrier; the warm-up as 1 and w - 1 repetitions; barrier."""
        w = self.w
        self._sleep()
        self._barrier(ctx)
        per = 0.0  # seconds per repetition, the slowest seen on this rank
        stall = self.stall()
        for k in (1, w - 1) if w > 1 else (w,):  # the first one tells the pace
            if not k:
                continue
            if SLOW_MARGIN * per * k > stall:  # slow is not hung
                _mpi.guard(stall + SLOW_MARGIN * per * k,
                           f"{ctx.spec.name} at {ctx.size} processes (warm-up: {w} "
                           "repetitions)")
            began = time.monotonic()
            run(k)
            per = max(per, (time.monotonic() - began) / k)
        if ctx.spec.name not in NO_BARRIER_AFTER_WARM_UP:
            self._barrier(ctx)
        return per

    def close_size(self, ctx: Ctx, rcomm: Comm, i: int, seconds: float) -> None:
        """pause; barrier."""
        self._sleep()
        self._barrier(ctx)

    def factor(self, spec: BenchmarkSpec, np_: int) -> float:
        return float(np_ * spec.bw_scale)

    def attrs(self) -> dict[str, Any]:
        assert self.spec is not None
        return {"decomposition": partners.decomposition(self.spec.name, self.np_),
                "warm_up_repetitions": [int(v) for v in self.warm]}
