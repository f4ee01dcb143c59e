"""What IMB-EXT and IMB-RMA share: windows on the benchmark's buffers, the compiled loops of
one-sided communication, and the ``--check`` of what puts, gets and accumulates left behind.

Windows follow IMB 2021.11 (``IMB_init_transfer``): for every message size, a window is
created with MPI_Win_create over the target's receive buffer (puts, accumulates) or send
buffer (gets), all ``-off_cache`` slots included, and freed when the size ends; creating and
freeing it is not timed. Its displacement unit is 1 byte, or the element size for reductions.
Being the benchmark's own buffer, it is counted by ``-mem`` once, with the buffers.

A loop returns NaN as its time on a rank that times nothing (an RMA target): IMB reports -1
there and leaves such ranks out of t_min, t_max and t_avg, which NaN does here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from beff.bench import check
from beff.bench.ctx import Ctx, Tally
from beff.bench.registry import AGGREGATE
from beff.core.buffers import BufferSet
from beff.core.capi import F32Array, HArray, helper, loop

C: Any = None  # the C bindings, substituted by the backend
N_BARR = 2

# The operation a loop issues (one compiled loop serves several benchmarks).
PUT, GET, ACC, GET_ACC, FETCH_OP, CAS = range(6)
# MPI_Win_flush or MPI_Win_flush_local after the operations.
REMOTE, LOCAL = 0, 1


@helper
def rma_op(op: int, s: int, r: int, count: int, dtype: int, target: int, disp: int,
           mpi_op: int, win: int) -> int:
    """Issue one operation: from origin ``s`` (results and gets into ``r``) to ``target`` at
    displacement ``disp``. Compare_and_swap: origin s + 8, compare s + 4, result s."""
    err = 0
    if op == PUT:
        err = C.Put(s, count, dtype, target, disp, count, dtype, win)
    elif op == GET:
        err = C.Get(r, count, dtype, target, disp, count, dtype, win)
    elif op == ACC:
        err = C.Accumulate(s, count, dtype, target, disp, count, dtype, mpi_op, win)
    elif op == GET_ACC:
        err = C.Get_accumulate(s, count, dtype, r, count, dtype, target, disp, count, dtype,
                               mpi_op, win)
    elif op == FETCH_OP:
        err = C.Fetch_and_op(s, r, dtype, target, disp, mpi_op, win)
    else:
        err = C.Compare_and_swap(s + 8, s + 4, s, dtype, target, disp, win)
    return int(err)


@loop
def fence_loop(n: int, op: int, agg: int, origin: int, nbarr: int, prefence: int,
               open_assert: int, close_assert: int, sb: int, sn: int, ss: int, rb: int,
               rn: int, rs: int, wn: int, ws: int, count: int, dtype: int, target: int,
               mpi_op: int, win: int, comm: int) -> tuple[float, int]:
    """Active target (IMB-EXT). Untimed: an opening MPI_Win_fence (``prefence``), then
    ``nbarr`` barriers. Timed, the whole loop: aggregate, n operations (on an ``origin``
    rank) closed by one fence; non-aggregate, each operation closed by its own fence. An
    ``open_assert`` >= 0 adds a fence with that assertion before the operations (or each)."""
    err = 0
    if prefence:
        err |= C.Win_fence(0, win)
    for _ in range(nbarr):
        err |= C.Barrier(comm)
    t0 = C.Wtime()
    for i in range(n):
        if open_assert >= 0 and (i == 0 or not agg):
            err |= C.Win_fence(open_assert, win)
        if origin:
            err |= C.rma_op(op, sb + (i % sn) * ss, rb + (i % rn) * rs, count, dtype, target,
                            (i % wn) * ws, mpi_op, win)
        if not agg:
            err |= C.Win_fence(close_assert, win)
    if agg:
        err |= C.Win_fence(close_assert, win)
    return C.Wtime() - t0, err


@loop
def window_loop(n: int, rb: int, nbytes: int, sb: int, dtype: int, me: int, info: int,
                comm: int, wins: HArray, waddr: int) -> tuple[float, int]:
    """n times: MPI_Win_create over X bytes of the receive buffer, MPI_Win_fence, one element
    put to this rank itself (X > 0), MPI_Win_fence, MPI_Win_free; the whole loop timed."""
    err = 0
    t0 = C.Wtime()
    for _ in range(n):
        err |= C.Win_create(rb, nbytes, 1, info, comm, waddr)
        w = wins[0]
        err |= C.Win_fence(0, w)
        if nbytes > 0:
            err |= C.Put(sb, 1, dtype, me, 0, 1, dtype, w)
        err |= C.Win_fence(0, w)
        err |= C.Win_free(waddr)
    return C.Wtime() - t0, err


@loop
def lock_loop(n: int, op: int, agg: int, local: int, origin: int, nbarr: int, sb: int,
              sn: int, ss: int, rb: int, rn: int, rs: int, wn: int, ws: int, count: int,
              dtype: int, target: int, mpi_op: int, lock: int, win: int,
              comm: int) -> tuple[float, int]:
    """Passive target, one target (IMB-RMA). Untimed: ``nbarr`` barriers, MPI_Win_lock of the
    target (shared). Timed on an ``origin`` rank, the whole loop: aggregate, n operations then
    one MPI_Win_flush (``local``: MPI_Win_flush_local); non-aggregate, a flush after each.
    Untimed: MPI_Win_unlock, then a barrier on every rank. NaN time where not ``origin``."""
    err = 0
    for _ in range(nbarr):
        err |= C.Barrier(comm)
    t = math.nan
    if origin:
        err |= C.Win_lock(lock, target, 0, win)
        t0 = C.Wtime()
        for i in range(n):
            err |= C.rma_op(op, sb + (i % sn) * ss, rb + (i % rn) * rs, count, dtype, target,
                            (i % wn) * ws, mpi_op, win)
            if not agg:
                err |= C.Win_flush_local(target, win) if local else C.Win_flush(target, win)
        if agg:
            err |= C.Win_flush_local(target, win) if local else C.Win_flush(target, win)
        t = C.Wtime() - t0
        err |= C.Win_unlock(target, win)
    err |= C.Barrier(comm)
    return t, err


@loop
def lock_all_loop(n: int, op: int, local: int, origin: int, nbarr: int, sb: int, sn: int,
                  ss: int, rb: int, rn: int, rs: int, wn: int, ws: int, count: int, dtype: int,
                  me: int, nprocs: int, win: int, comm: int) -> tuple[float, int]:
    """Passive target, every other rank (IMB-RMA's *_all). Untimed: ``nbarr`` barriers,
    MPI_Win_lock_all. Timed on an ``origin`` rank, the whole loop: n times one operation to
    each other rank (rank me + k mod NP for k = 1 .. NP-1, so origins start at different
    targets), then one MPI_Win_flush_all (``local``: MPI_Win_flush_local_all). Untimed:
    MPI_Win_unlock_all, then a barrier on every rank."""
    err = 0
    for _ in range(nbarr):
        err |= C.Barrier(comm)
    t = math.nan
    if origin:
        err |= C.Win_lock_all(0, win)
        t0 = C.Wtime()
        for i in range(n):
            for peer in range(nprocs):
                target = (peer + me) % nprocs
                if target != me:
                    err |= C.rma_op(op, sb + (i % sn) * ss, rb + (i % rn) * rs, count, dtype,
                                    target, (i % wn) * ws, 0, win)
        err |= C.Win_flush_local_all(win) if local else C.Win_flush_all(win)
        t = C.Wtime() - t0
        err |= C.Win_unlock_all(win)
    err |= C.Barrier(comm)
    return t, err


@loop
def exchange_loop(n: int, op: int, nbarr: int, sb: int, sn: int, ss: int, rb: int, rn: int,
                  rs: int, wn: int, ws: int, count: int, dtype: int, left: int, right: int,
                  nbytes: int, lock: int, win: int, comm: int) -> tuple[float, int]:
    """Passive target, both neighbours (IMB-RMA's Exchange_*). Untimed: ``nbarr`` barriers,
    MPI_Win_lock of the left and the right rank. Timed, the whole loop: n times two
    operations (put: send bytes [0, X) to the left, [X, 2X) to the right; get: receive [0, X)
    from the right, [X, 2X) from the left, at the same offsets of its window), then
    MPI_Win_flush of each neighbour. Untimed: the unlocks, then a barrier."""
    err = 0
    for _ in range(nbarr):
        err |= C.Barrier(comm)
    err |= C.Win_lock(lock, left, 0, win)
    if right != left:
        err |= C.Win_lock(lock, right, 0, win)
    t0 = C.Wtime()
    for i in range(n):
        s = sb + (i % sn) * ss
        r = rb + (i % rn) * rs
        d = (i % wn) * ws
        if op == PUT:
            err |= C.Put(s, count, dtype, left, d, count, dtype, win)
            err |= C.Put(s + nbytes, count, dtype, right, d + nbytes, count, dtype, win)
        else:
            err |= C.Get(r, count, dtype, right, d, count, dtype, win)
            err |= C.Get(r + nbytes, count, dtype, left, d + nbytes, count, dtype, win)
        err |= C.Win_flush(left, win)
        if right != left:
            err |= C.Win_flush(right, win)
    t = C.Wtime() - t0
    err |= C.Win_unlock(left, win)
    if right != left:
        err |= C.Win_unlock(right, win)
    err |= C.Barrier(comm)
    return t, err


@loop
def passive_origin_loop(n: int, sb: int, sn: int, ss: int, wn: int, ws: int, count: int,
                        dtype: int, target: int, win: int, comm: int) -> tuple[float, int]:
    """Truly_passive_put's origin: n times MPI_Put, MPI_Win_flush, MPI_Barrier; the whole
    loop timed."""
    err = 0
    t0 = C.Wtime()
    for i in range(n):
        err |= C.Put(sb + (i % sn) * ss, count, dtype, target, (i % wn) * ws, count, dtype, win)
        err |= C.Win_flush(target, win)
        err |= C.Barrier(comm)
    return C.Wtime() - t0, err


@loop
def passive_target_loop(n: int, units: int, work: F32Array, comm: int) -> tuple[float, int]:
    """Truly_passive_put's target: n times the CPU kernel (``units`` > 0) then MPI_Barrier;
    the target makes no MPI call while it computes."""
    err = 0
    t0 = C.Wtime()
    for _ in range(n):
        if units > 0:
            C.cpu_exploit(units, work)
        err |= C.Barrier(comm)
    return C.Wtime() - t0, err


Slots = tuple[int, int, int, int, int, int, int, int]


def slots(send: BufferSet, recv: BufferSet, window: BufferSet, unit: int = 1) -> Slots:
    """Loop arguments for off-cache slot i mod count: the origin's send and receive slots, and
    the target window's (count, stride in displacement units of ``unit`` bytes)."""
    return (*send.slots, *recv.slots, window.count, window.stride // unit)


def window(ctx: Ctx, bufs: BufferSet, unit: int = 1, fence: bool = False) -> Any:
    """MPI_Win_create over every slot of ``bufs`` (displacement unit ``unit`` bytes) on the
    group; errors return (a failed call ends the job with a message, no rank waits). Freed
    when the size ends. ``fence``: open the first epoch, as IMB-EXT does after creating it."""
    MPI = ctx.MPI
    win = MPI.Win.Create(bufs.base, unit, MPI.INFO_NULL, ctx.comm)
    ctx.hold_collective(win.Free)  # before the buffers go (Ctx.buffers keeps them till then)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    if fence:
        win.Fence(0)
    return win


@dataclass
class Exposed:
    """A kernel's buffers and the window over its target side."""

    send: BufferSet
    recv: BufferSet
    target: BufferSet  # the send buffer for gets, the receive buffer otherwise
    win: Any
    unit: int  # displacement unit in bytes

    @property
    def slots(self) -> Slots:
        return slots(self.send, self.recv, self.target, self.unit)


def exposed(ctx: Ctx, nbytes: int, op: int, reduction: bool = False, fence: bool = False,
            blocks: int = 1) -> Exposed:
    """Send and receive buffers of ``blocks`` * X bytes, the send one holding the rank's check
    pattern (small floats for reductions), and the window over the side ``op`` targets."""
    unit = 4 if reduction else 1
    sb, rb = ctx.buffers(blocks * nbytes), ctx.buffers(blocks * nbytes)
    if reduction:
        check.fill_reduction(ctx, sb, np.dtype(np.float32))
    else:
        check.fill_send(ctx, sb)
    target = sb if op == GET else rb
    return Exposed(sb, rb, target, window(ctx, target, unit, fence), unit)


# ----------------------------------------------------------------------------- --check
def expect_moved(ctx: Ctx, got: np.ndarray, sender: int, nbytes: int, at: int = 0,
                 total: int | None = None) -> None:
    """``got`` (X bytes) must be bytes [at, at + X) of ``sender``'s pattern of ``total``."""
    if ctx.cfg.check and nbytes:
        want = check.pattern(sender, total or nbytes)[at : at + nbytes]
        check.expect_bytes(ctx, got[:nbytes], want)


def _sum_of(senders: list[int], cnt: int) -> np.ndarray:
    f32 = np.dtype(np.float32)
    return sum((check.red_pattern(p, cnt, f32).astype(np.float64) for p in senders),
               np.zeros(cnt))


def expect_accumulated(ctx: Ctx, bufs: BufferSet, senders: list[int], tally: Tally) -> None:
    """Every slot of the target window ``bufs`` must hold the float sum of the senders'
    patterns times the operations that landed on it (calibration and warm-up included)."""
    cnt = bufs.nbytes // 4
    if not ctx.cfg.check or not cnt:
        return
    one = _sum_of(senders, cnt)
    for j in range(bufs.count):
        check.expect_elements(ctx, bufs[j], (one * tally.uses(j, bufs.count)).astype(np.float32))


def expect_fetched(ctx: Ctx, bufs: BufferSet, senders: list[int], tally: Tally) -> None:
    """The result slot of the last fetching accumulate must hold the target's value before
    it: one operation less than the target ends with."""
    cnt = bufs.nbytes // 4
    if not ctx.cfg.check or not cnt:
        return
    uses = tally.uses(tally.last % bufs.count, bufs.count)
    check.expect_elements(ctx, bufs[tally.last],
                          (_sum_of(senders, cnt) * (uses - 1)).astype(np.float32))


def aggregate(ctx: Ctx) -> int:
    return int(ctx.mode == AGGREGATE)
