"""IMB-MPI1 collective benchmarks, in IMB 2021.11's default run order.

Timing follows IMB: every call is timed on its own (MPI.Wtime before and after it) and the
times are summed; with ``-sync on`` (the default) an untimed MPI_Barrier separates the calls.
The reported time per rank is sum / n; t_min, t_max and t_avg are taken over the ranks.
Barrier is the exception: its n calls are timed as one loop, with no barrier in between.

Data movement uses ``-data_type`` (MPI_BYTE by default), reductions ``-red_data_type``
(MPI_FLOAT by default) with MPI_SUM; element counts are X / type size (the sizes are already
multiples of it). Buffers are uint8 numpy arrays passed as ``[buffer, count, datatype]`` specs,
built once per message size together with every count and displacement list.

Rooted benchmarks (``rooted=True``, IMB's HAS_ROOT) start every batch of calls (every
``run(n)``) with root 0; after each call root = (root + shift) % NP, with shift 1 under
``-root_shift on`` and 0 otherwise. So the default keeps root 0, and ``-root_shift on`` gives
root = i mod NP for the i-th call of a batch. IMB restarts the root at every kernel call too,
but times a size in one call where beff times it in several batches (``--batches``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from beff.core.buffers import BufferSet
from beff.imb import check
from beff.imb.driver import Ctx
from beff.imb.registry import Kind, Runner, benchmark

SUITE = "mpi1"

# The names -data_type/-red_data_type accept, as MPI datatype names and numpy dtypes.
MPI_TYPE_NAMES = {"byte": "BYTE", "char": "CHAR", "int": "INT", "float": "FLOAT",
                  "double": "DOUBLE"}
NUMPY_TYPES: dict[str, np.dtype[Any]] = {
    "byte": np.dtype(np.uint8), "char": np.dtype(np.int8), "int": np.dtype(np.int32),
    "float": np.dtype(np.float32), "double": np.dtype(np.float64),
}
# Off-cache slot cycles of the send and receive buffers are combined exactly (lcm) up to this
# many precomputed calls; beyond it they advance together modulo the larger cycle.
MAX_CALL_CYCLE = 4096

Spec = list[Any]


@dataclass(frozen=True)
class DType:
    """The MPI datatype a kernel uses, with its numpy twin and size in bytes."""

    mpi: Any
    numpy: np.dtype[Any]
    size: int


def _dtype(ctx: Ctx, reduction: bool) -> DType:
    name = ctx.cfg.red_data_type if reduction else ctx.cfg.data_type
    np_type = NUMPY_TYPES[name]
    return DType(getattr(ctx.MPI, MPI_TYPE_NAMES[name]), np_type, np_type.itemsize)


def _specs(bufs: BufferSet, count: Any, dtype: DType) -> list[Spec]:
    """One ``[view, count, datatype]`` buffer spec per off-cache slot."""
    return [[view, count, dtype.mpi] for view in bufs.views]


def _cycle(*lengths: int) -> int:
    """How many distinct per-iteration calls the off-cache slot cycles need."""
    k = math.lcm(*lengths)
    return k if k <= MAX_CALL_CYCLE else max(lengths)


def _calls(fn: Callable[..., Any], *per_slot: Sequence[Any], extra: tuple[Any, ...] = ()
           ) -> list[Callable[..., Any]]:
    """Pre-bound calls ``fn(slot args..., *extra)``, one per step of the off-cache cycle.

    Each argument list cycles on its own, as IMB steps send and receive buffers separately.
    """
    k = _cycle(*(len(a) for a in per_slot))
    return [partial(fn, *(a[j % len(a)] for a in per_slot), *extra) for j in range(k)]


class Tally:
    """The iteration counts of a kernel's run() calls, for checking after the timed loop."""

    def __init__(self) -> None:
        self.runs: list[int] = []

    @property
    def last(self) -> int:
        """Index of the last call of the last run (the one whose data the check sees)."""
        return self.runs[-1] - 1 if self.runs else -1

    def uses(self, slot: int, cycle: int) -> int:
        """How many calls used off-cache slot ``slot`` of a ``cycle``-long cycle, in all runs."""
        return sum((n - slot + cycle - 1) // cycle for n in self.runs if n > slot)


def _loop(ctx: Ctx, calls: Sequence[Callable[[], Any]], tally: Tally) -> Runner:
    """Time each call separately; an untimed barrier follows each call under ``-sync on``."""
    wtime, barrier, sync = ctx.MPI.Wtime, ctx.comm.Barrier, ctx.cfg.sync
    k = len(calls)
    if k == 1:
        call = calls[0]

        def run(n: int) -> float:
            acc = 0.0
            for _ in range(n):
                t1 = wtime()
                call()
                acc += wtime() - t1
                if sync:
                    barrier()
            tally.runs.append(n)
            return acc

    else:

        def run(n: int) -> float:
            acc = 0.0
            for i in range(n):
                call = calls[i % k]
                t1 = wtime()
                call()
                acc += wtime() - t1
                if sync:
                    barrier()
            tally.runs.append(n)
            return acc

    return run


def _rooted_loop(ctx: Ctx, calls: Sequence[Callable[[int], Any]], tally: Tally,
                 own: Sequence[Callable[[int], Any]] | None = None) -> Runner:
    """As :func:`_loop`, passing the root; ``own`` are the calls used while this rank is root.

    The root restarts at 0 in every run() and moves by ``-root_shift`` (0 or 1) per call.
    """
    wtime, barrier, sync = ctx.MPI.Wtime, ctx.comm.Barrier, ctx.cfg.sync
    me, nprocs = ctx.rank, ctx.size
    shift = 1 if ctx.cfg.root_shift else 0
    others = calls
    mine = calls if own is None else own
    k = len(calls)

    def run(n: int) -> float:
        acc = 0.0
        root = 0
        for i in range(n):
            call = (mine if root == me else others)[i % k]
            t1 = wtime()
            call(root)
            acc += wtime() - t1
            if sync:
                barrier()
            root = (root + shift) % nprocs
        tally.runs.append(n)
        return acc

    return run


def _last_root(ctx: Ctx, tally: Tally) -> int:
    """The root of the last call of the last run."""
    return tally.last % ctx.size if ctx.cfg.root_shift else 0


def _slot(bufs: BufferSet, cycle: int, tally: Tally) -> np.ndarray:
    """The view of ``bufs`` that the last call of the last run used."""
    return bufs[(tally.last % cycle) % bufs.count]


def _portions(senders: Sequence[int], nbytes: int, total: int, at: int) -> np.ndarray:
    """Concatenation of each sender's check pattern (``total`` bytes) at bytes [at, at+X)."""
    return np.concatenate([check.pattern(p, total)[at : at + nbytes] for p in senders])


# ----------------------------------------------------------------------------- reductions
@benchmark("Allreduce", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True,
           bytes_counted="X per rank in the send and in the receive buffer; no bandwidth")
@contextmanager
def allreduce(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Allreduce of X bytes (X / size(red type) elements, MPI_SUM) on all NP ranks.

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=True)
    cnt = nbytes // t.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nbytes)
    check.fill_reduction(ctx, sb, t.numpy)
    calls = _calls(ctx.comm.Allreduce, _specs(sb, cnt, t), _specs(rb, cnt, t),
                   extra=(ctx.MPI.SUM,))
    tally = Tally()
    yield _loop(ctx, calls, tally)
    if ctx.cfg.check and cnt:
        got = _slot(rb, len(calls), tally)
        check.expect_elements(ctx, got, check.red_sum(ctx.size, cnt, t.numpy))


@benchmark("Reduce", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True, rooted=True,
           bytes_counted="X per rank sent; X received at the root; no bandwidth")
@contextmanager
def reduce(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Reduce of X bytes (X / size(red type) elements, MPI_SUM) to the root.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=True)
    cnt = nbytes // t.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nbytes)
    check.fill_reduction(ctx, sb, t.numpy)
    calls = _calls(ctx.comm.Reduce, _specs(sb, cnt, t), _specs(rb, cnt, t),
                   extra=(ctx.MPI.SUM,))
    tally = Tally()
    yield _rooted_loop(ctx, calls, tally)
    if ctx.cfg.check and cnt and _last_root(ctx, tally) == ctx.rank:
        got = _slot(rb, len(calls), tally)
        check.expect_elements(ctx, got, check.red_sum(ctx.size, cnt, t.numpy))


@benchmark("Reduce_local", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True,
           bytes_counted="X per rank read from the input and X from the inout buffer")
@contextmanager
def reduce_local(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Reduce_local (MPI_SUM) of an X-byte input into an X-byte inout buffer, on every rank.

    No communication, but run on all NP ranks like a collective: the inout buffer accumulates
    every call. Timed: each call separately; t = sum of call times / n (the -sync barrier is
    untimed).
    """
    t = _dtype(ctx, reduction=True)
    cnt = nbytes // t.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nbytes)
    check.fill_reduction(ctx, sb, t.numpy)
    calls = _calls(ctx.MPI.SUM.Reduce_local, _specs(sb, cnt, t), _specs(rb, cnt, t))
    tally = Tally()
    yield _loop(ctx, calls, tally)
    if ctx.cfg.check and cnt:
        cycle = len(calls)
        mine = check.red_pattern(ctx.rank, cnt, t.numpy).astype(np.int64)
        for j in range(rb.count):
            # The inout buffer keeps accumulating (as in IMB): slot j holds uses * input.
            uses = sum(tally.uses(c, cycle) for c in range(j, cycle, rb.count))
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
    t = _dtype(ctx, reduction=True)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nprocs * nbytes), ctx.buffers(nbytes)
    check.fill_reduction(ctx, sb, t.numpy)
    recvcounts = (cnt,) * nprocs
    calls = _calls(ctx.comm.Reduce_scatter, _specs(sb, nprocs * cnt, t), _specs(rb, cnt, t),
                   extra=(recvcounts, ctx.MPI.SUM))
    tally = Tally()
    yield _loop(ctx, calls, tally)
    if ctx.cfg.check and cnt:
        total = check.red_sum(nprocs, nprocs * cnt, t.numpy)
        mine = total[ctx.rank * cnt : (ctx.rank + 1) * cnt]
        check.expect_elements(ctx, _slot(rb, len(calls), tally), mine)


@benchmark("Reduce_scatter_block", suite=SUITE, kind=Kind.COLLECTIVE, reduction=True,
           send_np=True, bytes_counted="NP*X per rank sent, X per rank received; no bandwidth")
@contextmanager
def reduce_scatter_block(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Reduce_scatter_block (MPI_SUM) of an NP*X-byte vector; every rank receives its
    X-byte block (X / size(red type) elements) of the sum.

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=True)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nprocs * nbytes), ctx.buffers(nbytes)
    check.fill_reduction(ctx, sb, t.numpy)
    # mpi4py reads the send spec's count per block, as for Scatter.
    calls = _calls(ctx.comm.Reduce_scatter_block, _specs(sb, cnt, t), _specs(rb, cnt, t),
                   extra=(ctx.MPI.SUM,))
    tally = Tally()
    yield _loop(ctx, calls, tally)
    if ctx.cfg.check and cnt:
        total = check.red_sum(nprocs, nprocs * cnt, t.numpy)
        mine = total[ctx.rank * cnt : (ctx.rank + 1) * cnt]
        check.expect_elements(ctx, _slot(rb, len(calls), tally), mine)


# ----------------------------------------------------------------------------- gathers
@benchmark("Allgather", suite=SUITE, kind=Kind.COLLECTIVE, recv_np=True,
           bytes_counted="X per rank sent, NP*X per rank received; no bandwidth")
@contextmanager
def allgather(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Allgather: every rank contributes X bytes and receives all NP blocks (NP*X bytes).

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nprocs * nbytes)
    check.fill_send(ctx, sb)
    calls = _calls(ctx.comm.Allgather, _specs(sb, cnt, t), _specs(rb, cnt, t))
    tally = Tally()
    yield _loop(ctx, calls, tally)
    if ctx.cfg.check and nbytes:
        check.expect_bytes(ctx, _slot(rb, len(calls), tally),
                           _portions(range(nprocs), nbytes, nbytes, 0))


@benchmark("Allgatherv", suite=SUITE, kind=Kind.COLLECTIVE, recv_np=True,
           bytes_counted="X per rank sent, NP*X per rank received; no bandwidth")
@contextmanager
def allgatherv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Allgatherv with equal blocks: recvcounts[i] = X / size(type), displs[i] = i * that.

    Same data as Allgather; it shows the cost of the vector interface. Timed: each call
    separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nprocs * nbytes)
    check.fill_send(ctx, sb)
    layout = ((cnt,) * nprocs, tuple(i * cnt for i in range(nprocs)))
    calls = _calls(ctx.comm.Allgatherv, _specs(sb, cnt, t), _specs(rb, layout, t))
    tally = Tally()
    yield _loop(ctx, calls, tally)
    if ctx.cfg.check and nbytes:
        check.expect_bytes(ctx, _slot(rb, len(calls), tally),
                           _portions(range(nprocs), nbytes, nbytes, 0))


@benchmark("Gather", suite=SUITE, kind=Kind.COLLECTIVE, recv_np=True, rooted=True,
           bytes_counted="X per rank sent, NP*X received at the root; no bandwidth")
@contextmanager
def gather(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Gather: every rank sends X bytes, the root receives all NP blocks (NP*X bytes).

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nprocs * nbytes)
    check.fill_send(ctx, sb)
    calls = _calls(ctx.comm.Gather, _specs(sb, cnt, t), _specs(rb, cnt, t))
    tally = Tally()
    yield _rooted_loop(ctx, calls, tally)
    if ctx.cfg.check and nbytes and _last_root(ctx, tally) == ctx.rank:
        check.expect_bytes(ctx, _slot(rb, len(calls), tally),
                           _portions(range(nprocs), nbytes, nbytes, 0))


@benchmark("Gatherv", suite=SUITE, kind=Kind.COLLECTIVE, recv_np=True, rooted=True,
           bytes_counted="X per rank sent, NP*X received at the root; no bandwidth")
@contextmanager
def gatherv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Gatherv with equal blocks: recvcounts[i] = X / size(type), displs[i] = i * that.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nprocs * nbytes)
    check.fill_send(ctx, sb)
    layout = ((cnt,) * nprocs, tuple(i * cnt for i in range(nprocs)))
    calls = _calls(ctx.comm.Gatherv, _specs(sb, cnt, t), _specs(rb, layout, t))
    tally = Tally()
    yield _rooted_loop(ctx, calls, tally)
    if ctx.cfg.check and nbytes and _last_root(ctx, tally) == ctx.rank:
        check.expect_bytes(ctx, _slot(rb, len(calls), tally),
                           _portions(range(nprocs), nbytes, nbytes, 0))


# ----------------------------------------------------------------------------- scatters
@benchmark("Scatter", suite=SUITE, kind=Kind.COLLECTIVE, send_np=True, rooted=True,
           bytes_counted="NP*X sent by the root, X per rank received; no bandwidth")
@contextmanager
def scatter(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Scatter: the root sends block i (X bytes) of an NP*X-byte buffer to rank i.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nprocs * nbytes), ctx.buffers(nbytes)
    check.fill_send(ctx, sb)
    calls = _calls(ctx.comm.Scatter, _specs(sb, cnt, t), _specs(rb, cnt, t))
    tally = Tally()
    yield _rooted_loop(ctx, calls, tally)
    if ctx.cfg.check and nbytes:
        root = _last_root(ctx, tally)
        check.expect_bytes(ctx, _slot(rb, len(calls), tally),
                           _portions([root], nbytes, nprocs * nbytes, ctx.rank * nbytes))


@benchmark("Scatterv", suite=SUITE, kind=Kind.COLLECTIVE, send_np=True, rooted=True,
           bytes_counted="NP*X sent by the root, X per rank received; no bandwidth")
@contextmanager
def scatterv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Scatterv with equal blocks: sendcounts[i] = X / size(type), displs[i] = i * that.

    Root 0; -root_shift on moves it one rank per call, back to 0 at each batch.
    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nprocs * nbytes), ctx.buffers(nbytes)
    check.fill_send(ctx, sb)
    layout = ((cnt,) * nprocs, tuple(i * cnt for i in range(nprocs)))
    calls = _calls(ctx.comm.Scatterv, _specs(sb, layout, t), _specs(rb, cnt, t))
    tally = Tally()
    yield _rooted_loop(ctx, calls, tally)
    if ctx.cfg.check and nbytes:
        root = _last_root(ctx, tally)
        check.expect_bytes(ctx, _slot(rb, len(calls), tally),
                           _portions([root], nbytes, nprocs * nbytes, ctx.rank * nbytes))


# ----------------------------------------------------------------------------- all-to-all
@benchmark("Alltoall", suite=SUITE, kind=Kind.COLLECTIVE, send_np=True, recv_np=True,
           bytes_counted="NP*X per rank sent and NP*X received (X to and from every rank)")
@contextmanager
def alltoall(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Alltoall: every rank sends a distinct X-byte block to every rank (itself included).

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nprocs * nbytes), ctx.buffers(nprocs * nbytes)
    check.fill_send(ctx, sb)
    calls = _calls(ctx.comm.Alltoall, _specs(sb, cnt, t), _specs(rb, cnt, t))
    tally = Tally()
    yield _loop(ctx, calls, tally)
    if ctx.cfg.check and nbytes:
        check.expect_bytes(ctx, _slot(rb, len(calls), tally),
                           _portions(range(nprocs), nbytes, nprocs * nbytes, ctx.rank * nbytes))


@benchmark("Alltoallv", suite=SUITE, kind=Kind.COLLECTIVE, send_np=True, recv_np=True,
           bytes_counted="NP*X per rank sent and NP*X received (X to and from every rank)")
@contextmanager
def alltoallv(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Alltoallv with equal blocks: all counts X / size(type), displs[i] = i * count.

    Timed: each call separately; t = sum of call times / n (the -sync barrier is untimed).
    """
    t = _dtype(ctx, reduction=False)
    cnt, nprocs = nbytes // t.size, ctx.size
    sb, rb = ctx.buffers(nprocs * nbytes), ctx.buffers(nprocs * nbytes)
    check.fill_send(ctx, sb)
    layout = ((cnt,) * nprocs, tuple(i * cnt for i in range(nprocs)))
    calls = _calls(ctx.comm.Alltoallv, _specs(sb, layout, t), _specs(rb, layout, t))
    tally = Tally()
    yield _loop(ctx, calls, tally)
    if ctx.cfg.check and nbytes:
        check.expect_bytes(ctx, _slot(rb, len(calls), tally),
                           _portions(range(nprocs), nbytes, nprocs * nbytes, ctx.rank * nbytes))


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
    t = _dtype(ctx, reduction=False)
    cnt = nbytes // t.size
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nbytes)
    check.fill_send(ctx, sb)
    own = _calls(ctx.comm.Bcast, _specs(sb, cnt, t))
    calls = _calls(ctx.comm.Bcast, _specs(rb, cnt, t))
    tally = Tally()
    yield _rooted_loop(ctx, calls, tally, own=own)
    root = _last_root(ctx, tally)
    if ctx.cfg.check and nbytes and root != ctx.rank:
        check.expect_bytes(ctx, _slot(rb, len(calls), tally), check.pattern(root, nbytes))


@benchmark("Barrier", suite=SUITE, kind=Kind.SYNC, sendbuf=0.0, recvbuf=0.0,
           bytes_counted="none")
@contextmanager
def barrier(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Barrier on all NP ranks; runs once per process count (no message size).

    Timed: the whole loop of n MPI_Barrier calls (no extra barrier between them); t = loop / n.
    """
    wtime, call = ctx.MPI.Wtime, ctx.comm.Barrier

    def run(n: int) -> float:
        t0 = wtime()
        for _ in range(n):
            call()
        return float(wtime() - t0)

    yield run
