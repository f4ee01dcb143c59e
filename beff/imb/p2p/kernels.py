"""IMB-P2P's eight benchmarks: one kernel and one compiled timed loop each.

Every rank of MPI_COMM_WORLD (a duplicate of it) takes part, with IMB-P2P's partners
(:mod:`.partners`). Each loop makes IMB-P2P's C calls, tag 0, MPI_BYTE, with MPI_Wtime read
before and after the whole loop; inside it, as in IMB-P2P, ``-msgwr`` writes one byte per
64-byte cache line of a message before it is sent and ``-msgrd`` reads one byte per cache
line of a message received (the bytes read are summed, and the sum kept, so the reads
stay). The random benchmarks draw their partners inside the loop, as IMB-P2P does, with
the same generator (compiled helpers from :mod:`.partners`), starting from ``-seed`` at
every call (IMB-P2P restarts from 0 for the warm-up and again for the timed loop).

The job (:mod:`.job`) runs ``run(w)`` (warm-up), then ``run(n)`` (timed), with IMB-P2P's
pauses and barriers around them; a kernel never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from beff.bench import check
from beff.bench.ctx import Ctx
from beff.bench.registry import Kind, Runner, benchmark
from beff.core import capi
from beff.core.buffers import aligned
from beff.core.capi import F64Array, I64Array, U8Array, helper, loop, per_iteration_of
from beff.imb.p2p import partners

SUITE = "p2p"
TAG = 0
BARRIER_TAG = 1000
LINE = 64  # IMB-P2P touches one byte per cache line of this length
C: Any = None  # the C bindings, substituted by the backend

# The partner choice runs inside the timed loops: the pure functions, compiled as helpers.
for _func in partners.HELPERS:
    helper(_func)


@helper
def touch_write(buf: U8Array, offset: int, nbytes: int, dummy: int) -> int:
    """-msgwr: write one byte per cache line of ``buf[offset : offset + nbytes]``."""
    for k in range(0, nbytes, LINE):
        buf[offset + k] = dummy & 255
        dummy += 1
    return dummy


@helper
def touch_read(buf: U8Array, offset: int, nbytes: int, dummy: int) -> int:
    """-msgrd: add one byte per cache line of ``buf[offset : offset + nbytes]`` to dummy."""
    for k in range(0, nbytes, LINE):
        dummy += buf[offset + k]
    return dummy


@loop
def barrier_loop(n: int, rank: int, size: int, buf: int, dtype: int, comm: int,
                 status: int) -> tuple[float, int]:
    """IMB-P2P's barrier: rounds of zero-byte MPI_Sendrecv to rank + 2^k from rank - 2^k."""
    err = 0
    for _ in range(n):
        mask = 1
        while mask < size:
            err |= C.Sendrecv(buf, 0, dtype, (rank + mask) % size, BARRIER_TAG, buf, 0, dtype,
                              (rank - mask + size) % size, BARRIER_TAG, comm, status)
            mask <<= 1
    return 0.0, err


@loop
def pingpong_loop(n: int, first: int, sbuf: U8Array, rbuf: U8Array, sb: int, rb: int,
                  count: int, dtype: int, partner: int, comm: int, status: int, nbytes: int,
                  wr: int, rd: int, out: I64Array) -> tuple[float, int]:
    """The lower half: (touch, MPI_Send, MPI_Recv, touch); the upper half: (MPI_Recv, touch,
    touch, MPI_Send); the whole loop timed."""
    err = 0
    dummy = out[0]
    t0 = C.Wtime()
    for _ in range(n):
        if first:
            if wr:
                dummy = C.touch_write(sbuf, 0, nbytes, dummy)
            err |= C.Send(sb, count, dtype, partner, TAG, comm)
            err |= C.Recv(rb, count, dtype, partner, TAG, comm, status)
            if rd:
                dummy = C.touch_read(rbuf, 0, nbytes, dummy)
        else:
            err |= C.Recv(rb, count, dtype, partner, TAG, comm, status)
            if rd:
                dummy = C.touch_read(rbuf, 0, nbytes, dummy)
            if wr:
                dummy = C.touch_write(sbuf, 0, nbytes, dummy)
            err |= C.Send(sb, count, dtype, partner, TAG, comm)
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = partner
    out[2] = 2 * n
    return elapsed, err


