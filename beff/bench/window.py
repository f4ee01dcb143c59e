"""The window start policy (``--sync window``): synchronised clocks instead of a barrier.

IMB starts each repetition of a collective after an MPI_Barrier and times it on each rank's
own clock; the barrier's exit skew goes into every time. Under ``--sync window``:

1. **Clocks** (:func:`synchronize`, collective over the group): every rank fits a model of
   the group root's MPI_Wtime (offset and drift) from ping-pongs with its reference in the
   hierarchical tree of :mod:`beff.core.clocks` (node leaders first, then within each node:
   log2(nodes) + log2(ranks per node) rounds). A client times :data:`FIT_POINTS` fit
   points, :data:`FIT_GAP_S` apart, of :data:`PINGPONGS` ping-pongs each, keeps each fit
   point's shortest round trip and fits a line; the models compose along the tree. Each
   rank's model, its fit residual (summed along its path to the root: the achieved error)
   and the drift's standard error are stored with the measurement.
2. **Windows** (:func:`run_batch`): the group root picks a start t0 on its clock
   :data:`LEAD_S` ahead; call i of a batch starts on every rank when its model shows
   ``t0 + i * width``. A rank that reaches a call after its start marks it late; a call
   late on any rank is invalid: counted, stored and left out. A call's time is the latest
   end over the ranks, on the root's clock, less its start.
3. **Width** (:func:`width_for`): twice the calibration's slowest time per call, plus four
   times the clock residual, plus :data:`WIDTH_SLACK_S`.
4. **Resynchronisation**: between sizes, when the drift's standard error times the time since
   the fit could have moved a model more than :data:`RESYNC_BOUND_S`.
"""

from __future__ import annotations

import time
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from beff.core import capi, clocks, testhooks
from beff.core.capi import F64Array, loop

if TYPE_CHECKING:
    from mpi4py.MPI import Comm

FIT_POINTS = 5
PINGPONGS = 20
FIT_GAP_S = 0.002
LEAD_S = 0.002
WIDTH_SLACK_S = 5e-6
RESYNC_BOUND_S = 0.5e-6
RESIDUAL_LIMIT_S = 1e-6  # above it the run says that its starts are that uncertain
PING, PONG = 71, 72
C: Any = None  # the C bindings, substituted by the backend


@loop
def sync_client_loop(n: int, stamp: F64Array, addr: int, dtype: int, peer: int, comm: int,
                     status: int, out: F64Array) -> tuple[float, int]:
    """n ping-pongs with the reference: local send time, its stamp, local receive time."""
    err = 0
    for i in range(n):
        s = C.Wtime()
        err |= C.Send(addr, 0, dtype, peer, PING, comm)
        err |= C.Recv(addr, 1, dtype, peer, PONG, comm, status)
        e = C.Wtime()
        out[3 * i] = s
        out[3 * i + 1] = stamp[0]
        out[3 * i + 2] = e
    return 0.0, err


@loop
def sync_reference_loop(n: int, stamp: F64Array, addr: int, dtype: int, peer: int, comm: int,
                        status: int) -> tuple[float, int]:
    """Answer n pings with this clock's time at their arrival."""
    err = 0
    for _ in range(n):
        err |= C.Recv(addr, 0, dtype, peer, PING, comm, status)
        stamp[0] = C.Wtime()
        err |= C.Send(addr, 1, dtype, peer, PONG, comm)
    return 0.0, err


@dataclass
class Clock:
    """This rank's model of the group root's clock (reference = alpha + beta * MPI_Wtime)."""

    alpha: float
    beta: float
    residual: float  # the fits' residuals along the path to the root, summed (s)
    drift_error: float  # the drifts' standard errors along the path, summed (s/s)
    min_rtt: float  # this rank's own fit's shortest round trip (s; 0 for the root)
    parent: int  # its reference in the tree (-1: the root)
    fitted_at: float  # MPI_Wtime when the model was made
    fits: int = 1  # how many times the clocks were fitted (1 + resynchronisations)
    residual_max: float = 0.0  # the group's largest residual (set by the engine)
    # half the longest kept round trips along the path, summed: what a link slower one way
    # than the other can shift the offset by, unseen by any ping-pong (s)
    uncertainty: float = 0.0
    # this rank's system clock (CLOCK_REALTIME) less its MPI_Wtime, read together: where the
    # hosts' system clocks agree (one machine, or good PTP), their differences are the true
    # offsets, a check on the fitted ones
    system_minus_wtime: float = 0.0

    def predicted_error(self, now: float) -> float:
        return self.drift_error * max(0.0, now - self.fitted_at)


