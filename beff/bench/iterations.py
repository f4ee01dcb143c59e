"""Single iterations' times (``--per-iteration``): tail latencies beside IMB's averages.

IMB reports a size's time per iteration averaged over its n timed repetitions. With
``--per-iteration``, the compiled loop's twin (:func:`beff.core.capi.per_iteration_of`)
also writes the seconds of single iterations into an array made before the timed batches:

* **which**: every ``stride``-th of the size's n timed iterations (counted across its
  batches), ``stride = ceil(n / max)``, so at most ``--per-iteration-max`` (10,000 by
  default, 100,000 at most) per size and rank, spread evenly over the whole run of the size;
* **how**: one more MPI_Wtime after every iteration (the seconds since the one before) in the
  loops IMB times as a whole (PingPong, PingPing, Sendrecv, Exchange, Barrier), and the
  call's own Wtime pair in the collectives IMB times call by call. That Wtime is also inside
  the loop's total: the mode has a cost, measured in ``benchmarks/bench_per_iteration.py``;
* **joined**: iteration k of every rank is the same iteration (the ranks run the same counts),
  and its time is the slowest rank's, as IMB's t_max is per repetition over ranks; the
  percentiles (p50, p90, p99) and the maximum are taken over those per-iteration maxima,
  times the benchmark's time scale (half a round trip for PingPong), in microseconds
  (:func:`beff.results.stats.tails`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from beff.bench.ctx import Ctx


def prepare(ctx: Ctx, n: int, most: int) -> None:
    """Room for this size's recorded iterations, before its timed batches."""
    stride = max(1, math.ceil(n / max(1, most)))
    ctx.iter_stride = stride
    ctx.iter_done = 0
    ctx.iter_times = np.full(math.ceil(n / stride), np.nan)


def stack(per_rank: Sequence[Sequence[np.ndarray]], sizes: int) -> np.ndarray:
    """[S, R, M] from each rank's list of per-size arrays (sizes not measured, and a rank's
    fewer iterations, padded with NaN)."""
    most = max((len(a) for rank in per_rank for a in rank), default=0)
    out = np.full((sizes, len(per_rank), most), np.nan)
    for r, arrays in enumerate(per_rank):
        for s, a in enumerate(arrays):
            out[s, r, : len(a)] = a
    return out
