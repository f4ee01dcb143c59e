"""IMB-MPI1 collective benchmarks, in IMB 2021.11's default run order.

Timing follows IMB: every call is timed on its own (MPI_Wtime before and after it) and the
times are summed; with ``-sync on`` (the default) an untimed MPI_Barrier follows each call.
The reported time per rank is sum / n; t_min, t_max and t_avg are taken over the ranks.
Barrier is the exception: its n calls are timed as one loop, with no barrier in between.
The loops are compiled (:mod:`beff.core.capi`); under ``-off_cache`` the send and receive
addresses step through their slots (call i uses slot i mod count), each buffer on its own.

Data movement uses ``-data_type`` (MPI_BYTE by default), reductions ``-red_data_type``
(MPI_FLOAT by default) with MPI_SUM; element counts are X / type size (the sizes are already
multiples of it). Count and displacement vectors are int32 arrays built once per size.

Rooted benchmarks (``rooted=True``, IMB's HAS_ROOT) start every batch of calls (every
``run(n)``) with root 0; after each call root = (root + shift) % NP, with shift 1 under
``-root_shift on`` and 0 otherwise. So the default keeps root 0, and ``-root_shift on`` gives
root = i mod NP for the i-th call of a batch. IMB restarts the root at every kernel call too,
but times a size in one call where beff times it in several batches (``--batches``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from beff.bench import check, registry
from beff.bench.ctx import Ctx, Tally
from beff.bench.registry import Kind, Root, Runner
from beff.core import counts as counts_
from beff.core.buffers import BufferSet
from beff.core.capi import (
    F64Array,
    I64Array,
    barrier_loop,
    loop,
    per_iteration_of,
    windowed_of,
)
from beff.core.errors import CollectiveFailure

SUITE = "mpi1"
# Every kernel here moves a message beyond a C int count as block types (beff.core.counts).
benchmark = functools.partial(registry.benchmark, large_counts=True)
C: Any = None  # the C bindings, substituted by the backend

# The names -data_type/-red_data_type accept, as MPI datatype names and numpy dtypes.
MPI_TYPE_NAMES = {"byte": "BYTE", "char": "CHAR", "int": "INT", "float": "FLOAT",
                  "double": "DOUBLE"}
NUMPY_TYPES: dict[str, np.dtype[Any]] = {
    "byte": np.dtype(np.uint8), "char": np.dtype(np.int8), "int": np.dtype(np.int32),
    "float": np.dtype(np.float32), "double": np.dtype(np.float64),
}

# Which MPI call a collective loop makes (one compiled loop serves every benchmark).
(ALLREDUCE, REDUCE, REDUCE_LOCAL, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, ALLGATHER, ALLGATHERV,
 GATHER, GATHERV, SCATTER, SCATTERV, ALLTOALL, ALLTOALLV, BCAST, BARRIER) = range(15)
REDUCTIONS = frozenset({ALLREDUCE, REDUCE, REDUCE_LOCAL, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK})
VECTORS = frozenset({ALLGATHERV, GATHERV, SCATTERV, ALLTOALLV})  # with displacements


@loop
def collective_loop(n: int, call: int, sb: int, sn: int, ss: int, rb: int, rn: int, rs: int,
                    scount: int, rcount: int, counts: int, displs: int, dtype: int, op: int,
                    comm: int, nprocs: int, me: int, shift: int,
                    sync: int) -> tuple[float, int]:
    """Time each call on its own; an untimed MPI_Barrier follows it when ``sync``.

    The root (rooted calls) starts at 0 and moves by ``shift`` after each call. Bcast sends
    from the send buffer on the root and receives into the receive buffer elsewhere.
    """
    err = 0
    acc = 0.0
    root = 0
    for i in range(n):
        s = sb + (i % sn) * ss
        r = rb + (i % rn) * rs
        t1 = C.Wtime()
        if call == ALLREDUCE:
            err |= C.Allreduce(s, r, scount, dtype, op, comm)
        elif call == REDUCE:
            err |= C.Reduce(s, r, scount, dtype, op, root, comm)
        elif call == REDUCE_LOCAL:
            err |= C.Reduce_local(s, r, scount, dtype, op)
        elif call == REDUCE_SCATTER:
            err |= C.Reduce_scatter(s, r, counts, dtype, op, comm)
        elif call == REDUCE_SCATTER_BLOCK:
            err |= C.Reduce_scatter_block(s, r, rcount, dtype, op, comm)
        elif call == ALLGATHER:
            err |= C.Allgather(s, scount, dtype, r, rcount, dtype, comm)
        elif call == ALLGATHERV:
            err |= C.Allgatherv(s, scount, dtype, r, counts, displs, dtype, comm)
        elif call == GATHER:
            err |= C.Gather(s, scount, dtype, r, rcount, dtype, root, comm)
        elif call == GATHERV:
            err |= C.Gatherv(s, scount, dtype, r, counts, displs, dtype, root, comm)
        elif call == SCATTER:
            err |= C.Scatter(s, scount, dtype, r, rcount, dtype, root, comm)
        elif call == SCATTERV:
            err |= C.Scatterv(s, counts, displs, dtype, r, rcount, dtype, root, comm)
        elif call == ALLTOALL:
            err |= C.Alltoall(s, scount, dtype, r, rcount, dtype, comm)
        elif call == ALLTOALLV:
            err |= C.Alltoallv(s, counts, displs, dtype, r, counts, displs, dtype, comm)
        else:
            err |= C.Bcast(s if root == me else r, scount, dtype, root, comm)
        acc += C.Wtime() - t1
        if sync:
            err |= C.Barrier(comm)
        root = (root + shift) % nprocs
    return acc, err


# --sync window's twin (beff.bench.window): the same calls, each at its common start.
@windowed_of(collective_loop)
def collective_window_loop(n: int, call: int, sb: int, sn: int, ss: int, rb: int, rn: int,
                           rs: int, scount: int, rcount: int, counts: int, displs: int,
                           dtype: int, op: int, comm: int, nprocs: int, me: int, shift: int,
                           sync: int, alpha: float, beta: float, t0: float, width: float,
                           ends: F64Array, late: I64Array, share: int
                           ) -> tuple[float, int]:
    """collective_loop under the window start policy (--sync window): call i starts when
    this rank's model of the reference clock shows t0 + i * width (late[i] = 1 if it came
    after that), no barrier follows it, and ends[i] is its end there less that start."""
    err = 0
    root = 0
    for i in range(n):
        s = sb + (i % sn) * ss
        r = rb + (i % rn) * rs
        late[i] = C.window_wait((t0 + i * width - alpha) / beta, share)
        if call == ALLREDUCE:
            err |= C.Allreduce(s, r, scount, dtype, op, comm)
        elif call == REDUCE:
            err |= C.Reduce(s, r, scount, dtype, op, root, comm)
        elif call == REDUCE_LOCAL:
            err |= C.Reduce_local(s, r, scount, dtype, op)
        elif call == REDUCE_SCATTER:
            err |= C.Reduce_scatter(s, r, counts, dtype, op, comm)
        elif call == REDUCE_SCATTER_BLOCK:
            err |= C.Reduce_scatter_block(s, r, rcount, dtype, op, comm)
        elif call == ALLGATHER:
            err |= C.Allgather(s, scount, dtype, r, rcount, dtype, comm)
        elif call == ALLGATHERV:
            err |= C.Allgatherv(s, scount, dtype, r, counts, displs, dtype, comm)
        elif call == GATHER:
            err |= C.Gather(s, scount, dtype, r, rcount, dtype, root, comm)
        elif call == GATHERV:
            err |= C.Gatherv(s, scount, dtype, r, counts, displs, dtype, root, comm)
        elif call == SCATTER:
            err |= C.Scatter(s, scount, dtype, r, rcount, dtype, root, comm)
        elif call == SCATTERV:
            err |= C.Scatterv(s, counts, displs, dtype, r, rcount, dtype, root, comm)
        elif call == ALLTOALL:
            err |= C.Alltoall(s, scount, dtype, r, rcount, dtype, comm)
        elif call == ALLTOALLV:
            err |= C.Alltoallv(s, counts, displs, dtype, r, counts, displs, dtype, comm)
        else:
            err |= C.Bcast(s if root == me else r, scount, dtype, root, comm)
        ends[i] = alpha + beta * C.Wtime() - (t0 + i * width)
        root = (root + shift) % nprocs
    return 0.0, err


# --per-iteration's twin (beff.bench.iterations): the same calls, each one's time kept.
@per_iteration_of(collective_loop)
def collective_iter_loop(n: int, call: int, sb: int, sn: int, ss: int, rb: int, rn: int,
                         rs: int, scount: int, rcount: int, counts: int, displs: int,
                         dtype: int, op: int, comm: int, nprocs: int, me: int, shift: int,
                         sync: int, times: F64Array, stride: int,
                         start: int) -> tuple[float, int]:
    """collective_loop, each call's time recorded (every stride-th)."""
    err = 0
    acc = 0.0
    root = 0
    for i in range(n):
        s = sb + (i % sn) * ss
        r = rb + (i % rn) * rs
        t1 = C.Wtime()
        if call == ALLREDUCE:
            err |= C.Allreduce(s, r, scount, dtype, op, comm)
        elif call == REDUCE:
            err |= C.Reduce(s, r, scount, dtype, op, root, comm)
        elif call == REDUCE_LOCAL:
            err |= C.Reduce_local(s, r, scount, dtype, op)
        elif call == REDUCE_SCATTER:
            err |= C.Reduce_scatter(s, r, counts, dtype, op, comm)
        elif call == REDUCE_SCATTER_BLOCK:
            err |= C.Reduce_scatter_block(s, r, rcount, dtype, op, comm)
        elif call == ALLGATHER:
            err |= C.Allgather(s, scount, dtype, r, rcount, dtype, comm)
        elif call == ALLGATHERV:
            err |= C.Allgatherv(s, scount, dtype, r, counts, displs, dtype, comm)
        elif call == GATHER:
            err |= C.Gather(s, scount, dtype, r, rcount, dtype, root, comm)
        elif call == GATHERV:
            err |= C.Gatherv(s, scount, dtype, r, counts, displs, dtype, root, comm)
        elif call == SCATTER:
            err |= C.Scatter(s, scount, dtype, r, rcount, dtype, root, comm)
        elif call == SCATTERV:
            err |= C.Scatterv(s, counts, displs, dtype, r, rcount, dtype, root, comm)
        elif call == ALLTOALL:
            err |= C.Alltoall(s, scount, dtype, r, rcount, dtype, comm)
        elif call == ALLTOALLV:
            err |= C.Alltoallv(s, counts, displs, dtype, r, counts, displs, dtype, comm)
        else:
            err |= C.Bcast(s if root == me else r, scount, dtype, root, comm)
        took = C.Wtime() - t1
        acc += took
        if (start + i) % stride == 0:
            times[(start + i) // stride] = took
        if sync:
            err |= C.Barrier(comm)
        root = (root + shift) % nprocs
    return acc, err


@dataclass(frozen=True)
class DType:
    """The MPI datatype a kernel uses, with its numpy twin and size in bytes."""

    mpi: Any
    numpy: np.dtype[Any]
    size: int


def dtype_of(ctx: Ctx, reduction: bool) -> DType:
    name = ctx.cfg.options.red_data_type if reduction else ctx.cfg.options.data_type
    np_type = NUMPY_TYPES[name]
    return DType(getattr(ctx.MPI, MPI_TYPE_NAMES[name]), np_type, np_type.itemsize)


class CallArgs(NamedTuple):
    """The arguments every collective loop takes after ``n`` and before the root's step: the
    buffers' slots, counts, equal blocks for the vector calls and the handles."""

    call: int
    sb: int
    sn: int
    ss: int
    rb: int
    rn: int
    rs: int
    scount: int
    rcount: int
    counts: int
    displs: int
    dtype: int
    op: int
    comm: int
    nprocs: int
    me: int


def call_args(ctx: Ctx, call: int, sb: BufferSet, rb: BufferSet, t: DType,
              cnt: int) -> CallArgs:
    """:class:`CallArgs` for ``call`` with ``cnt`` elements per block; vector calls get equal
    blocks (counts[i] = cnt, displs[i] = i * cnt). Where a count or a displacement would pass
    a C int, data move as one element of a block type per block (:mod:`beff.core.counts`)."""
    nprocs = ctx.size
    dtype = t.mpi
    if max(cnt, (nprocs - 1) * cnt if call in VECTORS else 0) > counts_.limit():
        if call in REDUCTIONS:
            raise CollectiveFailure(counts_.too_large_reduction(cnt))
        dtype, cnt = ctx.block(t.mpi, cnt), 1
    counts = np.full(nprocs, cnt, dtype=np.int32)
    displs = (np.arange(nprocs, dtype=np.int64) * cnt).astype(np.int32)
    ctx.keep(counts, displs)
    return CallArgs(call, *sb.slots, *rb.slots, cnt, cnt, int(counts.ctypes.data),
                    int(displs.ctypes.data), ctx.handle(dtype), ctx.handle(ctx.MPI.SUM),
                    ctx.handle(ctx.comm), nprocs, ctx.rank)


def _run(ctx: Ctx, call: int, sb: BufferSet, rb: BufferSet, t: DType, cnt: int,
         tally: Tally) -> Runner:
    """``run(n)`` of :func:`collective_loop` for ``call`` with ``cnt`` elements per block."""
    return ctx.timed(collective_loop, *call_args(ctx, call, sb, rb, t, cnt), root_step(ctx),
                     int(ctx.cfg.options.sync), tally=tally)


# Makes a benchmark's run(n) from its call, buffers, datatype, count and tally.
MakeRun = Callable[[Ctx, int, BufferSet, BufferSet, DType, int, Tally], Runner]


def root_step(ctx: Ctx) -> int:
    """How far the root moves after each call (spec.root_rotation)."""
    rotation = ctx.spec.root_rotation
    return 1 if rotation in (Root.ALWAYS, Root.OVERLAP) or (rotation is Root.FLAG
                                                             and ctx.cfg.options.root_shift) else 0


def _last_root(ctx: Ctx, tally: Tally) -> int:
    """The root of the last call of the last run."""
    return tally.last * root_step(ctx) % ctx.size


def _portions(senders: Any, nbytes: int, total: int, at: int) -> np.ndarray:
    """Concatenation of each sender's check pattern (``total`` bytes) at bytes [at, at+X)."""
    return np.concatenate([check.pattern(p, total)[at : at + nbytes] for p in senders])


def reduction(ctx: Ctx, nbytes: int, call: int, make_run: MakeRun = _run) -> Iterator[Runner]:
    """Every reduction: X bytes of ``-red_data_type`` per rank, or NP*X to reduce-scatter
    (the spec's send_np), MPI_SUM; checked against the sum of every rank's pattern, where this
    rank received it (the root of the last call for rooted ones; its block if scattered)."""
    t = dtype_of(ctx, reduction=True)
    cnt, nprocs = nbytes // t.size, ctx.size
    scattered = ctx.spec.send_np
    sb, rb = ctx.buffers(nprocs * nbytes if scattered else nbytes), ctx.buffers(nbytes)
    check.fill_reduction(ctx, sb, t.numpy)
    tally = Tally()
    yield make_run(ctx, call, sb, rb, t, cnt, tally)
    if not ctx.cfg.check or not cnt or (ctx.spec.rooted and _last_root(ctx, tally) != ctx.rank):
        return
    total = check.red_sum(nprocs, nprocs * cnt if scattered else cnt, t.numpy)
    mine = total[ctx.rank * cnt : (ctx.rank + 1) * cnt] if scattered else total
    check.expect_elements(ctx, rb[tally.last], mine)


Expected = Callable[[Ctx, Tally, int], "np.ndarray | None"]


def moved(ctx: Ctx, nbytes: int, call: int, expected: Expected,
          make_run: MakeRun = _run) -> Iterator[Runner]:
    """Every data-moving collective: X bytes of ``-data_type`` per block, NP blocks where the
    spec says so (send_np/recv_np); checked against ``expected(ctx, tally, X)`` (None: this
    rank received nothing to check)."""
    t = dtype_of(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb = ctx.buffers(nprocs * nbytes if ctx.spec.send_np else nbytes)
    rb = ctx.buffers(nprocs * nbytes if ctx.spec.recv_np else nbytes)
    check.fill_send(ctx, sb)
    tally = Tally()
    yield make_run(ctx, call, sb, rb, t, cnt, tally)
    want = expected(ctx, tally, nbytes) if ctx.cfg.check and nbytes else None
    if want is not None:
        check.expect_bytes(ctx, rb[tally.last], want)


def gathered(ctx: Ctx, tally: Tally, nbytes: int) -> np.ndarray | None:
    """Every rank's X bytes in rank order (at the root of the last call if rooted)."""
    if ctx.spec.rooted and _last_root(ctx, tally) != ctx.rank:
        return None
    return _portions(range(ctx.size), nbytes, nbytes, 0)


def scattered(ctx: Ctx, tally: Tally, nbytes: int) -> np.ndarray:
    """This rank's block of the root's NP*X bytes."""
    return _portions([_last_root(ctx, tally)], nbytes, ctx.size * nbytes, ctx.rank * nbytes)


def exchanged(ctx: Ctx, tally: Tally, nbytes: int) -> np.ndarray:
    """This rank's block of every rank's NP*X bytes, in rank order."""
    return _portions(range(ctx.size), nbytes, ctx.size * nbytes, ctx.rank * nbytes)


# ----------------------------------------------------------------------------- reductions
@benchmark("Allreduce", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True,
           bytes_counted="X per rank in the send and in the receive buffer; no bandwidth")
@contextmanager
def allreduce(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Allreduce of X bytes (X / size(red type) elements, MPI_SUM) on all NP ranks.

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from reduction(ctx, nbytes, ALLREDUCE)


@benchmark("Reduce", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True, rooted=True,
           bytes_counted="X per rank sent; X received at the root; no bandwidth")
@contextmanager
def reduce(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Reduce of X bytes (X / size(red type) elements, MPI_SUM) to the root.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from reduction(ctx, nbytes, REDUCE)


@benchmark("Reduce_local", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True,
           bytes_counted="X per rank read from the input and X from the inout buffer")
@contextmanager
def reduce_local(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Reduce_local (MPI_SUM) of an X-byte input into an X-byte inout buffer, on every rank.

    No communication, but run on all NP ranks like a collective: the inout buffer accumulates
    every call. Timed: each call separately; t = sum of call times / n (the -sync barrier is
    untimed).
    """
    t = dtype_of(ctx, reduction=True)
    cnt = nbytes // t.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nbytes)
    check.fill_reduction(ctx, sb, t.numpy)
    tally = Tally()
    yield _run(ctx, REDUCE_LOCAL, sb, rb, t, cnt, tally)
    if ctx.cfg.check and cnt:
        mine = check.red_pattern(ctx.rank, cnt, t.numpy).astype(np.int64)
        for j in range(rb.count):
            # The inout buffer keeps accumulating (as in IMB): slot j holds uses * input.
            uses = tally.uses(j, rb.count)
            check.expect_elements(ctx, rb[j], (mine * uses).astype(t.numpy))


@benchmark("Reduce_scatter", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True, send_np=True,
           bytes_counted="NP*X per rank sent, X per rank received; no bandwidth")
@contextmanager
def reduce_scatter(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Reduce_scatter (MPI_SUM) of an NP*X-byte vector; recvcounts[i] = X / size(red type)
    for every rank i, so each rank receives its X-byte block of the sum.

    These are IMB 2021.11's semantics; the IMB 4.0 guide's split of X "as evenly as possible"
    over the ranks is the legacy variant (IMB2018 builds only). Timed: each call separately;
    t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from reduction(ctx, nbytes, REDUCE_SCATTER)


@benchmark("Reduce_scatter_block", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True,
           send_np=True, bytes_counted="NP*X per rank sent, X per rank received; no bandwidth")
@contextmanager
def reduce_scatter_block(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Reduce_scatter_block (MPI_SUM) of an NP*X-byte vector; every rank receives its
    X-byte block (X / size(red type) elements) of the sum.

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from reduction(ctx, nbytes, REDUCE_SCATTER_BLOCK)


# ----------------------------------------------------------------------------- gathers
@benchmark("Allgather", suite=SUITE, kind=Kind.COLLECTIVE, recv_np=True,
           bytes_counted="X per rank sent, NP*X per rank received; no bandwidth")
@contextmanager
def allgather(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Allgather: every rank contributes X bytes and receives all NP blocks (NP*X bytes).

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from moved(ctx, nbytes, ALLGATHER, gathered)


@benchmark("Allgatherv", suite=SUITE, kind=Kind.COLLECTIVE, recv_np=True,
           bytes_counted="X per rank sent, NP*X per rank received; no bandwidth")
@contextmanager
def allgatherv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Allgatherv with equal blocks: recvcounts[i] = X / size(type), displs[i] = i * that.

    Same data as Allgather; it shows the cost of the vector interface. Timed: each call
    separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from moved(ctx, nbytes, ALLGATHERV, gathered)


@benchmark("Gather", suite=SUITE, kind=Kind.COLLECTIVE, recv_np=True, rooted=True,
           bytes_counted="X per rank sent, NP*X received at the root; no bandwidth")
@contextmanager
def gather(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Gather: every rank sends X bytes, the root receives all NP blocks (NP*X bytes).

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from moved(ctx, nbytes, GATHER, gathered)


@benchmark("Gatherv", suite=SUITE, kind=Kind.COLLECTIVE, recv_np=True, rooted=True,
           bytes_counted="X per rank sent, NP*X received at the root; no bandwidth")
@contextmanager
def gatherv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Gatherv with equal blocks: recvcounts[i] = X / size(type), displs[i] = i * that.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from moved(ctx, nbytes, GATHERV, gathered)


# ----------------------------------------------------------------------------- scatters
@benchmark("Scatter", suite=SUITE, kind=Kind.COLLECTIVE, send_np=True, rooted=True,
           bytes_counted="NP*X sent by the root, X per rank received; no bandwidth")
@contextmanager
def scatter(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Scatter: the root sends block i (X bytes) of an NP*X-byte buffer to rank i.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from moved(ctx, nbytes, SCATTER, scattered)


@benchmark("Scatterv", suite=SUITE, kind=Kind.COLLECTIVE, send_np=True, rooted=True,
           bytes_counted="NP*X sent by the root, X per rank received; no bandwidth")
@contextmanager
def scatterv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Scatterv with equal blocks: sendcounts[i] = X / size(type), displs[i] = i * that.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from moved(ctx, nbytes, SCATTERV, scattered)


# ----------------------------------------------------------------------------- all-to-all
@benchmark("Alltoall", suite=SUITE, kind=Kind.COLLECTIVE, send_np=True, recv_np=True,
           bytes_counted="NP*X per rank sent and NP*X received (X to and from every rank)")
@contextmanager
def alltoall(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Alltoall: every rank sends a distinct X-byte block to every rank (itself included).

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from moved(ctx, nbytes, ALLTOALL, exchanged)


@benchmark("Alltoallv", suite=SUITE, kind=Kind.COLLECTIVE, send_np=True, recv_np=True,
           bytes_counted="NP*X per rank sent and NP*X received (X to and from every rank)")
@contextmanager
def alltoallv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Alltoallv with equal blocks: all counts X / size(type), displs[i] = i * count.

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from moved(ctx, nbytes, ALLTOALLV, exchanged)


# ----------------------------------------------------------------------------- bcast, barrier
@benchmark("Bcast", suite=SUITE, kind=Kind.COLLECTIVE, rooted=True,
           bytes_counted="X sent by the root, X received per other rank; no bandwidth")
@contextmanager
def bcast(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Bcast of X bytes from the root, which sends from its send buffer (so it is never
    overwritten) while the other ranks receive into their receive buffer.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    yield from broadcast(ctx, nbytes)


def broadcast(ctx: Ctx, nbytes: int, make_run: MakeRun = _run) -> Iterator[Runner]:
    """A Bcast kernel: X bytes of ``-data_type``; checked on every rank but the last root."""
    t = dtype_of(ctx, reduction=False)
    cnt = nbytes // t.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nbytes)
    check.fill_send(ctx, sb)
    tally = Tally()
    yield make_run(ctx, BCAST, sb, rb, t, cnt, tally)
    root = _last_root(ctx, tally)
    if ctx.cfg.check and nbytes and root != ctx.rank:
        check.expect_bytes(ctx, rb[tally.last], check.pattern(root, nbytes))


@benchmark("Barrier", suite=SUITE, kind=Kind.SYNC, sendbuf=0.0, recvbuf=0.0,
           bytes_counted="none")
@contextmanager
def barrier(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Barrier on all NP ranks; runs once per process count (no message size).

    Timed: the whole loop of n MPI_Barrier calls (no extra barrier between them); t = loop / n.
    """
    yield ctx.timed(barrier_loop, ctx.handle(ctx.comm))