@loop
def pingping_loop(n: int, sbuf: U8Array, rbuf: U8Array, sb: int, rb: int, count: int,
                  dtype: int, partner: int, comm: int, status: int, request: int,
                  nbytes: int, wr: int, rd: int, out: I64Array) -> tuple[float, int]:
    """MPI_Irecv, touch, MPI_Send, MPI_Wait, touch; the whole loop timed."""
    err = 0
    dummy = out[0]
    t0 = C.Wtime()
    for _ in range(n):
        err |= C.Irecv(rb, count, dtype, partner, TAG, comm, request)
        if wr:
            dummy = C.touch_write(sbuf, 0, nbytes, dummy)
        err |= C.Send(sb, count, dtype, partner, TAG, comm)
        err |= C.Wait(request, status)
        if rd:
            dummy = C.touch_read(rbuf, 0, nbytes, dummy)
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = partner
    out[2] = 2 * n
    return elapsed, err


@loop
def random_loop(n: int, both: int, fresh: int, seed: int, rank: int, nranks: int,
                sbuf: U8Array,
                rbuf: U8Array, sb: int, rb: int, count: int, dtype: int, comm: int,
                status: int, request: int, nbytes: int, wr: int, rd: int,
                out: I64Array) -> tuple[float, int]:
    """n * P steps, each drawing a pair (rank0, rank1). Unirandom (both = 0): rank0 touches
    and MPI_Sends to rank1, which MPI_Recvs and touches. Birandom (both = 1): each of the
    two MPI_Irecvs from the other, touches, MPI_Sends, MPI_Waits, touches. Ranks outside
    the pair only draw. The whole loop, draws included, timed. ``fresh``: the stream starts
    at ``seed``; else it goes on from where the last call left it (``out[3]``)."""
    err = 0
    dummy = out[0]
    last = -1
    messages = 0
    state = seed if fresh else out[3]
    t0 = C.Wtime()
    for _ in range(n * nranks):
        state, rank0, rank1 = C.random_pair(state, nranks)
        if rank != rank0 and rank != rank1:
            continue
        other = rank1 if rank == rank0 else rank0
        if both:
            err |= C.Irecv(rb, count, dtype, other, TAG, comm, request)
            if wr:
                dummy = C.touch_write(sbuf, 0, nbytes, dummy)
            err |= C.Send(sb, count, dtype, other, TAG, comm)
            err |= C.Wait(request, status)
            if rd:
                dummy = C.touch_read(rbuf, 0, nbytes, dummy)
            last = other
            messages += 2
        elif rank == rank0:
            if wr:
                dummy = C.touch_write(sbuf, 0, nbytes, dummy)
            err |= C.Send(sb, count, dtype, other, TAG, comm)
            messages += 1
        else:
            err |= C.Recv(rb, count, dtype, other, TAG, comm, status)
            if rd:
                dummy = C.touch_read(rbuf, 0, nbytes, dummy)
            last = other
            messages += 1
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = last
    out[2] = messages
    out[3] = state
    return elapsed, err


@loop
def corandom_loop(n: int, fresh: int, seed: int, rank: int, ring: I64Array, sbuf: U8Array,
                  rbuf: U8Array, sb: int, rb: int, count: int, dtype: int, comm: int,
                  status: int, request: int, nbytes: int, wr: int, rd: int,
                  out: I64Array) -> tuple[float, int]:
    """Each step shuffles the ring; MPI_Irecv from the left neighbour, touch, MPI_Send to
    the right one, MPI_Wait, touch. The whole loop, shuffles included, timed. ``fresh``: the
    ring starts in order and the stream at ``seed``; else both go on from the last call's."""
    err = 0
    dummy = out[0]
    left = -1
    state = out[3]
    if fresh:
        for i in range(ring.shape[0]):
            ring[i] = i
        state = seed
    t0 = C.Wtime()
    for _ in range(n):
        state = C.shuffle_ring(state, ring)
        left, right = C.ring_neighbours(ring, rank)
        err |= C.Irecv(rb, count, dtype, left, TAG, comm, request)
        if wr:
            dummy = C.touch_write(sbuf, 0, nbytes, dummy)
        err |= C.Send(sb, count, dtype, right, TAG, comm)
        err |= C.Wait(request, status)
        if rd:
            dummy = C.touch_read(rbuf, 0, nbytes, dummy)
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = left
    out[2] = 2 * n
    out[3] = state
    return elapsed, err


