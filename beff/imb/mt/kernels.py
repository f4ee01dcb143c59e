"""IMB-MT's ten benchmarks: one kernel and one compiled timed loop each, run by every thread.

Each thread of a rank runs the kernel on its own duplicate of MPI_COMM_WORLD (``ctx.comm``)
with its own buffers and its own :class:`Lane` (``ctx.state``); the compiled loops release
the interpreter lock (numba ``nogil``), so the threads call MPI at the same time. The loops
make IMB-MT's C calls, tag 0, ``-datatype``'s MPI type, as ``src_cpp/MT/MT_benchmark.cpp``:

* point-to-point (PingPongMT, PingPingMT, SendRecvMT, ExchangeMT, UniBandMT, BiBandMT):
  ``-warmup`` iterations, then IMB-MT's barrier (:func:`mt_sync`), then ``-repeat``
  iterations timed as a whole by MPI_Wtime;
* collectives (BcastMT, ReduceMT, AllReduceMT): ``-warmup`` + ``-repeat`` calls, each timed
  alone and followed by five barriers; the warm-up calls' times are left out;
* BarrierMT: each call, timed alone, is a meeting of the rank's threads and MPI_Barrier.

IMB-MT's barrier (``-barrier on|special``): the rank's threads meet (a pthread barrier, where
IMB-MT's OpenMP threads meet at ``#pragma omp barrier``), thread 0 calls MPI_Barrier on
MPI_COMM_WORLD (``special``: zero-byte MPI_Sendrecv rounds to rank + 2^k), and the threads
meet again; ``off``: nothing.

A kernel yields ``run(n)``, which returns (seconds, 1.0) or, on a rank that sits out (the
paired benchmarks on a rank without a partner), (0.0, 0.0) after meeting the others at the
barrier. Under ``--check`` (or ``-check on``) the buffers hold IMB-MT's values, element i
being (rank + 1) i (BcastMT's root: i), and after the timed loop every element received is
compared with what its sender wrote (the sum over ranks for the reductions); each mismatch
is one defect. The test hook :func:`beff.core.testhooks.corrupt` makes rank 0 change its
last element.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from beff.bench import check
from beff.bench.ctx import Ctx
from beff.bench.registry import Kind, Runner, benchmark
from beff.core import capi
from beff.core.capi import I64Array, helper, loop
from beff.imb.mt import pairs

SUITE = "mt"
TAG = 0
SPECIAL_TAG = 1010  # IMB-MT's special_barrier
OFF, ON, SPECIAL = 0, 1, 2  # -barrier
BARRIERS = {"off": OFF, "on": ON, "special": SPECIAL}
# The slots of a lane's sync array (what mt_sync needs, as numbers).
MODE, BARRIER, THREAD, WORLD, WRANK, WSIZE, ZERO, BYTE, STATUS = range(9)
BCAST, REDUCE, ALLREDUCE, BARRIER_OP = range(4)
CORRUPTION = 1000
# The benchmarks whose time is per message of a window (IMB-MT's TIME_DIVIDE_BY_WINDOW_SIZE).
WINDOWED = frozenset({"UniBandMT", "BiBandMT"})
# UniBandMT's and BiBandMT's columns: Mbytes/sec and Msg/sec summed over the pairs of
# threads, IMB-MT's OUT_BW_CUMULATIVE and OUT_MSGRATE_CUMMULATIVE (see .view).
WINDOW_COLUMNS = ("bytes", "repetitions", "t_avg", "mt_mbytes_per_sec", "mt_msg_per_sec")
C: Any = None  # the C bindings, substituted by the backend


@dataclass
class Lane:
    """One thread's part: its index, its buffers and scratch room, and what the compiled
    barrier needs (``sync``: int64 numbers at the slots MODE ... STATUS)."""

    index: int
    threads: int
    sync: np.ndarray
    send: np.ndarray  # uint8, the largest message
    recv: np.ndarray  # uint8, the largest message (two for ExchangeMT)
    ack: np.ndarray  # one byte: UniBandMT's and BiBandMT's acknowledgement
    status: int  # address of one MPI_Status
    statuses: int  # address of room for max(2, 2 window) statuses
    requests: int  # address of room for max(2, 2 window) requests
    dtype: int  # -datatype's handle
    type_size: int
    char: int  # MPI_CHAR's handle
    op_sum: int  # MPI_SUM's handle
    stride: int
    window: int
    warmup: int
    checking: bool
    keep: tuple[Any, ...] = ()  # arrays the loops know only by address


# ----------------------------------------------------------------------------- compiled
@helper
def mt_sync(sync: I64Array) -> int:
    """IMB-MT's barrier: the threads meet, thread 0 calls MPI_Barrier on MPI_COMM_WORLD (or
    the zero-byte MPI_Sendrecv rounds of ``special``), the threads meet again."""
    mode = sync[MODE]
    if mode == OFF:
        return 0
    err = 0
    C.pthread_barrier_wait(sync[BARRIER])
    if sync[THREAD] == 0:
        if mode == ON:
            err |= C.Barrier(sync[WORLD])
        else:
            rank = sync[WRANK]
            size = sync[WSIZE]
            mask = 1
            while mask < size:
                err |= C.Sendrecv(sync[ZERO], 0, sync[BYTE], (rank + mask) % size,
                                  SPECIAL_TAG, sync[ZERO], 0, sync[BYTE],
                                  (rank - mask + size) % size, SPECIAL_TAG, sync[WORLD],
                                  sync[STATUS])
                mask <<= 1
    C.pthread_barrier_wait(sync[BARRIER])
    return err


@loop
def sync_loop(sync: I64Array) -> tuple[float, int]:
    """IMB-MT's barrier alone (a rank that sits out still meets the others)."""
    return 0.0, C.mt_sync(sync)