def synchronize(MPI: types.ModuleType, comm: Comm, node_of: list[int]) -> Clock:
    """Every rank of ``comm``, collective: fit each rank's model of rank 0's clock
    (``node_of``: each rank's node id, for the hierarchy)."""
    me, P = comm.Get_rank(), comm.Get_size()
    stamp = np.zeros(1)
    addr = int(stamp.ctypes.data)
    status_buf = np.zeros(capi.status_size(), dtype=np.uint8)
    status = int(status_buf.ctypes.data)
    dtype, handle = capi.handle(MPI.DOUBLE), capi.handle(comm)
    parent, fit = -1, None
    for pairs in clocks.hierarchical_rounds(node_of):
        for ref, client in pairs:
            if me == ref:
                _check(sync_reference_loop(FIT_POINTS * PINGPONGS, stamp, addr, dtype, client,
                                           handle, status))
            elif me == client:
                points = np.empty((FIT_POINTS, PINGPONGS, 3))
                for f in range(FIT_POINTS):
                    if f:
                        time.sleep(FIT_GAP_S)  # fit points spread out: the drift
                    out = np.empty(3 * PINGPONGS)
                    _check(sync_client_loop(PINGPONGS, stamp, addr, dtype, ref, handle,
                                            status, out))
                    points[f] = out.reshape(PINGPONGS, 3)
                parent, fit = ref, clocks.fit(points)
    mine = np.array([parent, *(
        (fit.model.alpha, fit.model.beta, fit.residual, fit.drift_error, fit.min_rtt,
         fit.max_rtt) if fit is not None else (0.0, 1.0, 0.0, 0.0, 0.0, 0.0))])
    rows = np.empty((P, 7)) if me == 0 else None
    comm.Gather(mine, rows, root=0)
    composed = None
    if rows is not None:
        parents = [int(p) for p in rows[:, 0]]
        models = clocks.compose({c: clocks.Affine(rows[c, 1], rows[c, 2])
                                 for c in range(P) if parents[c] >= 0}, parents)
        composed = np.array([[m.alpha, m.beta, *_along(c, parents, rows)]
                             for c, m in enumerate(models)])
    got = np.empty(5)
    comm.Scatter(composed, got, root=0)
    return Clock(float(got[0]), float(got[1]), float(got[2]), float(got[3]),
                 float(mine[5]), parent, MPI.Wtime(), uncertainty=float(got[4]),
                 system_minus_wtime=system_minus_wtime(MPI))


def system_minus_wtime(MPI: types.ModuleType, tries: int = 5) -> float:
    """The system clock less MPI_Wtime, from the reading of the system clock between two of
    MPI_Wtime that were closest together (a preemption between the reads would add to it)."""
    best = (float("inf"), 0.0)
    for _ in range(tries):
        before = MPI.Wtime()
        system = time.time()
        after = MPI.Wtime()
        best = min(best, (after - before, system - 0.5 * (before + after)))
    return best[1]


def _along(rank: int, parents: list[int], rows: np.ndarray) -> tuple[float, float, float]:
    """The residuals, drift errors and half the longest kept round trips of the fits on
    ``rank``'s path to the root, each summed."""
    residual = drift = half_rtt = 0.0
    while parents[rank] >= 0:
        residual += float(rows[rank, 3])
        drift += float(rows[rank, 4])
        half_rtt += 0.5 * float(rows[rank, 6])
        rank = parents[rank]
    return residual, drift, half_rtt


def _check(result: tuple[float, int]) -> None:
    capi.check(int(result[1]), "clock synchronisation (--sync window)")


def width_for(t_call: float, residual: float) -> float:
    """A window's width from the calibration's slowest time per call (s)."""
    forced = testhooks.window()
    return forced if forced is not None else 2.0 * t_call + 4.0 * residual + WIDTH_SLACK_S


@dataclass
class Batch:
    """One batch's calls under the window policy, as this rank saw them."""

    seconds: float  # the sum over the batch's valid calls of this rank's end less the start
    valid: np.ndarray  # bool[k]: no rank was late
    ends: np.ndarray  # float[k]: this rank's end less the start (s, the root's clock)
    latest: np.ndarray  # float[k]: the latest end over the ranks less the start: the call's