@loop
def stencil_loop(n: int, neighbours: I64Array, sbuf: U8Array, rbuf: U8Array, sb: int,
                 rb: int, stride: int, count: int, dtype: int, comm: int, statuses: int,
                 requests: int, hsize: int, nbytes: int, wr: int, rd: int,
                 out: I64Array) -> tuple[float, int]:
    """Touch the k send buffers, MPI_Irecv from each of the k neighbours, MPI_Isend to each,
    MPI_Waitall the 2k requests, touch the k receive buffers; the whole loop timed."""
    err = 0
    dummy = out[0]
    k = neighbours.shape[0]
    t0 = C.Wtime()
    for _ in range(n):
        if wr:
            for i in range(k):
                dummy = C.touch_write(sbuf, i * stride, nbytes, dummy)
        for i in range(k):
            err |= C.Irecv(rb + i * stride, count, dtype, neighbours[i], TAG, comm,
                           requests + i * hsize)
        for i in range(k):
            err |= C.Isend(sb + i * stride, count, dtype, neighbours[i], TAG, comm,
                           requests + (k + i) * hsize)
        err |= C.Waitall(2 * k, requests, statuses)
        if rd:
            for i in range(k):
                dummy = C.touch_read(rbuf, i * stride, nbytes, dummy)
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[2] = 2 * k * n
    return elapsed, err


@loop
def sendrecv_replace_loop(n: int, buf: U8Array, b: int, count: int, dtype: int, dst: int,
                          src: int, comm: int, status: int, nbytes: int, wr: int, rd: int,
                          out: I64Array) -> tuple[float, int]:
    """Touch, MPI_Sendrecv_replace to rank + 1 from rank - 1; one read touch after the loop;
    the whole, that touch included, timed."""
    err = 0
    dummy = out[0]
    t0 = C.Wtime()
    for _ in range(n):
        if wr:
            dummy = C.touch_write(buf, 0, nbytes, dummy)
        err |= C.Sendrecv_replace(b, count, dtype, dst, TAG, src, TAG, comm, status)
    if rd:
        dummy = C.touch_read(buf, 0, nbytes, dummy)
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = src
    out[2] = 2 * n
    return elapsed, err


# --per-iteration twins: the same calls, and each iteration's time from one more MPI_Wtime
# after it (beff.bench.iterations), iteration start + i written to times[(start + i) //
# stride] when stride divides it; the loops above stay as they are for every other run.
@per_iteration_of(pingpong_loop)
def pingpong_iter_loop(n: int, first: int, sbuf: U8Array, rbuf: U8Array, sb: int, rb: int,
                       count: int, dtype: int, partner: int, comm: int, status: int,
                       nbytes: int, wr: int, rd: int, out: I64Array, times: F64Array,
                       stride: int, start: int) -> tuple[float, int]:
    """pingpong_loop, each round trip's time recorded (every stride-th)."""
    err = 0
    dummy = out[0]
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        if first:
            if wr:
                dummy = C.touch_write(sbuf, 0, nbytes, dummy)
            err |= C.Send(sb, count, dtype, partner, TAG, comm)
            err |= C.Recv(rb, count, dtype, partner, TAG, comm, status)
            if rd:
                dummy = C.touch_read(rbuf, 0, nbytes, dummy)
        else:
            err |= C.Recv(rb, count, dtype, partner, TAG, comm, status)
            if rd:
                dummy = C.touch_read(rbuf, 0, nbytes, dummy)
            if wr:
                dummy = C.touch_write(sbuf, 0, nbytes, dummy)
            err |= C.Send(sb, count, dtype, partner, TAG, comm)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = partner
    out[2] = 2 * n
    return elapsed, err