@loop
def pingpong_loop(n: int, meet: int, sync: I64Array, first: int, sb: int, rb: int,
                  count: int, dtype: int, partner: int, comm: int,
                  status: int) -> tuple[float, int]:
    """The even side: MPI_Send, MPI_Recv; the odd side: MPI_Recv, MPI_Send; n times, after
    IMB-MT's barrier when ``meet``; the loop timed as a whole."""
    err = 0
    if meet:
        err |= C.mt_sync(sync)
    t0 = C.Wtime()
    for _ in range(n):
        if first:
            err |= C.Send(sb, count, dtype, partner, TAG, comm)
            err |= C.Recv(rb, count, dtype, partner, TAG, comm, status)
        else:
            err |= C.Recv(rb, count, dtype, partner, TAG, comm, status)
            err |= C.Send(sb, count, dtype, partner, TAG, comm)
    return C.Wtime() - t0, err


@loop
def pingping_loop(n: int, meet: int, sync: I64Array, sb: int, rb: int, count: int, dtype: int,
                  partner: int, comm: int, status: int, request: int) -> tuple[float, int]:
    """MPI_Isend to the partner, MPI_Recv from it, MPI_Wait, n times (timed as a whole)."""
    err = 0
    if meet:
        err |= C.mt_sync(sync)
    t0 = C.Wtime()
    for _ in range(n):
        err |= C.Isend(sb, count, dtype, partner, TAG, comm, request)
        err |= C.Recv(rb, count, dtype, partner, TAG, comm, status)
        err |= C.Wait(request, status)
    return C.Wtime() - t0, err


@loop
def sendrecv_loop(n: int, meet: int, sync: I64Array, sb: int, rb: int, count: int, dtype: int,
                  right: int, left: int, comm: int, status: int) -> tuple[float, int]:
    """MPI_Sendrecv: send right, receive from the left, n times (timed as a whole)."""
    err = 0
    if meet:
        err |= C.mt_sync(sync)
    t0 = C.Wtime()
    for _ in range(n):
        err |= C.Sendrecv(sb, count, dtype, right, TAG, rb, count, dtype, left, TAG, comm,
                          status)
    return C.Wtime() - t0, err


@loop
def exchange_loop(n: int, meet: int, sync: I64Array, sb: int, rb: int, rb2: int, count: int,
                  dtype: int, left: int, right: int, comm: int, status: int, requests: int,
                  statuses: int, hsize: int) -> tuple[float, int]:
    """MPI_Isend to the left and to the right, MPI_Recv from the left and from the right,
    MPI_Waitall, n times (timed as a whole)."""
    err = 0
    if meet:
        err |= C.mt_sync(sync)
    t0 = C.Wtime()
    for _ in range(n):
        err |= C.Isend(sb, count, dtype, left, TAG, comm, requests)
        err |= C.Isend(sb, count, dtype, right, TAG, comm, requests + hsize)
        err |= C.Recv(rb, count, dtype, left, TAG, comm, status)
        err |= C.Recv(rb2, count, dtype, right, TAG, comm, status)
        err |= C.Waitall(2, requests, statuses)
    return C.Wtime() - t0, err


