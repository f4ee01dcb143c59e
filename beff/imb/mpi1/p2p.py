"""IMB-MPI1 point-to-point benchmarks.

Timing loops use persistent requests (Send_init/Recv_init with Start/Wait bound to locals) and
read MPI.Wtime only around a whole batch of iterations. With ``-off_cache`` the buffer address
changes every iteration, so those loops fall back to plain blocking calls on precomputed views.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from beff.imb.check import expected_bytes, fill_send
from beff.imb.driver import Ctx
from beff.imb.registry import Kind, Runner, benchmark

TAG = 1
SUITE = "mpi1"


def _peer(ctx: Ctx) -> int:
    """The partner in a pair: ranks 0 and 1 of the group (group size 2)."""
    return 1 - ctx.rank


def _source(ctx: Ctx, peer: int, any_source: bool) -> int:
    return int(ctx.MPI.ANY_SOURCE) if any_source else peer


def _free(requests: list[Any]) -> None:
    for r in requests:
        r.Free()


def _pingpong(ctx: Ctx, nbytes: int, any_source: bool) -> Iterator[Runner]:
    MPI, comm = ctx.MPI, ctx.comm
    peer = _peer(ctx)
    src = _source(ctx, peer, any_source)
    rtag = MPI.ANY_TAG if any_source else TAG
    sbufs, rbufs = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, sbufs)
    wtime = MPI.Wtime
    if sbufs.cycling:
        send, recv = comm.Send, comm.Recv
        sv, rv, count = sbufs.views, rbufs.views, sbufs.count
        first = ctx.rank == 0

        def run(n: int) -> float:
            t0 = wtime()
            for i in range(n):
                j = i % count
                if first:
                    send(sv[j], peer, TAG)
                    recv(rv[j], src, rtag)
                else:
                    recv(rv[j], src, rtag)
                    send(sv[j], peer, TAG)
            return float(wtime() - t0)

        yield run
    else:
        sreq = comm.Send_init(sbufs[0], peer, TAG)
        rreq = comm.Recv_init(rbufs[0], src, rtag)
        s_start, s_wait, r_start, r_wait = sreq.Start, sreq.Wait, rreq.Start, rreq.Wait
        if ctx.rank == 0:

            def run(n: int) -> float:
                t0 = wtime()
                for _ in range(n):
                    s_start()
                    s_wait()
                    r_start()
                    r_wait()
                return float(wtime() - t0)

        else:

            def run(n: int) -> float:
                t0 = wtime()
                for _ in range(n):
                    r_start()
                    r_wait()
                    s_start()
                    s_wait()
                return float(wtime() - t0)

        try:
            yield run
        finally:
            _free([sreq, rreq])
    expected_bytes(ctx, rbufs, peer)


def _pingping(ctx: Ctx, nbytes: int, any_source: bool) -> Iterator[Runner]:
    MPI, comm = ctx.MPI, ctx.comm
    peer = _peer(ctx)
    src = _source(ctx, peer, any_source)
    rtag = MPI.ANY_TAG if any_source else TAG
    sbufs, rbufs = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, sbufs)
    wtime = MPI.Wtime
    if sbufs.cycling:
        isend, recv = comm.Isend, comm.Recv
        sv, rv, count = sbufs.views, rbufs.views, sbufs.count

        def run(n: int) -> float:
            t0 = wtime()
            for i in range(n):
                j = i % count
                req = isend(sv[j], peer, TAG)
                recv(rv[j], src, rtag)
                req.Wait()
            return float(wtime() - t0)

        yield run
    else:
        sreq = comm.Send_init(sbufs[0], peer, TAG)
        rreq = comm.Recv_init(rbufs[0], src, rtag)
        s_start, s_wait, r_start, r_wait = sreq.Start, sreq.Wait, rreq.Start, rreq.Wait

        def run(n: int) -> float:
            t0 = wtime()
            for _ in range(n):
                s_start()
                r_start()
                r_wait()
                s_wait()
            return float(wtime() - t0)

        try:
            yield run
        finally:
            _free([sreq, rreq])
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
    comm, wtime = ctx.comm, ctx.MPI.Wtime
    right, left = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    sbufs, rbufs = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, sbufs)
    sv, rv, count = sbufs.views, rbufs.views, sbufs.count
    call: Callable[..., Any] = comm.Sendrecv

    def run(n: int) -> float:
        t0 = wtime()
        for i in range(n):
            j = i % count
            call(sv[j], right, TAG, rv[j], left, TAG)
        return float(wtime() - t0)

    yield run
    expected_bytes(ctx, rbufs, left)


@benchmark("Exchange", suite=SUITE, kind=Kind.PARALLEL_TRANSFER, min_procs=2, bw_scale=4.0,
           sendbuf=2.0, recvbuf=2.0,
           bytes_counted="4X per rank (X sent to and X received from each of both neighbours)")
@contextmanager
def exchange(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Periodic chain: each rank Isends X bytes to its left and right neighbours (from two
    separate send buffers), receives X bytes from each with MPI_Recv, then Waitall.

    Timed: the whole loop; t = loop time / n. Mbytes/sec = 4 X / t_max / 10^6.
    """
    MPI, comm, wtime = ctx.MPI, ctx.comm, ctx.MPI.Wtime
    right, left = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    s_left, s_right = ctx.buffers(nbytes), ctx.buffers(nbytes)
    r_left, r_right = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, s_left)
    fill_send(ctx, s_right)
    count = s_left.count
    isend, recv, waitall = comm.Isend, comm.Recv, MPI.Request.Waitall

    def run(n: int) -> float:
        t0 = wtime()
        for i in range(n):
            j = i % count
            reqs = [isend(s_left[j], left, TAG), isend(s_right[j], right, TAG)]
            recv(r_left[j], left, TAG)
            recv(r_right[j], right, TAG)
            waitall(reqs)
        return float(wtime() - t0)

    yield run
    expected_bytes(ctx, r_left, left)
    expected_bytes(ctx, r_right, right)


def _window(ctx: Ctx, nbytes: int, both: bool) -> Iterator[Runner]:
    """Uniband/Biband: the lower half of the group pairs with the upper half."""
    MPI, comm, wtime = ctx.MPI, ctx.comm, ctx.MPI.Wtime
    half = ctx.size // 2
    window = ctx.cfg.window_size
    if ctx.rank < half:
        peer, sender = ctx.rank + half, True
    elif ctx.rank < 2 * half:
        peer, sender = ctx.rank - half, False
    else:
        peer, sender = MPI.PROC_NULL, False
    sbufs, rbufs = ctx.buffers(nbytes), ctx.buffers(nbytes)
    fill_send(ctx, sbufs)
    ack_s, ack_r = ctx.buffers(0), ctx.buffers(0)
    isend, irecv, waitall = comm.Isend, comm.Irecv, MPI.Request.Waitall
    send, recv = comm.Send, comm.Recv
    count = sbufs.count

    def run(n: int) -> float:
        t0 = wtime()
        for i in range(n):
            j = i % count
            if sender or both:
                reqs = [isend(sbufs[(j + w) % count], peer, TAG) for w in range(window)]
            else:
                reqs = []
            if not sender or both:
                reqs += [irecv(rbufs[(j + w) % count], peer, TAG) for w in range(window)]
            waitall(reqs)
            if both:
                continue
            if sender:
                recv(ack_r[0], peer, TAG + 1)
            else:
                send(ack_s[0], peer, TAG + 1)
        return float(wtime() - t0)

    yield run


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