@per_iteration_of(pingping_loop)
def pingping_iter_loop(n: int, sbuf: U8Array, rbuf: U8Array, sb: int, rb: int, count: int,
                       dtype: int, partner: int, comm: int, status: int, request: int,
                       nbytes: int, wr: int, rd: int, out: I64Array, times: F64Array,
                       stride: int, start: int) -> tuple[float, int]:
    """pingping_loop, each exchange's time recorded (every stride-th)."""
    err = 0
    dummy = out[0]
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        err |= C.Irecv(rb, count, dtype, partner, TAG, comm, request)
        if wr:
            dummy = C.touch_write(sbuf, 0, nbytes, dummy)
        err |= C.Send(sb, count, dtype, partner, TAG, comm)
        err |= C.Wait(request, status)
        if rd:
            dummy = C.touch_read(rbuf, 0, nbytes, dummy)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = partner
    out[2] = 2 * n
    return elapsed, err


@per_iteration_of(random_loop)
def random_iter_loop(n: int, both: int, fresh: int, seed: int, rank: int, nranks: int,
                     sbuf: U8Array, rbuf: U8Array, sb: int, rb: int, count: int, dtype: int,
                     comm: int, status: int, request: int, nbytes: int, wr: int, rd: int,
                     out: I64Array, times: F64Array, stride: int,
                     start: int) -> tuple[float, int]:
    """random_loop, the time of each iteration (its P draws, IMB-P2P's one iteration)
    recorded (every stride-th)."""
    err = 0
    dummy = out[0]
    last = -1
    messages = 0
    state = seed if fresh else out[3]
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        for _ in range(nranks):
            state, rank0, rank1 = C.random_pair(state, nranks)
            if rank != rank0 and rank != rank1:
                continue
            other = rank1 if rank == rank0 else rank0
            if both:
                err |= C.Irecv(rb, count, dtype, other, TAG, comm, request)
                if wr:
                    dummy = C.touch_write(sbuf, 0, nbytes, dummy)
                err |= C.Send(sb, count, dtype, other, TAG, comm)
                err |= C.Wait(request, status)
                if rd:
                    dummy = C.touch_read(rbuf, 0, nbytes, dummy)
                last = other
                messages += 2
            elif rank == rank0:
                if wr:
                    dummy = C.touch_write(sbuf, 0, nbytes, dummy)
                err |= C.Send(sb, count, dtype, other, TAG, comm)
                messages += 1
            else:
                err |= C.Recv(rb, count, dtype, other, TAG, comm, status)
                if rd:
                    dummy = C.touch_read(rbuf, 0, nbytes, dummy)
                last = other
                messages += 1
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = last
    out[2] = messages
    out[3] = state
    return elapsed, err


@per_iteration_of(corandom_loop)
def corandom_iter_loop(n: int, fresh: int, seed: int, rank: int, ring: I64Array,
                       sbuf: U8Array, rbuf: U8Array, sb: int, rb: int, count: int, dtype: int,
                       comm: int, status: int, request: int, nbytes: int, wr: int, rd: int,
                       out: I64Array, times: F64Array, stride: int,
                       start: int) -> tuple[float, int]:
    """corandom_loop, each step's time (its shuffle included) recorded (every stride-th)."""
    err = 0
    dummy = out[0]
    left = -1
    state = out[3]
    if fresh:
        for j in range(ring.shape[0]):
            ring[j] = j
        state = seed
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        state = C.shuffle_ring(state, ring)
        left, right = C.ring_neighbours(ring, rank)
        err |= C.Irecv(rb, count, dtype, left, TAG, comm, request)
        if wr:
            dummy = C.touch_write(sbuf, 0, nbytes, dummy)
        err |= C.Send(sb, count, dtype, right, TAG, comm)
        err |= C.Wait(request, status)
        if rd:
            dummy = C.touch_read(rbuf, 0, nbytes, dummy)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = left
    out[2] = 2 * n
    out[3] = state
    return elapsed, err