@loop
def uniband_loop(n: int, meet: int, sync: I64Array, first: int, sb: int, rb: int, count: int,
                 dtype: int, partner: int, comm: int, window: int, requests: int,
                 statuses: int, hsize: int, ack: int, char: int,
                 status: int) -> tuple[float, int]:
    """The even side: ``window`` MPI_Isend, MPI_Waitall, MPI_Recv of a 1-byte acknowledgement;
    the odd side: ``window`` MPI_Irecv, MPI_Waitall, MPI_Send of it; n times (timed as a
    whole)."""
    err = 0
    if meet:
        err |= C.mt_sync(sync)
    t0 = C.Wtime()
    for _ in range(n):
        if first:
            for w in range(window):
                err |= C.Isend(sb, count, dtype, partner, TAG, comm, requests + w * hsize)
            err |= C.Waitall(window, requests, statuses)
            err |= C.Recv(ack, 1, char, partner, TAG, comm, status)
        else:
            for w in range(window):
                err |= C.Irecv(rb, count, dtype, partner, TAG, comm, requests + w * hsize)
            err |= C.Waitall(window, requests, statuses)
            err |= C.Send(ack, 1, char, partner, TAG, comm)
    return C.Wtime() - t0, err


@loop
def biband_loop(n: int, meet: int, sync: I64Array, first: int, sb: int, rb: int, count: int,
                dtype: int, partner: int, comm: int, window: int, requests: int,
                statuses: int, hsize: int, ack: int, char: int,
                status: int) -> tuple[float, int]:
    """Both sides: ``window`` MPI_Irecv, ``window`` MPI_Isend, MPI_Waitall of all; then the
    even side MPI_Recvs a 1-byte acknowledgement that the odd side MPI_Sends; n times (timed
    as a whole)."""
    err = 0
    if meet:
        err |= C.mt_sync(sync)
    t0 = C.Wtime()
    for _ in range(n):
        for w in range(window):
            err |= C.Irecv(rb, count, dtype, partner, TAG, comm, requests + w * hsize)
        for w in range(window):
            err |= C.Isend(sb, count, dtype, partner, TAG, comm,
                           requests + (window + w) * hsize)
        err |= C.Waitall(2 * window, requests, statuses)
        if first:
            err |= C.Recv(ack, 1, char, partner, TAG, comm, status)
        else:
            err |= C.Send(ack, 1, char, partner, TAG, comm)
    return C.Wtime() - t0, err


@loop
def collective_loop(op: int, n: int, skip: int, sync: I64Array, sb: int, rb: int, count: int,
                    dtype: int, red: int, root: int, rank: int,
                    comm: int) -> tuple[float, int]:
    """``skip + n`` calls, each timed alone; the first ``skip`` left out of the sum. After each
    call of MPI_Bcast (the root's send buffer, the others' receive buffer), MPI_Reduce or
    MPI_Allreduce (MPI_SUM): five IMB-MT barriers. BarrierMT's call: the rank's threads meet,
    then MPI_Barrier, timed together, with no barrier after it."""
    err = 0
    total = 0.0
    for i in range(skip + n):
        t0 = C.Wtime()
        if op == BARRIER_OP:
            C.pthread_barrier_wait(sync[BARRIER])
            err |= C.Barrier(comm)
        elif op == BCAST:
            err |= C.Bcast(sb if rank == root else rb, count, dtype, root, comm)
        elif op == REDUCE:
            err |= C.Reduce(sb, rb, count, dtype, red, root, comm)
        else:
            err |= C.Allreduce(sb, rb, count, dtype, red, comm)
        t = C.Wtime() - t0
        if i >= skip:
            total += t
        if op != BARRIER_OP:
            for _ in range(5):
                err |= C.mt_sync(sync)
    return total, err


LOOPS = (sync_loop, pingpong_loop, pingping_loop, sendrecv_loop, exchange_loop, uniband_loop,
         biband_loop, collective_loop)


# ----------------------------------------------------------------------------- check mode
def values(factor: int, count: int) -> np.ndarray:
    """IMB-MT's check values: element i is factor * i, as a C int (wrapping)."""
    return (np.arange(count, dtype=np.int64) * factor).astype(np.int32)


def ints(buf: np.ndarray, count: int, offset: int = 0) -> np.ndarray:
    """``count`` C ints of a byte buffer, from element ``offset`` on."""
    return buf[offset * 4 : (offset + count) * 4].view(np.int32)


