"""IMB-MPI1 point-to-point benchmarks.

Each timed loop is compiled (:mod:`beff.core.capi`) and makes IMB 2021.11's C calls: blocking
MPI_Send/MPI_Recv for PingPong, MPI_Isend + MPI_Recv + MPI_Wait for PingPing, and so on, with
MPI_Wtime read once before and once after the whole loop. Under ``-off_cache`` the send and
receive addresses step through their slots (slot i mod count), each buffer on its own, as in
IMB. Data move as MPI_BYTE (beyond a C int count, as one block: :mod:`beff.core.counts`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from beff.bench import check, registry
from beff.bench.check import expected_bytes, fill_send
from beff.bench.ctx import Ctx
from beff.bench.registry import Kind, Runner
from beff.core import capi
from beff.core.capi import F64Array, loop, per_iteration_of

TAG = 1
SUITE = "mpi1"
# Every kernel here moves a message beyond a C int count as block types (beff.core.counts).
benchmark = functools.partial(registry.benchmark, large_counts=True)
C: Any = None  # the C bindings, substituted by the backend


@loop
def pingpong_loop(n: int, first: int, sb: int, sn: int, ss: int, rb: int, rn: int, rs: int,
                  count: int, dtype: int, peer: int, src: int, rtag: int, comm: int,
                  status: int) -> tuple[float, int]:
    """Rank 0: Send then Recv; rank 1: Recv then Send; the whole loop timed."""
    err = 0
    t0 = C.Wtime()
    for i in range(n):
        s = sb + (i % sn) * ss
        r = rb + (i % rn) * rs
        if first:
            err |= C.Send(s, count, dtype, peer, 1, comm)
            err |= C.Recv(r, count, dtype, src, rtag, comm, status)
        else:
            err |= C.Recv(r, count, dtype, src, rtag, comm, status)
            err |= C.Send(s, count, dtype, peer, 1, comm)
    return C.Wtime() - t0, err


@loop
def pingping_loop(n: int, sb: int, sn: int, ss: int, rb: int, rn: int, rs: int, count: int,
                  dtype: int, peer: int, src: int, rtag: int, comm: int, status: int,
                  request: int) -> tuple[float, int]:
    """Isend to the partner, Recv from it, Wait for the Isend; the whole loop timed."""
    err = 0
    t0 = C.Wtime()
    for i in range(n):
        err |= C.Isend(sb + (i % sn) * ss, count, dtype, peer, 1, comm, request)
        err |= C.Recv(rb + (i % rn) * rs, count, dtype, src, rtag, comm, status)
        err |= C.Wait(request, status)
    return C.Wtime() - t0, err


@loop
def sendrecv_loop(n: int, sb: int, sn: int, ss: int, rb: int, rn: int, rs: int, count: int,
                  dtype: int, right: int, left: int, comm: int,
                  status: int) -> tuple[float, int]:
    """MPI_Sendrecv to the right, from the left; the whole loop timed."""
    err = 0
    t0 = C.Wtime()
    for i in range(n):
        err |= C.Sendrecv(sb + (i % sn) * ss, count, dtype, right, 1,
                          rb + (i % rn) * rs, count, dtype, left, 1, comm, status)
    return C.Wtime() - t0, err


@loop
def exchange_loop(n: int, s_right: int, s_left: int, sn: int, ss: int, r_left: int,
                  r_right: int, rn: int, rs: int, count: int, dtype: int, right: int,
                  left: int, comm: int, statuses: int, requests: int,
                  hsize: int) -> tuple[float, int]:
    """Isend right and left, Recv from left and right, Waitall; the whole loop timed."""
    err = 0
    t0 = C.Wtime()
    for i in range(n):
        so = (i % sn) * ss
        ro = (i % rn) * rs
        err |= C.Isend(s_right + so, count, dtype, right, 1, comm, requests)
        err |= C.Isend(s_left + so, count, dtype, left, 1, comm, requests + hsize)
        err |= C.Recv(r_left + ro, count, dtype, left, 1, comm, statuses)
        err |= C.Recv(r_right + ro, count, dtype, right, 1, comm, statuses)
        err |= C.Waitall(2, requests, statuses)
    return C.Wtime() - t0, err


# --per-iteration twins: the same calls, and each iteration's time from one more MPI_Wtime
# after it (beff.bench.iterations); the loops above stay as they are for every other run.
@per_iteration_of(pingpong_loop)
def pingpong_iter_loop(n: int, first: int, sb: int, sn: int, ss: int, rb: int, rn: int,
                       rs: int, count: int, dtype: int, peer: int, src: int, rtag: int,
                       comm: int, status: int, times: F64Array, stride: int,
                       start: int) -> tuple[float, int]:
    """pingpong_loop, each round trip's time recorded (every stride-th)."""
    err = 0
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        s = sb + (i % sn) * ss
        r = rb + (i % rn) * rs
        if first:
            err |= C.Send(s, count, dtype, peer, 1, comm)
            err |= C.Recv(r, count, dtype, src, rtag, comm, status)
        else:
            err |= C.Recv(r, count, dtype, src, rtag, comm, status)
            err |= C.Send(s, count, dtype, peer, 1, comm)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    return C.Wtime() - t0, err