def plan(MPI: types.ModuleType, comm: Comm, clock: Clock, k: int
         ) -> tuple[float, np.ndarray, np.ndarray]:
    """A batch of ``k`` calls (collective over ``comm``): its start on the root's clock and
    the arrays the windowed loop fills (ends, late)."""
    t0 = np.array([clock.alpha + clock.beta * MPI.Wtime() + LEAD_S])
    comm.Bcast(t0, root=0)
    return float(t0[0]), np.zeros(k), np.zeros(k, dtype=np.int64)


@dataclass
class Windows:
    """A size's window policy, as its kernel's timed calls use it (``Ctx.window``)."""

    MPI: types.ModuleType
    comm: Comm
    clock: Clock
    width: float
    share: bool = False  # more ranks than CPUs on this node: yield while waiting

    def run(self, call: Any, twin: capi.LoopFunc, n: int, *args: Any
            ) -> tuple[Batch, tuple[float, ...]]:
        """Run the windowed loop ``twin`` for ``n`` calls (``call``: Ctx.call), collective
        over the group: the batch's start is agreed first, its late calls after."""
        t0, ends, late = plan(self.MPI, self.comm, self.clock, n)
        figures = call(twin, n, *args, self.clock.alpha, self.clock.beta, t0, self.width,
                       ends, late, int(self.share))
        return finish(self.MPI, self.comm, ends, late), figures


def finish(MPI: types.ModuleType, comm: Comm, ends: np.ndarray, late: np.ndarray) -> Batch:
    """After the windowed loop (collective over ``comm``): the calls late on any rank."""
    anywhere = np.empty_like(late)
    comm.Allreduce(late, anywhere, op=MPI.MAX)
    latest = np.empty_like(ends)
    comm.Allreduce(ends, latest, op=MPI.MAX)
    valid = anywhere == 0
    return Batch(float(ends[valid].sum()), valid, ends, latest)


def record(ctx: Any, batch: Batch) -> None:
    """--per-iteration under the window policy: each recorded call's time (NaN: invalid)."""
    assert ctx.iter_times is not None
    k = len(batch.ends)
    calls = ctx.iter_done + np.arange(k)
    kept = calls % ctx.iter_stride == 0
    ctx.iter_times[calls[kept] // ctx.iter_stride] = np.where(batch.valid, batch.ends,
                                                              np.nan)[kept]
    ctx.iter_done += k


def clock_row(clock: Clock | None) -> tuple[float, ...] | None:
    """What the engine gathers of each rank's clock."""
    if clock is None:
        return None
    return (clock.alpha, clock.beta, clock.residual, clock.drift_error, clock.min_rtt,
            float(clock.parent), float(clock.fits), clock.uncertainty,
            clock.system_minus_wtime, clock.fitted_at)


def attrs(rows: Any, widths: np.ndarray, invalid: np.ndarray, resynced: list[int],
          latest: np.ndarray) -> dict[str, Any]:
    """The measurement's record of the policy: every rank's clock model and fit, each size's
    window width, invalid calls and mean time of its valid calls (each the latest end over
    the ranks less the common start; NaN where the kernel's passes give no one such time:
    IMB-NBC's), and before which sizes the clocks were fitted again."""
    table = np.array([r for r in rows if r is not None], dtype=np.float64).reshape(-1, 10)
    # the offset where it was fitted (alpha is the line's value at MPI_Wtime 0, far away)
    offset = table[:, 0] + (table[:, 1] - 1.0) * table[:, 9]
    return {
        "start_policy": "window",
        "clock": {"offset_s": offset.tolist(), "fitted_at_s": table[:, 9].tolist(),
                  "alpha_s": table[:, 0].tolist(), "beta": table[:, 1].tolist(),
                  "residual_s": table[:, 2].tolist(), "drift_error": table[:, 3].tolist(),
                  "min_rtt_s": table[:, 4].tolist(), "parent": table[:, 5].astype(int).tolist(),
                  "fits": int(table[:, 6].max()) if len(table) else 0,
                  "uncertainty_s": table[:, 7].tolist(),
                  "system_minus_wtime_s": table[:, 8].tolist(),
                  "method": f"hierarchical tree of ping-pongs (JK/HCA): {FIT_POINTS} fit "
                            f"points of {PINGPONGS} ping-pongs, {FIT_GAP_S * 1e3:g} ms apart, "
                            "shortest round trip each, least-squares line"},
        "window_s": [None if not np.isfinite(w) else float(w) for w in widths],
        "invalid": [int(v) for v in invalid],
        "window_time_s": [None if not np.isfinite(t) else float(t) for t in latest],
        "resynced_before_bytes": resynced,
    }