def fill(ctx: Ctx, count: int, factor: int | None = None) -> np.ndarray | None:
    """Under check: the send buffer holds factor * i ((rank + 1) i by default; rank 0
    corrupts its last element under the test hook :func:`beff.core.testhooks.corrupt`) and
    the receive buffer -1. Returns what was written into the send buffer (None when not
    checking)."""
    lane: Lane = ctx.state
    if not lane.checking or count == 0:
        return None
    data = values(ctx.rank + 1 if factor is None else factor, count)
    if check.corrupting(ctx):
        data[-1] += CORRUPTION
    ints(lane.send, count)[:] = data
    lane.recv[:] = 0xFF  # -1 in every C int
    return data


def expect(ctx: Ctx, count: int, sent: np.ndarray | None, got: np.ndarray,
           factor: int) -> None:
    """Count the elements of ``got`` that differ from factor * i, and those of the send
    buffer that differ from what was written into it."""
    lane: Lane = ctx.state
    if sent is None:
        return
    ctx.defects += check.count_defects(ints(lane.send, count), sent)
    ctx.defects += check.count_defects(got, values(factor, count))


# ----------------------------------------------------------------------------- kernels
def address(buf: np.ndarray) -> int:
    return int(buf.ctypes.data)


def idle(ctx: Ctx) -> Runner:
    """A rank that sits out: it meets the others at IMB-MT's barrier and counts no result."""
    lane: Lane = ctx.state

    def run(n: int) -> tuple[float, float]:
        if ctx.batch <= 0:  # the others meet there before their first timed batch only
            ctx.call(sync_loop, lane.sync)
        return 0.0, 0.0

    return run


def pt2pt(ctx: Ctx, lf: Any, *args: Any) -> Runner:
    """``run(n)``: ``-warmup`` iterations of ``lf``, then IMB-MT's barrier and n timed ones.
    A later timed batch of the same size (ctx.batch > 0) goes straight on: no warm-up, no
    barrier, as if the timed loop had not been cut."""
    lane: Lane = ctx.state

    def run(n: int) -> tuple[float, float]:
        first = ctx.batch <= 0
        if lane.warmup and first:
            ctx.call(lf, lane.warmup, 0, lane.sync, *args)
        (seconds,) = ctx.call(lf, n, int(first), lane.sync, *args)
        return seconds, 1.0

    return run


def collective(ctx: Ctx, op: int, count: int, root: int = 0) -> Runner:
    """``run(n)``: ``-warmup`` + n calls of ``op``, the n timed ones summed (a later timed
    batch of the same size, ctx.batch > 0: the n calls only)."""
    lane: Lane = ctx.state
    sb, rb = address(lane.send), address(lane.recv)

    def run(n: int) -> tuple[float, float]:
        skip = lane.warmup if ctx.batch <= 0 else 0
        (seconds,) = ctx.call(collective_loop, op, n, skip, lane.sync, sb, rb, count,
                              lane.dtype, lane.op_sum, root, ctx.rank, ctx.handle(ctx.comm))
        return seconds, 1.0

    return run


def _paired(ctx: Ctx, count: int, name: str) -> Iterator[Runner]:
    lane: Lane = ctx.state
    partner = pairs.pair(ctx.rank, ctx.size, lane.stride)
    if partner is None:
        yield idle(ctx)
        return
    first = int(pairs.first(ctx.rank, ctx.size, lane.stride))
    sent = fill(ctx, count)
    sb, rb, comm = address(lane.send), address(lane.recv), ctx.handle(ctx.comm)
    hsize = capi.handle_size()
    if name == "PingPongMT":
        yield pt2pt(ctx, pingpong_loop, first, sb, rb, count, lane.dtype, partner, comm,
                    lane.status)
    elif name == "PingPingMT":
        yield pt2pt(ctx, pingping_loop, sb, rb, count, lane.dtype, partner, comm, lane.status,
                    lane.requests)
    else:
        lf = uniband_loop if name == "UniBandMT" else biband_loop
        yield pt2pt(ctx, lf, first, sb, rb, count, lane.dtype, partner, comm, lane.window,
                    lane.requests, lane.statuses, hsize, address(lane.ack), lane.char,
                    lane.status)
    if name != "UniBandMT" or not first:  # UniBandMT's sender receives no data
        expect(ctx, count, sent, ints(lane.recv, count), partner + 1)


@benchmark("AllReduceMT", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True,
           bytes_counted="X = count x sizeof(type) x threads per rank (each thread reduces "
                         "count elements)")