@per_iteration_of(pingping_loop)
def pingping_iter_loop(n: int, sb: int, sn: int, ss: int, rb: int, rn: int, rs: int,
                       count: int, dtype: int, peer: int, src: int, rtag: int, comm: int,
                       status: int, request: int, times: F64Array, stride: int,
                       start: int) -> tuple[float, int]:
    """pingping_loop, each iteration's time recorded (every stride-th)."""
    err = 0
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        err |= C.Isend(sb + (i % sn) * ss, count, dtype, peer, 1, comm, request)
        err |= C.Recv(rb + (i % rn) * rs, count, dtype, src, rtag, comm, status)
        err |= C.Wait(request, status)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    return C.Wtime() - t0, err


@per_iteration_of(sendrecv_loop)
def sendrecv_iter_loop(n: int, sb: int, sn: int, ss: int, rb: int, rn: int, rs: int,
                       count: int, dtype: int, right: int, left: int, comm: int, status: int,
                       times: F64Array, stride: int, start: int) -> tuple[float, int]:
    """sendrecv_loop, each iteration's time recorded (every stride-th)."""
    err = 0
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        err |= C.Sendrecv(sb + (i % sn) * ss, count, dtype, right, 1,
                          rb + (i % rn) * rs, count, dtype, left, 1, comm, status)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    return C.Wtime() - t0, err


@per_iteration_of(exchange_loop)
def exchange_iter_loop(n: int, s_right: int, s_left: int, sn: int, ss: int, r_left: int,
                       r_right: int, rn: int, rs: int, count: int, dtype: int, right: int,
                       left: int, comm: int, statuses: int, requests: int, hsize: int,
                       times: F64Array, stride: int, start: int) -> tuple[float, int]:
    """exchange_loop, each iteration's time recorded (every stride-th)."""
    err = 0
    t0 = C.Wtime()
    tp = t0
    for i in range(n):
        so = (i % sn) * ss
        ro = (i % rn) * rs
        err |= C.Isend(s_right + so, count, dtype, right, 1, comm, requests)
        err |= C.Isend(s_left + so, count, dtype, left, 1, comm, requests + hsize)
        err |= C.Recv(r_left + ro, count, dtype, left, 1, comm, statuses)
        err |= C.Recv(r_right + ro, count, dtype, right, 1, comm, statuses)
        err |= C.Waitall(2, requests, statuses)
        t = C.Wtime()
        if (start + i) % stride == 0:
            times[(start + i) // stride] = t - tp
        tp = t
    return C.Wtime() - t0, err


@loop
def window_loop(n: int, sends: int, recvs: int, window: int, sb: int, sn: int, ss: int,
                rb: int, rn: int, rs: int, count: int, dtype: int, peer: int, ack: int,
                ack_buf: int, comm: int, statuses: int, requests: int,
                hsize: int) -> tuple[float, int]:
    """A window of Isends and/or Irecvs, Waitall, then an optional zero-byte acknowledgement
    (ack > 0: receive it, ack < 0: send it); the whole loop timed."""
    err = 0
    t0 = C.Wtime()
    for i in range(n):
        k = 0
        if sends:
            for w in range(window):
                err |= C.Isend(sb + ((i + w) % sn) * ss, count, dtype, peer, 1, comm,
                               requests + k * hsize)
                k += 1
        if recvs:
            for w in range(window):
                err |= C.Irecv(rb + ((i + w) % rn) * rs, count, dtype, peer, 1, comm,
                               requests + k * hsize)
                k += 1
        err |= C.Waitall(k, requests, statuses)
        if ack > 0:
            err |= C.Recv(ack_buf, 0, dtype, peer, 2, comm, statuses)
        elif ack < 0:
            err |= C.Send(ack_buf, 0, dtype, peer, 2, comm)
    return C.Wtime() - t0, err


def _peer(ctx: Ctx) -> int:
    """The partner in a pair: ranks 0 and 1 of the group (group size 2)."""
    return 1 - ctx.rank


def _pair(ctx: Ctx, nbytes: int, any_source: bool) -> tuple[Any, ...]:
    """Buffers and the (source, tag) a PingPong/PingPing rank receives with."""
    MPI = ctx.MPI
    peer = _peer(ctx)
    src = int(MPI.ANY_SOURCE) if any_source else peer
    rtag = int(MPI.ANY_TAG) if any_source else TAG
    sbufs, rbufs = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, sbufs)
    return peer, src, rtag, sbufs, rbufs