@per_iteration_of(stencil_loop)
def stencil_iter_loop(n: int, neighbours: I64Array, sbuf: U8Array, rbuf: U8Array, sb: int,
                      rb: int, stride_: int, count: int, dtype: int, comm: int, statuses: int,
                      requests: int, hsize: int, nbytes: int, wr: int, rd: int, out: I64Array,
                      times: F64Array, stride: int, start: int) -> tuple[float, int]:
    """stencil_loop, each halo exchange's time recorded (every stride-th; ``stride_`` is
    the message regions' distance)."""
    err = 0
    dummy = out[0]
    k = neighbours.shape[0]
    t0 = C.Wtime()
    tp = t0
    for it in range(n):
        if wr:
            for i in range(k):
                dummy = C.touch_write(sbuf, i * stride_, nbytes, dummy)
        for i in range(k):
            err |= C.Irecv(rb + i * stride_, count, dtype, neighbours[i], TAG, comm,
                           requests + i * hsize)
        for i in range(k):
            err |= C.Isend(sb + i * stride_, count, dtype, neighbours[i], TAG, comm,
                           requests + (k + i) * hsize)
        err |= C.Waitall(2 * k, requests, statuses)
        if rd:
            for i in range(k):
                dummy = C.touch_read(rbuf, i * stride_, nbytes, dummy)
        t = C.Wtime()
        if (start + it) % stride == 0:
            times[(start + it) // stride] = t - tp
        tp = t
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[2] = 2 * k * n
    return elapsed, err


@per_iteration_of(sendrecv_replace_loop)
def sendrecv_replace_iter_loop(n: int, buf: U8Array, b: int, count: int, dtype: int, dst: int,
                               src: int, comm: int, status: int, nbytes: int, wr: int, rd: int,
                               out: I64Array, times: F64Array, stride: int,
                               start: int) -> tuple[float, int]:
    """sendrecv_replace_loop, each call's time recorded (every stride-th; the read touch
    after the loop is in the total only)."""
    err = 0
    dummy = out[0]
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        if wr:
            dummy = C.touch_write(buf, 0, nbytes, dummy)
        err |= C.Sendrecv_replace(b, count, dtype, dst, TAG, src, TAG, comm, status)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    if rd:
        dummy = C.touch_read(buf, 0, nbytes, dummy)
    elapsed = C.Wtime() - t0
    out[0] = dummy
    out[1] = src
    out[2] = 2 * n
    return elapsed, err


# ----------------------------------------------------------------------------- kernels
def touches(ctx: Ctx) -> tuple[int, int]:
    """(write, read) touches: -msgwr (off under --check: it would change the data checked)
    and -msgrd."""
    options = ctx.cfg.options
    return int(bool(options.get("msgwr", True)) and not ctx.cfg.check), \
        int(bool(options.get("msgrd", True)))


def message_buffer(ctx: Ctx, nbytes: int, regions: int = 1, stride: int = 0) -> np.ndarray:
    """A buffer of ``regions`` messages of ``nbytes``, ``stride`` bytes apart (at least one
    byte), filled as IMB-P2P's (the rank's number), or under --check with the rank's
    pattern at the start of each region (rank 0 corrupts each message's last byte under the
    test hook :func:`beff.core.testhooks.corrupt`)."""
    stride = stride or nbytes
    buf = aligned(max(regions * stride, 1), ctx.rank & 255)
    if ctx.cfg.check and nbytes:
        data = check.pattern(ctx.rank, nbytes)
        if check.corrupting(ctx):
            data[-1] ^= 0xFF
        for i in range(regions):
            buf[i * stride : i * stride + nbytes] = data
    ctx.keep(buf)
    return buf


def expect_from(ctx: Ctx, got: np.ndarray, sender: int, nbytes: int) -> None:
    """Under --check: count the bytes of ``got`` that differ from ``sender``'s pattern."""
    if ctx.cfg.check and nbytes and sender >= 0:
        check.expect_bytes(ctx, got[:nbytes], check.pattern(sender, nbytes))


def outputs() -> np.ndarray:
    """What a loop leaves for the next call and for Python: out[0] the touches' running
    value, out[1] the last partner, out[2] the call's messages, out[3] a random stream's
    state."""
    return np.zeros(4, dtype=np.int64)


def timed(ctx: Ctx, lf: Any, out: np.ndarray, *args: Any, fresh: int | None = None,
          last: int | None = None) -> Callable[[int], float]:
    """``run(n)`` of an IMB-P2P loop whose last argument is ``out``: the messages of a size's
    timed batches (ctx.batch 0, 1, ...) are summed and stored as ``messages``; the batches
    are one timed run, cut. A loop with a random stream takes its ``fresh`` flag at argument
    ``fresh``: set for warm-up and the first batch (IMB-P2P starts the timed loop's stream
    at the seed), clear for the later batches, which continue it. The argument at ``last``
    keeps its value for warm-up and the last batch only, 0 for the others (what IMB-P2P
    does once after its timed loop). Under ``--per-iteration`` the timed batches call the
    loop's twin, which records single iterations (:mod:`beff.bench.iterations`)."""
    total = [0]

    def run(n: int) -> float:
        call = list(args)
        if fresh is not None:
            call[fresh] = int(ctx.batch <= 0)
        if last is not None and 0 <= ctx.batch < ctx.batches - 1:
            call[last] = 0
        if ctx.batch < 0:
            ctx.ready_twins(lf)  # an untimed call: no timed one waits for a compile
        if ctx.iter_times is not None and ctx.batch >= 0 and lf.per_iteration is not None:
            seconds, *_ = ctx.call(lf.per_iteration, n, *call, out, ctx.iter_times,
                                   ctx.iter_stride, ctx.iter_done)
            ctx.iter_done += n
        else:
            seconds, *_ = ctx.call(lf, n, *call, out)
        if ctx.batch >= 0:
            total[0] = (total[0] if ctx.batch else 0) + int(out[2])
            ctx.prepare("messages", float(total[0]))
        return seconds

    return run


def address(buf: np.ndarray) -> int:
    return int(buf.ctypes.data)


def _pair(ctx: Ctx, nbytes: int, ping_pong: bool) -> Iterator[Runner]:
    partner = partners.pair_partner(ctx.rank, ctx.size)
    sbuf, rbuf = message_buffer(ctx, nbytes), message_buffer(ctx, nbytes)
    status, request = ctx.scratch(1, 1)
    out = outputs()
    wr, rd = touches(ctx)
    count, dtype = ctx.message(nbytes)
    comm = ctx.handle(ctx.comm)
    if ping_pong:
        first = int(ctx.rank < ctx.size // 2)
        yield timed(ctx, pingpong_loop, out, first, sbuf, rbuf, address(sbuf), address(rbuf),
                    count, dtype, partner, comm, status, nbytes, wr, rd)
    else:
        yield timed(ctx, pingping_loop, out, sbuf, rbuf, address(sbuf), address(rbuf), count,
                    dtype, partner, comm, status, request, nbytes, wr, rd)
    expect_from(ctx, rbuf, partner, nbytes)


# IMB-P2P's table columns (the t[usec] column, p2p_t, is declared in .view)
COLUMNS = ("bytes", "repetitions", "p2p_t", "mbytes_per_sec", "msg_per_sec")
COMMON: dict[str, Any] = {"suite": SUITE, "kind": Kind.MSG_RATE, "columns": COLUMNS}


@benchmark("PingPong", time_scale=0.5, bw_scale=0.5,
           bytes_counted="X per message; n P messages per size (each rank sends n)",
           **COMMON)
@contextmanager
def pingpong(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Every rank r of the lower half pairs with r + P/2 (P even): it sends X bytes
    (MPI_Send), and its partner sends them back (MPI_Recv, then MPI_Send), n times.

    Timed: the whole loop on each rank. t = sum over ranks of the loop times / (2 n P): half
    a round trip, averaged over the ranks. Mbytes/sec = n P X / max loop time / 10^6;
    Msg/sec = n P / max loop time.
    """
    yield from _pair(ctx, nbytes, ping_pong=True)


@benchmark("PingPing", bytes_counted="X per message; n P messages per size", **COMMON)
@contextmanager
def pingping(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Every rank pairs with r + P/2 mod P (P even); both MPI_Irecv from each other, MPI_Send
    X bytes, then MPI_Wait, n times.

    Timed: the whole loop. t = sum of the loop times / (n P), averaged over the ranks.
    Mbytes/sec = n P X / max loop time / 10^6; Msg/sec = n P / max loop time.
    """
    yield from _pair(ctx, nbytes, ping_pong=False)


def _random(ctx: Ctx, nbytes: int, both: bool) -> Iterator[Runner]:
    sbuf, rbuf = message_buffer(ctx, nbytes), message_buffer(ctx, nbytes)
    status, request = ctx.scratch(1, 1)
    out = outputs()
    wr, rd = touches(ctx)
    seed = int(ctx.cfg.options.get("seed", partners.DEFAULT_SEED)) & partners.STATE_MASK
    yield timed(ctx, random_loop, out, int(both), 1, seed, ctx.rank, ctx.size, sbuf, rbuf,
                address(sbuf), address(rbuf), *ctx.message(nbytes), ctx.handle(ctx.comm),
                status, request, nbytes, wr, rd, fresh=1)
    expect_from(ctx, rbuf, int(out[1]), nbytes)


@benchmark("Unirandom", bytes_counted="X per message; n P messages per size", **COMMON)
@contextmanager
def unirandom(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """n P steps; each draws a random pair of different ranks (the same on every rank, from
    -seed): the first sends X bytes to the second (MPI_Send, MPI_Recv).

    Timed: the whole loop, draws included. M = n P messages. t = sum of the loop times / M;
    Mbytes/sec = M X / max loop time / 10^6; Msg/sec = M / max loop time.
    """
    yield from _random(ctx, nbytes, both=False)


@benchmark("Birandom", time_scale=0.5, bytes_counted="X per message; 2 n P messages per size",
           **COMMON)
@contextmanager
def birandom(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """n P steps; each draws a random pair of different ranks, which exchange X bytes
    (MPI_Irecv, MPI_Send, MPI_Wait on both).

    Timed: the whole loop, draws included. M = 2 n P messages. t = sum of the loop times / M;
    Mbytes/sec = M X / max loop time / 10^6; Msg/sec = M / max loop time.
    """
    yield from _random(ctx, nbytes, both=True)


@benchmark("Corandom", bytes_counted="X per message; n P messages per size", **COMMON)
@contextmanager
def corandom(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """n steps; each shuffles a ring of all ranks (the same on every rank, from -seed), and
    every rank receives X bytes from its left and sends X bytes to its right neighbour
    (MPI_Irecv, MPI_Send, MPI_Wait).

    Timed: the whole loop, shuffles included. M = n P messages. t = sum of the loop times /
    M; Mbytes/sec = M X / max loop time / 10^6; Msg/sec = M / max loop time.
    """
    sbuf, rbuf = message_buffer(ctx, nbytes), message_buffer(ctx, nbytes)
    status, request = ctx.scratch(1, 1)
    out = outputs()
    ring = np.arange(ctx.size, dtype=np.int64)
    ctx.keep(ring)
    wr, rd = touches(ctx)
    seed = int(ctx.cfg.options.get("seed", partners.DEFAULT_SEED)) & partners.STATE_MASK
    yield timed(ctx, corandom_loop, out, 1, seed, ctx.rank, ring, sbuf, rbuf, address(sbuf),
                address(rbuf), *ctx.message(nbytes), ctx.handle(ctx.comm), status, request,
                nbytes, wr, rd, fresh=0)
    expect_from(ctx, rbuf, int(out[1]), nbytes)


def _stencil(ctx: Ctx, nbytes: int, neighbours: list[int]) -> Iterator[Runner]:
    k = len(neighbours)
    stride = max(LINE, -(-nbytes // LINE) * LINE)  # each neighbour's buffer on its own lines
    sbuf = message_buffer(ctx, nbytes, k, stride)
    rbuf = message_buffer(ctx, nbytes, k, stride)
    nbrs = np.asarray(neighbours, dtype=np.int64)
    ctx.keep(nbrs)
    statuses, requests = ctx.scratch(2 * k, 2 * k)
    out = outputs()
    wr, rd = touches(ctx)
    yield timed(ctx, stencil_loop, out, nbrs, sbuf, rbuf, address(sbuf), address(rbuf),
                stride, *ctx.message(nbytes), ctx.handle(ctx.comm), statuses, requests,
                capi.handle_size(), nbytes, wr, rd)
    for i, sender in enumerate(neighbours):
        expect_from(ctx, rbuf[i * stride :], sender, nbytes)


@benchmark("Stencil2D", time_scale=0.25, bw_scale=1.0, sendbuf=4.0, recvbuf=4.0,
           bytes_counted="X per message; 4 n P messages per size", **COMMON)
@contextmanager
def stencil2d(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """The ranks form IMB-P2P's periodic ly x lx grid (both sides at least 2); each
    exchanges X bytes with its 4 neighbours: 4 MPI_Irecv, 4 MPI_Isend, MPI_Waitall.

    Timed: the whole loop. M = 4 n P messages. t = sum of the loop times / M;
    Mbytes/sec = M X / max loop time / 10^6; Msg/sec = M / max loop time.
    """
    dims = partners.dims2d(ctx.size)
    assert dims is not None  # the job runs it only where IMB-P2P does
    yield from _stencil(ctx, nbytes, partners.stencil2d_neighbours(ctx.rank, dims))


@benchmark("Stencil3D", time_scale=1 / 6, bw_scale=1.0, sendbuf=6.0, recvbuf=6.0,
           bytes_counted="X per message; 6 n P messages per size", **COMMON)
@contextmanager
def stencil3d(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """The ranks form IMB-P2P's periodic lz x ly x lx grid (every side at least 2); each
    exchanges X bytes with its 6 neighbours: 6 MPI_Irecv, 6 MPI_Isend, MPI_Waitall.

    Timed: the whole loop. M = 6 n P messages. t = sum of the loop times / M;
    Mbytes/sec = M X / max loop time / 10^6; Msg/sec = M / max loop time.
    """
    dims = partners.dims3d(ctx.size)
    assert dims is not None
    yield from _stencil(ctx, nbytes, partners.stencil3d_neighbours(ctx.rank, dims))


@benchmark("SendRecv_Replace", recvbuf=0.0,
           bytes_counted="X per message; n P messages per size", **COMMON)
@contextmanager
def sendrecv_replace(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Periodic chain: every rank calls MPI_Sendrecv_replace on one buffer, sending X bytes
    to rank + 1 and receiving X bytes from rank - 1, n times (no barrier between the
    warm-up and the timed loop, as in IMB-P2P).

    Timed: the whole loop and one read touch after it. t = sum of the loop times / (n P);
    Mbytes/sec = n P X / max loop time / 10^6; Msg/sec = n P / max loop time.
    """
    dst, src = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    buf = message_buffer(ctx, nbytes)
    status, _ = ctx.scratch(1)
    out = outputs()
    wr, rd = touches(ctx)
    runs: list[int] = []
    count, dtype = ctx.message(nbytes)
    run = timed(ctx, sendrecv_replace_loop, out, buf, address(buf), count, dtype, dst, src,
                ctx.handle(ctx.comm), status, nbytes, wr, rd, last=10)

    def counted(n: int) -> float:
        runs.append(n)
        return run(n)

    yield counted
    # The message has travelled one rank per call, in every run of this size (warm-up too).
    expect_from(ctx, buf, (ctx.rank - sum(runs)) % ctx.size, nbytes)