@contextmanager
def allreduce(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Every thread of every rank calls MPI_Allreduce (MPI_SUM) of ``count`` elements on its
    own communicator, ``-warmup`` + ``-repeat`` times; each call is timed alone and followed
    by five IMB-MT barriers.

    t per thread = the timed calls' sum / repetitions; t_min, t_max, t_avg over every thread
    of every rank.
    """
    sent = fill(ctx, count)
    yield collective(ctx, ALLREDUCE, count)
    size = ctx.size
    expect(ctx, count, sent, ints(ctx.state.recv, count), size * (size + 1) // 2)


@benchmark("BarrierMT", suite=SUITE, kind=Kind.SYNC, bytes_counted="none")
@contextmanager
def barrier(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Every thread of every rank: its rank's threads meet, then it calls MPI_Barrier on its
    own communicator; both timed together, call by call, ``-warmup`` + ``-repeat`` times (the
    warm-up left out).

    t per thread = the timed calls' sum / repetitions; t_min, t_max, t_avg over every thread
    of every rank.
    """
    yield collective(ctx, BARRIER_OP, 0)


@benchmark("BcastMT", suite=SUITE, kind=Kind.COLLECTIVE, rooted=True,
           bytes_counted="X = count x sizeof(type) x threads per rank")
@contextmanager
def bcast(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Every thread of every rank calls MPI_Bcast of ``count`` elements from rank 0 on its own
    communicator, ``-warmup`` + ``-repeat`` times; each call is timed alone and followed by
    five IMB-MT barriers.

    t per thread = the timed calls' sum / repetitions; t_min, t_max, t_avg over every thread
    of every rank.
    """
    sent = fill(ctx, count, factor=1) if ctx.rank == 0 else fill(ctx, count)
    yield collective(ctx, BCAST, count)
    if ctx.rank != 0 and sent is not None:
        ctx.defects += check.count_defects(ints(ctx.state.recv, count), values(1, count))


@benchmark("BiBandMT", suite=SUITE, kind=Kind.MSG_RATE, time_scale=0.5, columns=WINDOW_COLUMNS,
           bytes_counted="X = count x sizeof(type) x threads per rank; each thread moves "
                         "2 x window messages of count elements per iteration")
@contextmanager
def biband(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Threads of paired ranks (r, r + stride): each posts ``-window_size`` MPI_Irecv and as
    many MPI_Isend to its partner thread, MPI_Waitall; then the even side MPI_Recvs a 1-byte
    acknowledgement from the odd side. ``-warmup`` iterations, IMB-MT's barrier, then
    ``-repeat`` iterations timed as a whole.

    t per thread = loop time / (repetitions x 2 x window): one message's time. t_avg over
    the threads that took part. Mbytes/sec = count x sizeof(type) x (thread pairs) / t_max;
    Msg/sec = (thread pairs) / t_avg (IMB-MT's sums over the pairs of threads).
    """
    yield from _paired(ctx, count, "BiBandMT")


@benchmark("ExchangeMT", suite=SUITE, kind=Kind.PARALLEL_TRANSFER, bw_scale=4.0, recvbuf=2.0,
           bytes_counted="X = count x sizeof(type) x threads per rank; 4 X per iteration "
                         "(2 sent, 2 received)")
@contextmanager
def exchange(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Every thread sends ``count`` elements to the ranks at -stride on both sides (two
    MPI_Isend), receives from both (two MPI_Recv) and MPI_Waitalls, on its own communicator.
    ``-warmup`` iterations, IMB-MT's barrier, then ``-repeat`` iterations timed as a whole.

    t per thread = loop time / repetitions; t_min, t_max, t_avg over every thread of every
    rank; Mbytes/sec = 4 X / t_max.
    """
    lane: Lane = ctx.state
    left, right = pairs.ring(ctx.rank, ctx.size, lane.stride)
    sent = fill(ctx, count)
    rb = address(lane.recv)
    yield pt2pt(ctx, exchange_loop, address(lane.send), rb, rb + count * lane.type_size, count,
                lane.dtype, left, right, ctx.handle(ctx.comm), lane.status, lane.requests,
                lane.statuses, capi.handle_size())
    expect(ctx, count, sent, ints(lane.recv, count), left + 1)
    if sent is not None:
        ctx.defects += check.count_defects(ints(lane.recv, count, count),
                                           values(right + 1, count))


@benchmark("PingPingMT", suite=SUITE, kind=Kind.PARALLEL_TRANSFER,
           bytes_counted="X = count x sizeof(type) x threads per rank")
@contextmanager
def pingping(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Threads of paired ranks (r, r + stride): each MPI_Isends ``count`` elements to its
    partner thread, MPI_Recvs as many from it and MPI_Waits. ``-warmup`` iterations,
    IMB-MT's barrier, then ``-repeat`` iterations timed as a whole.

    t per thread = loop time / repetitions; t_min, t_max, t_avg over the threads that took
    part; Mbytes/sec = X / t_max.
    """
    yield from _paired(ctx, count, "PingPingMT")


@benchmark("PingPongMT", suite=SUITE, kind=Kind.PARALLEL_TRANSFER, time_scale=0.5,
           bytes_counted="X = count x sizeof(type) x threads per rank")
@contextmanager
def pingpong(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Threads of paired ranks (r, r + stride): the even side MPI_Sends ``count`` elements
    and MPI_Recvs them back, the odd side the reverse. ``-warmup`` iterations, IMB-MT's
    barrier, then ``-repeat`` iterations timed as a whole.

    t per thread = loop time / (2 x repetitions): half a round trip. t_min, t_max, t_avg over
    the threads that took part; Mbytes/sec = X / t_max.
    """
    yield from _paired(ctx, count, "PingPongMT")


@benchmark("ReduceMT", suite=SUITE, kind=Kind.COLLECTIVE, rooted=True, reduction=True,
           bytes_counted="X = count x sizeof(type) x threads per rank")
@contextmanager
def reduce(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Every thread of every rank calls MPI_Reduce (MPI_SUM, root 0) of ``count`` elements on
    its own communicator, ``-warmup`` + ``-repeat`` times; each call is timed alone and
    followed by five IMB-MT barriers.

    t per thread = the timed calls' sum / repetitions; t_min, t_max, t_avg over every thread
    of every rank.
    """
    sent = fill(ctx, count)
    yield collective(ctx, REDUCE, count)
    size = ctx.size
    if ctx.rank == 0:
        expect(ctx, count, sent, ints(ctx.state.recv, count), size * (size + 1) // 2)
    elif sent is not None:
        ctx.defects += check.count_defects(ints(ctx.state.send, count), sent)


@benchmark("SendRecvMT", suite=SUITE, kind=Kind.PARALLEL_TRANSFER, bw_scale=2.0,
           bytes_counted="X = count x sizeof(type) x threads per rank; 2 X per iteration "
                         "(sent and received)")
@contextmanager
def sendrecv(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Every thread calls MPI_Sendrecv on its own communicator: ``count`` elements to the rank
    at +stride, as many from the rank at -stride (a ring; at one rank, itself). ``-warmup``
    iterations, IMB-MT's barrier, then ``-repeat`` iterations timed as a whole.

    t per thread = loop time / repetitions; t_min, t_max, t_avg over every thread of every
    rank; Mbytes/sec = 2 X / t_max.
    """
    lane: Lane = ctx.state
    left, right = pairs.ring(ctx.rank, ctx.size, lane.stride)
    sent = fill(ctx, count)
    yield pt2pt(ctx, sendrecv_loop, address(lane.send), address(lane.recv), count, lane.dtype,
                right, left, ctx.handle(ctx.comm), lane.status)
    expect(ctx, count, sent, ints(lane.recv, count), left + 1)


@benchmark("UniBandMT", suite=SUITE, kind=Kind.MSG_RATE, columns=WINDOW_COLUMNS,
           bytes_counted="X = count x sizeof(type) x threads per rank; each sending thread "
                         "moves a window of messages of count elements per iteration")
@contextmanager
def uniband(ctx: Ctx, count: int) -> Iterator[Runner]:
    """Threads of paired ranks (r, r + stride): the even side MPI_Isends ``-window_size``
    messages of ``count`` elements to its partner thread and MPI_Waitalls, the odd side
    MPI_Irecvs them; then the odd side MPI_Sends a 1-byte acknowledgement. ``-warmup``
    iterations, IMB-MT's barrier, then ``-repeat`` iterations timed as a whole.

    t per thread = loop time / (repetitions x window): one message's time. t_avg over the
    threads that took part. Mbytes/sec = count x sizeof(type) x (thread pairs) / t_max: the
    aggregate bandwidth of all threads; Msg/sec = (thread pairs) / t_avg.
    """
    yield from _paired(ctx, count, "UniBandMT")
