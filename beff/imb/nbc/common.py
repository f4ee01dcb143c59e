"""What IMB-NBC and IMB-MPI4 share: the overlap measurement of IMB 2021.11, its compiled loops,
and one declaration per collective from which both suites register their benchmarks.

An overlap benchmark (Ibcast, Bcast_persist, ...) runs, for every batch of n iterations:

1. two barriers, then the **pure** pass: n times start the collective (the nonblocking call,
   or MPI_Start of a persistent request) and wait for it; t_pure = the sum of the
   per-iteration times / n;
2. the **calibration**: the CPU kernel (:mod:`beff.core.cpu`) is sized to take this rank's
   t_pure; the units it gets are stored with the size (``cpu_units``, ``cpu_units_per_s``);
3. two barriers, then the **overlap** pass: n times start, run the CPU kernel, wait;
   t_ovrl = the sum of per-iteration times, t_CPU = the sum of the kernel's times, both / n.

Every iteration is timed on its own (MPI_Wtime around it); with ``-sync on`` an untimed
barrier follows it. Ibarrier and Barrier_persist time their n iterations as one loop. The
``*_pure`` benchmarks run the pure pass only. Reported, as IMB: t_ovrl, t_pure and t_CPU of
the rank with the largest t_ovrl, and overlap[%] = 100 * max(0, min(1, (t_pure + t_CPU -
t_ovrl) / max(t_pure, t_CPU))); the ``_pure`` tables give t_min/t_max/t_avg over ranks.

Persistent requests are created before each pass (untimed) and freed after it, with the root
0 and the first buffer, as IMB does: ``-root_shift`` and ``-off_cache`` do not change them.
IMB-NBC's Ireduce moves its root every call of the overlap pass (root = i mod NP), whatever
``-root_shift`` says; its pure pass (and Ireduce_pure) follow ``-root_shift``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from beff.bench.ctx import Ctx, Tally
from beff.bench.registry import Kind, Metric, Root, Runner, benchmark, load_suite
from beff.core import capi, cpu
from beff.core.buffers import BufferSet
from beff.core.capi import F32Array, F64Array, I64Array, loop, windowed_of
from beff.imb.mpi1 import coll
from beff.imb.mpi1.coll import (
    ALLGATHER,
    ALLGATHERV,
    ALLREDUCE,
    ALLTOALL,
    ALLTOALLV,
    BARRIER,
    BCAST,
    GATHER,
    GATHERV,
    REDUCE,
    REDUCE_SCATTER,
    SCATTER,
    SCATTERV,
    DType,
)

C: Any = None  # the C bindings, substituted by the backend
N_BARR = 2

T_OVRL = Metric("t_ovrl", "time per iteration of start, CPU kernel and wait")
T_PURE = Metric("t_pure", "time per iteration of start and wait")
T_CPU = Metric("t_cpu", "time per iteration of the CPU kernel in the overlap pass")
OVERLAP_METRICS = (T_OVRL, T_PURE, T_CPU)
OVERLAP_COLUMNS = ("bytes", "repetitions", "t_ovrl", "t_pure", "t_cpu", "overlap")


@loop
def overlap_loop(n: int, units: int, nbarr: int, persistent: int, work: F32Array, call: int,
                 sb: int, sn: int, ss: int, rb: int, rn: int, rs: int, scount: int,
                 rcount: int, counts: int, displs: int, dtype: int, op: int, comm: int,
                 nprocs: int, me: int, shift: int, sync: int, req: int,
                 st: int) -> tuple[float, float, int]:
    """One pass: ``nbarr`` barriers, then n times start (MPI_Start of the persistent request
    ``req`` or the nonblocking ``call``), the CPU kernel (``units`` >= 0) and MPI_Wait.

    Returns (the summed per-iteration times, the summed CPU kernel times, OR of error codes).
    Barrier: the n iterations are timed as one loop, with no -sync barrier between them.
    """
    err = 0
    for _ in range(nbarr):
        err |= C.Barrier(comm)
    acc = 0.0
    comp = 0.0
    root = 0
    whole = call == BARRIER
    t_loop = C.Wtime()
    for i in range(n):
        s = sb + (i % sn) * ss
        r = rb + (i % rn) * rs
        t1 = C.Wtime()
        if persistent:
            err |= C.Start(req)
        elif call == ALLREDUCE:
            err |= C.Iallreduce(s, r, scount, dtype, op, comm, req)
        elif call == REDUCE:
            err |= C.Ireduce(s, r, scount, dtype, op, root, comm, req)
        elif call == REDUCE_SCATTER:
            err |= C.Ireduce_scatter(s, r, counts, dtype, op, comm, req)
        elif call == ALLGATHER:
            err |= C.Iallgather(s, scount, dtype, r, rcount, dtype, comm, req)
        elif call == ALLGATHERV:
            err |= C.Iallgatherv(s, scount, dtype, r, counts, displs, dtype, comm, req)
        elif call == GATHER:
            err |= C.Igather(s, scount, dtype, r, rcount, dtype, root, comm, req)
        elif call == GATHERV:
            err |= C.Igatherv(s, scount, dtype, r, counts, displs, dtype, root, comm, req)
        elif call == SCATTER:
            err |= C.Iscatter(s, scount, dtype, r, rcount, dtype, root, comm, req)
        elif call == SCATTERV:
            err |= C.Iscatterv(s, counts, displs, dtype, r, rcount, dtype, root, comm, req)
        elif call == ALLTOALL:
            err |= C.Ialltoall(s, scount, dtype, r, rcount, dtype, comm, req)
        elif call == ALLTOALLV:
            err |= C.Ialltoallv(s, counts, displs, dtype, r, counts, displs, dtype, comm, req)
        elif call == BCAST:
            err |= C.Ibcast(s if root == me else r, scount, dtype, root, comm, req)
        else:
            err |= C.Ibarrier(comm, req)
        if units >= 0:
            tc = C.Wtime()
            C.cpu_exploit(units, work)
            comp += C.Wtime() - tc
        err |= C.Wait(req, st)
        if not whole:
            acc += C.Wtime() - t1
            if sync:
                err |= C.Barrier(comm)
            root = (root + shift) % nprocs
    if whole:
        acc = C.Wtime() - t_loop
    return acc, comp, err


# --sync window's twin (beff.bench.window): the same calls, each at its common start.
@windowed_of(overlap_loop)
def overlap_window_loop(n: int, units: int, nbarr: int, persistent: int, work: F32Array,
                        call: int, sb: int, sn: int, ss: int, rb: int, rn: int, rs: int,
                        scount: int, rcount: int, counts: int, displs: int, dtype: int,
                        op: int, comm: int,
                        nprocs: int, me: int, shift: int, sync: int, req: int, st: int,
                        alpha: float, beta: float, t0: float, width: float, ends: F64Array,
                        late: I64Array, share: int) -> tuple[float, float, int]:
    """overlap_loop under the window start policy (--sync window): call i (Barrier too)
    starts when this rank's model of the reference clock shows t0 + i * width (late[i] = 1
    if it came after that), no -sync barrier follows it, and ends[i] is its end there less
    that start. Returns (0, the summed CPU kernel times, OR of error codes)."""
    err = 0
    for _ in range(nbarr):
        err |= C.Barrier(comm)
    comp = 0.0
    root = 0
    for i in range(n):
        s = sb + (i % sn) * ss
        r = rb + (i % rn) * rs
        late[i] = C.window_wait((t0 + i * width - alpha) / beta, share)
        if persistent:
            err |= C.Start(req)
        elif call == ALLREDUCE:
            err |= C.Iallreduce(s, r, scount, dtype, op, comm, req)
        elif call == REDUCE:
            err |= C.Ireduce(s, r, scount, dtype, op, root, comm, req)
        elif call == REDUCE_SCATTER:
            err |= C.Ireduce_scatter(s, r, counts, dtype, op, comm, req)
        elif call == ALLGATHER:
            err |= C.Iallgather(s, scount, dtype, r, rcount, dtype, comm, req)
        elif call == ALLGATHERV:
            err |= C.Iallgatherv(s, scount, dtype, r, counts, displs, dtype, comm, req)
        elif call == GATHER:
            err |= C.Igather(s, scount, dtype, r, rcount, dtype, root, comm, req)
        elif call == GATHERV:
            err |= C.Igatherv(s, scount, dtype, r, counts, displs, dtype, root, comm, req)
        elif call == SCATTER:
            err |= C.Iscatter(s, scount, dtype, r, rcount, dtype, root, comm, req)
        elif call == SCATTERV:
            err |= C.Iscatterv(s, counts, displs, dtype, r, rcount, dtype, root, comm, req)
        elif call == ALLTOALL:
            err |= C.Ialltoall(s, scount, dtype, r, rcount, dtype, comm, req)
        elif call == ALLTOALLV:
            err |= C.Ialltoallv(s, counts, displs, dtype, r, counts, displs, dtype, comm, req)
        elif call == BCAST:
            err |= C.Ibcast(s if root == me else r, scount, dtype, root, comm, req)
        else:
            err |= C.Ibarrier(comm, req)
        if units >= 0:
            tc = C.Wtime()
            C.cpu_exploit(units, work)
            comp += C.Wtime() - tc
        err |= C.Wait(req, st)
        ends[i] = alpha + beta * C.Wtime() - (t0 + i * width)
        root = (root + shift) % nprocs
    return 0.0, comp, err


@loop
def persistent_init(call: int, s: int, r: int, scount: int, rcount: int, counts: int,
                    displs: int, dtype: int, op: int, comm: int, me: int, info: int,
                    req: int) -> tuple[int]:
    """Create the persistent request of ``call`` at ``req`` (root 0), untimed."""
    if call == ALLREDUCE:
        err = C.Allreduce_init(s, r, scount, dtype, op, comm, info, req)
    elif call == REDUCE:
        err = C.Reduce_init(s, r, scount, dtype, op, 0, comm, info, req)
    elif call == REDUCE_SCATTER:
        err = C.Reduce_scatter_init(s, r, counts, dtype, op, comm, info, req)
    elif call == ALLGATHER:
        err = C.Allgather_init(s, scount, dtype, r, rcount, dtype, comm, info, req)
    elif call == ALLGATHERV:
        err = C.Allgatherv_init(s, scount, dtype, r, counts, displs, dtype, comm, info, req)
    elif call == GATHER:
        err = C.Gather_init(s, scount, dtype, r, rcount, dtype, 0, comm, info, req)
    elif call == GATHERV:
        err = C.Gatherv_init(s, scount, dtype, r, counts, displs, dtype, 0, comm, info, req)
    elif call == SCATTER:
        err = C.Scatter_init(s, scount, dtype, r, rcount, dtype, 0, comm, info, req)
    elif call == SCATTERV:
        err = C.Scatterv_init(s, counts, displs, dtype, r, rcount, dtype, 0, comm, info, req)
    elif call == ALLTOALL:
        err = C.Alltoall_init(s, scount, dtype, r, rcount, dtype, comm, info, req)
    elif call == ALLTOALLV:
        err = C.Alltoallv_init(s, counts, displs, dtype, r, counts, displs, dtype, comm, info,
                               req)
    elif call == BCAST:
        err = C.Bcast_init(s if me == 0 else r, scount, dtype, 0, comm, info, req)
    else:
        err = C.Barrier_init(comm, info, req)
    return (err,)


@loop
def request_free(req: int) -> tuple[int]:
    """MPI_Request_free of the (inactive) persistent request at ``req``."""
    return (C.Request_free(req),)


def overlap_run(ctx: Ctx, call: int, sb: BufferSet, rb: BufferSet, t: DType, cnt: int,
                tally: Tally) -> Runner:
    """``run(n)`` of an overlap benchmark (module docstring): (t_ovrl, t_pure, t_CPU) summed
    over n iterations, or t_pure alone for a ``_pure`` benchmark."""
    spec = ctx.spec
    persistent = spec.one_buffer
    a = coll.call_args(ctx, call, sb, rb, t, cnt)
    step = coll.root_step(ctx)  # the overlap pass's (or the only pass's)
    # IMB's Ireduce: the pure pass follows -root_shift
    pure_step = int(ctx.cfg.options.root_shift) if spec.root_rotation is Root.OVERLAP else step
    st, req = ctx.scratch(1, 1)
    work = cpu.workspace()
    ctx.keep(work)
    overlap = len(spec.metrics) > 1
    init = (call, a.sb, a.rb, a.scount, a.rcount, a.counts, a.displs, a.dtype, a.op, a.comm,
            a.me, ctx.handle(ctx.MPI.INFO_NULL), req)

    def one_pass(n: int, units: int, nbarr: int) -> tuple[float, float, np.ndarray | None]:
        """A pass's summed times and CPU kernel time, and under --sync window each call's
        time (NaN: invalid, a start late on some rank)."""
        if persistent:
            ctx.call(persistent_init, *init)
        args = (n, units, nbarr, int(persistent), work, *a, pure_step if units < 0 else step,
                int(ctx.cfg.options.sync), req, st)
        ends = None
        if ctx.batch < 0:  # an untimed call readies the twins the timed ones use
            ctx.ready_twins(overlap_loop)
        if ctx.window is not None and ctx.batch >= 0:
            got, (_, comp) = ctx.window.run(ctx.call, overlap_window_loop, *args)
            ends = np.where(got.valid, got.ends, np.nan)
            seconds = got.seconds
        else:
            seconds, comp = ctx.call(overlap_loop, *args)
        if persistent:
            ctx.call(request_free, req)
        return seconds, comp, ends

    def run(n: int) -> float | tuple[float, float, float]:
        # Both passes start with N_BARR barriers, as IMB's (IMB_iallreduce_pure and the
        # others): without them the first iteration of every batch but the first would
        # absorb the ranks' skew from the Python between batches.
        t_pure, _, pure_ends = one_pass(n, -1, N_BARR)
        tally.runs.append(n)
        if pure_ends is not None:
            ctx.window_valid = np.isfinite(pure_ends)
        if not overlap:
            return t_pure
        per_second = cpu.rate(capi.active().name)
        units = cpu.units_for(t_pure / n, per_second)
        ctx.prepare("cpu_units", units)
        ctx.prepare("cpu_units_per_s", per_second)
        t_ovrl, t_cpu, ovrl_ends = one_pass(n, units, N_BARR)
        if pure_ends is not None and ovrl_ends is not None:
            # a call counts where both passes' were valid: the metrics share their counts
            both = np.isfinite(pure_ends) & np.isfinite(ovrl_ends)
            ctx.window_valid = both
            share = both.sum() / max(1, n)
            return float(ovrl_ends[both].sum()), float(pure_ends[both].sum()), t_cpu * share
        return t_ovrl, t_pure, t_cpu

    return run


@dataclass(frozen=True)
class Collective:
    """One collective as both suites declare it; its buffers, datatypes, root and bytes
    counted are those of the IMB-MPI1 benchmark of the same name (``name``)."""

    name: str  # MPI-1 name: Bcast, Allgather, ...
    call: int
    what: str  # what one call does, for the docstring
    expected: coll.Expected | None = None  # --check rule of data-moving calls


# IMB's order (NBC_benchmark.cpp, MPI4_benchmark.cpp): each benchmark, then its _pure.
COLLECTIVES = (
    Collective("Bcast", BCAST, "X bytes from the root to every rank"),
    Collective("Allgather", ALLGATHER, "X bytes from every rank to every rank (NP*X each)",
               coll.gathered),
    Collective("Allgatherv", ALLGATHERV, "Allgather through the vector interface (equal "
               "blocks)", coll.gathered),
    Collective("Gather", GATHER, "X bytes from every rank to the root (NP*X there)",
               coll.gathered),
    Collective("Gatherv", GATHERV, "Gather through the vector interface (equal blocks)",
               coll.gathered),
    Collective("Scatter", SCATTER, "block i (X bytes) of the root's NP*X bytes to rank i",
               coll.scattered),
    Collective("Scatterv", SCATTERV, "Scatter through the vector interface (equal blocks)",
               coll.scattered),
    Collective("Alltoall", ALLTOALL, "a distinct X-byte block from every rank to every rank",
               coll.exchanged),
    Collective("Alltoallv", ALLTOALLV, "Alltoall through the vector interface (equal blocks)",
               coll.exchanged),
    Collective("Reduce", REDUCE, "a sum (MPI_SUM) of X bytes of -red_data_type at the root"),
    Collective("Reduce_scatter", REDUCE_SCATTER, "a sum of NP*X bytes, X-byte block i to "
               "rank i (recvcounts all X / type size)"),
    Collective("Allreduce", ALLREDUCE, "a sum (MPI_SUM) of X bytes of -red_data_type on every "
               "rank"),
    Collective("Barrier", BARRIER, "a barrier"),
)
# The declaration fields taken over from the IMB-MPI1 benchmark.
MPI1_FIELDS = ("rooted", "reduction", "send_np", "recv_np", "sendbuf", "recvbuf",
               "large_counts")




def _kernel(op: Collective) -> Any:
    """The kernel of ``op``'s overlap and pure benchmarks (they differ by their metrics)."""

    @contextmanager
    def kernel(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
        if op.call == BARRIER:
            sb = rb = ctx.buffers(0)
            yield overlap_run(ctx, BARRIER, sb, rb, coll.dtype_of(ctx, False), 0, Tally())
        elif op.call == BCAST:
            yield from coll.broadcast(ctx, nbytes, overlap_run)
        elif ctx.spec.reduction:
            yield from coll.reduction(ctx, nbytes, op.call, overlap_run)
        else:
            assert op.expected is not None
            yield from coll.moved(ctx, nbytes, op.call, op.expected, overlap_run)

    return kernel


def _doc(op: Collective, call: str, pure: bool, persistent: bool) -> str:
    """What a benchmark does and what it times, for ``beff describe`` and the archive."""
    bound = "" if op.call == BARRIER else " with root 0 and the first buffer"
    made = (f" The request is made{bound} before each pass and freed after it (untimed)."
            if persistent else "")
    each = ("The n iterations of a pass are timed as one loop." if op.call == BARRIER else
            "Each iteration is timed on its own; with -sync on an untimed barrier follows it.")
    if pure:
        timed = (f"Timed: n times start + wait (t_pure). {each} Reported: t_min/t_max/t_avg "
                 "over ranks.")
        return f"{call}: {op.what}, then MPI_Wait.{made}\n\n{timed}"
    timed = (f"Timed, per batch of n iterations: n times start + wait (t_pure); then, with "
             "the CPU kernel sized to this rank's t_pure, n times start + CPU kernel + wait "
             f"(t_ovrl), the kernel timed on its own (t_CPU). {each} Reported: the three times"
             " of the rank with the largest t_ovrl, and overlap[%] = 100 * max(0, min(1, "
             "(t_pure + t_CPU - t_ovrl) / max(t_pure, t_CPU))).")
    return (f"{call}: {op.what}, then MPI_Wait.{made}\n\n{timed}\n\n"
            f"The CPU kernel. {cpu.DESCRIPTION}")


def register(suite: str, persistent: bool, defaults: frozenset[str] | None = None) -> None:
    """Register the suite's benchmarks: per collective, the overlap benchmark (default unless
    ``defaults`` names the ones that are) and its opt-in ``_pure`` twin."""
    mpi1 = load_suite("mpi1")
    for op in COLLECTIVES:
        twin = mpi1[op.name.lower()]
        name = f"{op.name}_persist" if persistent else "I" + op.name.lower()
        call = f"MPI_{op.name}_init + MPI_Start" if persistent else f"MPI_I{op.name.lower()}"
        kind = Kind.SYNC if op.call == BARRIER else Kind.COLLECTIVE
        fields: dict[str, Any] = {k: getattr(twin, k) for k in MPI1_FIELDS}
        if persistent:
            # One loop creates every kind of request, so it needs them all.
            fields.update(one_buffer=True, root_rotation=Root.NEVER,
                          requires=tuple(capi.PERSISTENT))
        elif op.call == REDUCE:
            fields.update(root_rotation=Root.OVERLAP)
        columns = OVERLAP_COLUMNS[1:] if kind is Kind.SYNC else OVERLAP_COLUMNS
        for pure in (False, True):
            kernel = _kernel(op)
            kernel.__doc__ = _doc(op, call, pure, persistent)
            full = name + ("_pure" if pure else "")
            default = not pure and (defaults is None or name in defaults)
            extra: dict[str, Any] = ({} if pure else
                                     {"metrics": OVERLAP_METRICS, "columns": columns})
            if pure and fields.get("root_rotation") is Root.OVERLAP:
                extra["root_rotation"] = Root.FLAG  # Ireduce_pure: no overlap pass
            benchmark(full, suite=suite, kind=kind, default=default,
                      bytes_counted=twin.bytes_counted, **{**fields, **extra})(kernel)