def _pingpong(ctx: Ctx, nbytes: int, any_source: bool) -> Iterator[Runner]:
    peer, src, rtag, sbufs, rbufs = _pair(ctx, nbytes, any_source)
    status, _ = ctx.scratch()
    yield ctx.timed(pingpong_loop, int(ctx.rank == 0), *sbufs.slots, *rbufs.slots,
                    *ctx.message(nbytes), peer, src, rtag, ctx.handle(ctx.comm), status)
    expected_bytes(ctx, rbufs, peer)


def _pingping(ctx: Ctx, nbytes: int, any_source: bool) -> Iterator[Runner]:
    peer, src, rtag, sbufs, rbufs = _pair(ctx, nbytes, any_source)
    status, request = ctx.scratch(1, 1)
    yield ctx.timed(pingping_loop, *sbufs.slots, *rbufs.slots, *ctx.message(nbytes), peer,
                    src, rtag, ctx.handle(ctx.comm), status, request)
    expected_bytes(ctx, rbufs, peer)


@benchmark("PingPong", suite=SUITE, kind=Kind.SINGLE_TRANSFER, procs=2, time_scale=0.5)
@contextmanager
def pingpong(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 sends X bytes to rank 1 (Send), which sends them back (Recv then Send).

    Timed: the whole loop of n round trips on each rank; t = loop time / n / 2 (half a round
    trip). Bytes counted: X per direction. Mbytes/sec = X / t_max / 10^6. Specific source.
    """
    yield from _pingpong(ctx, nbytes, any_source=False)


@benchmark("PingPongSpecificSource", suite=SUITE, kind=Kind.SINGLE_TRANSFER, procs=2,
           time_scale=0.5, default=False)
@contextmanager
def pingpong_specific(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """PingPong receiving from the specific partner rank and tag (same as today's PingPong).

    Timed: loop time / n / 2. Mbytes/sec = X / t_max / 10^6.
    """
    yield from _pingpong(ctx, nbytes, any_source=False)


@benchmark("PingPongAnySource", suite=SUITE, kind=Kind.SINGLE_TRANSFER, procs=2,
           time_scale=0.5, default=False)
@contextmanager
def pingpong_any(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """PingPong receiving with MPI_ANY_SOURCE and MPI_ANY_TAG (IMB's pre-2017 PingPong).

    Timed: loop time / n / 2. Mbytes/sec = X / t_max / 10^6.
    """
    yield from _pingpong(ctx, nbytes, any_source=True)


@benchmark("PingPing", suite=SUITE, kind=Kind.SINGLE_TRANSFER, procs=2)
@contextmanager
def pingping(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Both ranks Isend X bytes to each other, Recv the partner's message, then Wait.

    Timed: the whole loop; t = loop time / n (one message time under bidirectional load).
    Bytes counted: X. Mbytes/sec = X / t_max / 10^6. Specific source.
    """
    yield from _pingping(ctx, nbytes, any_source=False)


@benchmark("PingPingSpecificSource", suite=SUITE, kind=Kind.SINGLE_TRANSFER, procs=2,
           default=False)
@contextmanager
def pingping_specific(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """PingPing receiving from the specific partner rank and tag (same as today's PingPing).

    Timed: loop time / n. Mbytes/sec = X / t_max / 10^6.
    """
    yield from _pingping(ctx, nbytes, any_source=False)


@benchmark("PingPingAnySource", suite=SUITE, kind=Kind.SINGLE_TRANSFER, procs=2, default=False)
@contextmanager
def pingping_any(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """PingPing receiving with MPI_ANY_SOURCE and MPI_ANY_TAG.

    Timed: loop time / n. Mbytes/sec = X / t_max / 10^6.
    """
    yield from _pingping(ctx, nbytes, any_source=True)


@benchmark("Sendrecv", suite=SUITE, kind=Kind.PARALLEL_TRANSFER, min_procs=2, bw_scale=2.0,
           bytes_counted="2X per rank (X sent to the right, X received from the left)")
@contextmanager
def sendrecv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Periodic chain: each rank calls MPI_Sendrecv, sending X bytes to its right neighbour and
    receiving X bytes from its left neighbour.

    Timed: the whole loop; t = loop time / n. Mbytes/sec = 2 X / t_max / 10^6.
    """
    right, left = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    sbufs, rbufs = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, sbufs)
    status, _ = ctx.scratch()
    yield ctx.timed(sendrecv_loop, *sbufs.slots, *rbufs.slots, *ctx.message(nbytes), right,
                    left, ctx.handle(ctx.comm), status)
    expected_bytes(ctx, rbufs, left)


@benchmark("Exchange", suite=SUITE, kind=Kind.PARALLEL_TRANSFER, min_procs=2, bw_scale=4.0,
           sendbuf=2.0, recvbuf=2.0,
           bytes_counted="4X per rank (X sent to and X received from each of both neighbours)")
@contextmanager
def exchange(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Periodic chain: each rank Isends X bytes to its right and left neighbours (from two
    separate send buffers), receives X bytes from its left and right ones with MPI_Recv, then
    Waitall.

    Timed: the whole loop; t = loop time / n. Mbytes/sec = 4 X / t_max / 10^6.
    """
    right, left = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    s_left, s_right = ctx.buffers(nbytes), ctx.buffers(nbytes)
    r_left, r_right = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, s_left)
    fill_send(ctx, s_right)
    statuses, requests = ctx.scratch(2, 2)
    yield ctx.timed(exchange_loop, s_right.address, s_left.address, s_left.count, s_left.stride,
                    r_left.address, r_right.address, r_left.count, r_left.stride,
                    *ctx.message(nbytes), right, left, ctx.handle(ctx.comm), statuses,
                    requests, capi.handle_size())
    expected_bytes(ctx, r_left, left)
    expected_bytes(ctx, r_right, right)


def _window(ctx: Ctx, nbytes: int, both: bool) -> Iterator[Runner]:
    """Uniband/Biband: the lower half of the group pairs with the upper half."""
    half = ctx.size // 2
    window = ctx.cfg.options.window_size
    if ctx.rank < half:
        peer, sender = ctx.rank + half, True
    elif ctx.rank < 2 * half:
        peer, sender = ctx.rank - half, False
    else:
        peer, sender = int(ctx.MPI.PROC_NULL), False
    sbufs, rbufs = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, sbufs)
    ack_buf = ctx.buffers(0)
    statuses, requests = ctx.scratch(2 * window, 2 * window)
    ack = 0 if both else (1 if sender else -1)
    yield ctx.timed(window_loop, int(sender or both), int(not sender or both), window,
                    *sbufs.slots, *rbufs.slots, *ctx.message(nbytes), peer, ack,
                    ack_buf.address, ctx.handle(ctx.comm), statuses, requests,
                    capi.handle_size())
    if ctx.cfg.check and nbytes and peer >= 0 and (not sender or both):
        # The first iteration already received into slots 0 .. window-1.
        expected = check.pattern(peer, nbytes)
        for view in rbufs.views[:window]:
            check.expect_bytes(ctx, view, expected)


@benchmark("Uniband", suite=SUITE, kind=Kind.MSG_RATE, min_procs=2, default=False,
           bytes_counted="X per message, window_size messages per iteration and pair")
@contextmanager
def uniband(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Ranks of the lower half each Isend a window of ``-window_size`` X-byte messages to their
    partner in the upper half, which Irecvs them; Waitall, then a zero-byte acknowledgement.

    Timed: the whole loop; t = loop time / n. Mbytes/sec = window * (NP/2) * X / t_max / 10^6
    over all pairs; Msg/sec = window * (NP/2) / t_max.
    """
    yield from _window(ctx, nbytes, both=False)


@benchmark("Biband", suite=SUITE, kind=Kind.MSG_RATE, min_procs=2, default=False, bw_scale=2.0,
           bytes_counted="X per message, window_size messages per direction, iteration and pair")
@contextmanager
def biband(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Uniband in both directions: each pair exchanges windows of X-byte messages, Waitall.

    Timed: loop time / n. Mbytes/sec = 2 * window * (NP/2) * X / t_max / 10^6;
    Msg/sec = 2 * window * (NP/2) / t_max.
    """
    yield from _window(ctx, nbytes, both=True)
