"""IMB-RMA: MPI-3 one-sided communication with passive-target synchronization (lock, lock_all,
flush, flush_local), as IMB 2021.11 runs it (``src_c/IMB_rma_put.c``, ``IMB_rma_get.c``,
``IMB_rma_atomic.c``; flags from ``src_cpp/RMA/RMA_benchmark.cpp``).

* Pair benchmarks (Unidir_*, Bidir_*, Put_local, Get_local, Accumulate, Get_accumulate,
  Fetch_and_op, Compare_and_swap, Truly_passive_put) run on 2 ranks; the others wait in a
  barrier, and ``-multi`` runs pairs side by side. The *_all and Exchange_* benchmarks run on
  NP ranks.
* Only origins are timed. A target's time is left out of t_min/t_max/t_avg (IMB reports -1
  for it), so ``t`` is the origin's time (the slower origin's for Bidir_*) and Mbytes/sec =
  X / t.
* Each sample: untimed barriers and lock; timed, the operations and their flushes; untimed,
  the unlock and a barrier. Two-mode benchmarks run the non-aggregate mode first (a flush
  after every operation), then the aggregate one (one flush after the n operations);
  ``-aggregate_mode`` picks one. The one-mode benchmarks flush once per sample (*_all) or after
  every pair of operations (Exchange_*).
* Data move as MPI_BYTE; Accumulate, Get_accumulate and Fetch_and_op use MPI_FLOAT with
  MPI_SUM (lengths are multiples of 4 bytes); Compare_and_swap swaps one MPI_INT. Fetch_and_op
  and Compare_and_swap run at one length, one element.
* Mbytes/sec of One_put_all, One_get_all, Put_all_local and Get_all_local is X / t, as the
  IMB 2021.11 binary prints it (its source scales by NP - 1 at a point where NP is still 0).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from beff.bench import check
from beff.bench.ctx import Ctx, Tally
from beff.bench.registry import (
    AGGREGATE,
    NON_AGGREGATE,
    Kind,
    Metric,
    Runner,
    Sizes,
    benchmark,
)
from beff.core import capi, cpu
from beff.core.buffers import BufferSet
from beff.imb.onesided import common
from beff.imb.onesided.common import ACC, CAS, FETCH_OP, GET, GET_ACC, LOCAL, N_BARR, PUT, REMOTE

SUITE = "rma"
MODES = (NON_AGGREGATE, AGGREGATE)
# A sample is one batch, as IMB's single call: MPICH takes a lock lazily, at the first
# operation, so every batch would charge one lock acquisition to its timed loop.
PAIR: dict[str, Any] = {"suite": SUITE, "kind": Kind.SINGLE_TRANSFER, "procs": 2,
                        "requires": capi.RMA3, "single_batch": True}
TWO_MODES: dict[str, Any] = {**PAIR, "modes": MODES}
# IMB's MultPassiveTransfer: NP ranks, one origin, t and Mbytes/sec even under -multi 0.
ONE_TO_ALL: dict[str, Any] = {"suite": SUITE, "kind": Kind.COLLECTIVE, "single_batch": True,
                              "requires": capi.RMA3,
              "columns": ("bytes", "repetitions", "t_origin", "mbytes_per_sec")}
ALL_TO_ALL: dict[str, Any] = {"suite": SUITE, "kind": Kind.COLLECTIVE, "single_batch": True,
                              "requires": capi.RMA3}
CAS_VALUE = 1000  # what Compare_and_swap writes in check mode (the target starts at 0)

T_PURE = Metric("t_pure", "time per put, flush and barrier while the target waits in the "
                          "barrier")
T_OVRL = Metric("t_ovrl", "time per put, flush and barrier while the target computes first")


def _pair(ctx: Ctx, nbytes: int, op: int, both: bool = False, local: int = REMOTE,
          reduction: bool = False) -> Iterator[Runner]:
    """A pair benchmark: rank 0 (both ranks with ``both``) locks the partner, issues ``op``
    n times with flushes per the mode, unlocks; checked where the data landed."""
    MPI = ctx.MPI
    x = common.exposed(ctx, nbytes, op, reduction)
    rb = x.recv
    me = ctx.rank
    origin = both or me == 0
    dtype = MPI.FLOAT if reduction else MPI.BYTE
    tally = Tally()
    yield ctx.timed(common.lock_loop, op, common.aggregate(ctx), local, int(origin), N_BARR,
                    *x.slots, nbytes // x.unit, ctx.handle(dtype), 1 - me, ctx.handle(MPI.SUM),
                    MPI.LOCK_SHARED, ctx.handle(x.win), ctx.handle(ctx.comm), tally=tally)
    if op == PUT:  # the window, where the partner put
        if both or me == 1:
            common.expect_moved(ctx, rb[tally.last], 1 - me, nbytes)
    elif op == GET:  # what the origin read
        if origin:
            common.expect_moved(ctx, rb[tally.last], 1 - me, nbytes)
    elif me == 1:
        common.expect_accumulated(ctx, rb, [0], tally)
    elif op != ACC:  # Get_accumulate, Fetch_and_op: the previous value came back
        common.expect_fetched(ctx, rb, [0], tally)


# ----------------------------------------------------------------------------- pairs
@benchmark("Unidir_put", **TWO_MODES,
           bytes_counted="X written by rank 0 to rank 1 per operation; Mbytes/sec = X / t")
@contextmanager
def unidir_put(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Puts X bytes into rank 1's window under MPI_Win_lock (shared).

    Timed on rank 0, the whole loop: non-aggregate, n times a put and MPI_Win_flush;
    aggregate, n puts then one flush. t = loop / n.
    """
    yield from _pair(ctx, nbytes, PUT)


@benchmark("Bidir_put", **TWO_MODES,
           bytes_counted="X written by each rank to the other per operation; "
                         "Mbytes/sec = X / t")
@contextmanager
def bidir_put(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Both ranks MPI_Put X bytes into the other's window at the same time, each under its own
    MPI_Win_lock (shared) of the other.

    Timed on both ranks, the whole loop: non-aggregate, n times a put and MPI_Win_flush;
    aggregate, n puts then one flush. t = loop / n (the slower rank's).
    """
    yield from _pair(ctx, nbytes, PUT, both=True)


@benchmark("Unidir_get", **TWO_MODES,
           bytes_counted="X read by rank 0 from rank 1 per operation; Mbytes/sec = X / t")
@contextmanager
def unidir_get(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Gets X bytes from rank 1's window under MPI_Win_lock (shared).

    Timed on rank 0, the whole loop: non-aggregate, n times a get and MPI_Win_flush;
    aggregate, n gets then one flush. t = loop / n.
    """
    yield from _pair(ctx, nbytes, GET)


@benchmark("Bidir_get", **TWO_MODES,
           bytes_counted="X read by each rank from the other per operation; Mbytes/sec = X / t")
@contextmanager
def bidir_get(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Both ranks MPI_Get X bytes from the other's window at the same time.

    Timed on both ranks, the whole loop: non-aggregate, n times a get and MPI_Win_flush;
    aggregate, n gets then one flush. t = loop / n (the slower rank's).
    """
    yield from _pair(ctx, nbytes, GET, both=True)


@benchmark("Put_local", **TWO_MODES,
           bytes_counted="X written by rank 0 to rank 1 per operation; Mbytes/sec = X / t")
@contextmanager
def put_local(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Puts X bytes into rank 1's window, completing locally only.

    Timed on rank 0, the whole loop: non-aggregate, n times a put and MPI_Win_flush_local;
    aggregate, n puts then one MPI_Win_flush_local. t = loop / n.
    """
    yield from _pair(ctx, nbytes, PUT, local=LOCAL)


@benchmark("Get_local", **TWO_MODES, default=False,
           bytes_counted="X read by rank 0 from rank 1 per operation; Mbytes/sec = X / t")
@contextmanager
def get_local(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Gets X bytes from rank 1's window, completing with MPI_Win_flush_local.

    Timed on rank 0, the whole loop: non-aggregate, n times a get and MPI_Win_flush_local;
    aggregate, n gets then one MPI_Win_flush_local. t = loop / n.
    """
    yield from _pair(ctx, nbytes, GET, local=LOCAL)


# ----------------------------------------------------------------------------- one or all to all
def _to_all(ctx: Ctx, nbytes: int, op: int, everyone: bool, local: int) -> Iterator[Runner]:
    """Rank 0 (every rank with ``everyone``) puts to or gets from every other rank under
    MPI_Win_lock_all, one flush per sample. Checked where one origin or one peer makes the
    result deterministic (several puts to one window, or gets into one buffer, may land in
    any order)."""
    x = common.exposed(ctx, nbytes, op)
    rb = x.recv
    me, nprocs = ctx.rank, ctx.size
    origin = everyone or me == 0
    tally = Tally()
    yield ctx.timed(common.lock_all_loop, op, local, int(origin), N_BARR, *x.slots, nbytes,
                    ctx.handle(ctx.MPI.BYTE), me, nprocs, ctx.handle(x.win),
                    ctx.handle(ctx.comm), tally=tally)
    if nprocs < 2:
        return
    if op == PUT and me != 0 and (not everyone or nprocs == 2):
        common.expect_moved(ctx, rb[tally.last], 0 if not everyone else 1 - me, nbytes)
    if op == GET and origin and nprocs == 2:
        common.expect_moved(ctx, rb[tally.last], 1 - me, nbytes)


ONE_DOC = "Mbytes/sec = X / t, as IMB 2021.11 prints it"


@benchmark("Put_all_local", **ONE_TO_ALL,
           bytes_counted=f"X written by rank 0 to each other rank per iteration; {ONE_DOC}")
@contextmanager
def put_all_local(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Puts X bytes to every other rank (rank k + 1 first) under MPI_Win_lock_all.

    Timed on rank 0, the whole loop: n rounds of NP-1 puts, then one
    MPI_Win_flush_local_all. t = loop / n.
    """
    yield from _to_all(ctx, nbytes, PUT, everyone=False, local=LOCAL)


@benchmark("Get_all_local", **ONE_TO_ALL, default=False,
           bytes_counted=f"X read by rank 0 from each other rank per iteration; {ONE_DOC}")
@contextmanager
def get_all_local(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Gets X bytes from every other rank under MPI_Win_lock_all.

    Timed on rank 0, the whole loop: n rounds of NP-1 gets, then one
    MPI_Win_flush_local_all. t = loop / n.
    """
    yield from _to_all(ctx, nbytes, GET, everyone=False, local=LOCAL)


@benchmark("One_put_all", **ONE_TO_ALL,
           bytes_counted=f"X written by rank 0 to each other rank per iteration; {ONE_DOC}")
@contextmanager
def one_put_all(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Puts X bytes to every other rank under MPI_Win_lock_all.

    Timed on rank 0, the whole loop: n rounds of NP-1 puts, then one MPI_Win_flush_all.
    t = loop / n.
    """
    yield from _to_all(ctx, nbytes, PUT, everyone=False, local=REMOTE)


@benchmark("All_put_all", **ALL_TO_ALL,
           bytes_counted="X written by every rank to each other rank per iteration; "
                         "no bandwidth")
@contextmanager
def all_put_all(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Every rank MPI_Puts X bytes to every other rank (rank me+1 first) under
    MPI_Win_lock_all.

    Timed on every rank, the whole loop: n rounds of NP-1 puts, then one MPI_Win_flush_all.
    t = loop / n; t_min, t_max, t_avg over ranks.
    """
    yield from _to_all(ctx, nbytes, PUT, everyone=True, local=REMOTE)


@benchmark("One_get_all", **ONE_TO_ALL,
           bytes_counted=f"X read by rank 0 from each other rank per iteration; {ONE_DOC}")
@contextmanager
def one_get_all(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Gets X bytes from every other rank under MPI_Win_lock_all.

    Timed on rank 0, the whole loop: n rounds of NP-1 gets, then one MPI_Win_flush_all.
    t = loop / n.
    """
    yield from _to_all(ctx, nbytes, GET, everyone=False, local=REMOTE)


@benchmark("All_get_all", **ALL_TO_ALL,
           bytes_counted="X read by every rank from each other rank per iteration; "
                         "no bandwidth")
@contextmanager
def all_get_all(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Every rank MPI_Gets X bytes from every other rank under MPI_Win_lock_all.

    Timed on every rank, the whole loop: n rounds of NP-1 gets, then one MPI_Win_flush_all.
    t = loop / n; t_min, t_max, t_avg over ranks.
    """
    yield from _to_all(ctx, nbytes, GET, everyone=True, local=REMOTE)


# ----------------------------------------------------------------------------- exchange
def _exchange(ctx: Ctx, nbytes: int, op: int) -> Iterator[Runner]:
    x = common.exposed(ctx, nbytes, op, blocks=2)
    me, nprocs = ctx.rank, ctx.size
    left, right = (me - 1) % nprocs, (me + 1) % nprocs
    tally = Tally()
    yield ctx.timed(common.exchange_loop, op, N_BARR, *x.slots, nbytes, ctx.handle(ctx.MPI.BYTE),
                    left, right, nbytes, ctx.MPI.LOCK_SHARED, ctx.handle(x.win),
                    ctx.handle(ctx.comm), tally=tally)
    if nprocs > 1:
        got = x.recv[tally.last]
        common.expect_moved(ctx, got[:nbytes], right, nbytes, 0, 2 * nbytes)
        common.expect_moved(ctx, got[nbytes:], left, nbytes, nbytes, 2 * nbytes)


@benchmark("Exchange_put", **ALL_TO_ALL, sendbuf=2.0, recvbuf=2.0,
           bytes_counted="2X per rank sent and 2X received per iteration; no bandwidth")
@contextmanager
def exchange_put(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Every rank MPI_Puts X bytes to its left and X bytes to its right neighbour (ring),
    under MPI_Win_lock of each (shared).

    Timed on every rank, the whole loop: n times the two puts and MPI_Win_flush of each
    neighbour. t = loop / n; t_min, t_max, t_avg over ranks.
    """
    yield from _exchange(ctx, nbytes, PUT)


@benchmark("Exchange_get", **ALL_TO_ALL, sendbuf=2.0, recvbuf=2.0,
           bytes_counted="2X per rank read and 2X read from it per iteration; no bandwidth")
@contextmanager
def exchange_get(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Every rank MPI_Gets X bytes from its right and X bytes from its left neighbour (ring),
    under MPI_Win_lock of each (shared).

    Timed on every rank, the whole loop: n times the two gets and MPI_Win_flush of each
    neighbour. t = loop / n; t_min, t_max, t_avg over ranks.
    """
    yield from _exchange(ctx, nbytes, GET)


# ----------------------------------------------------------------------------- atomics
@benchmark("Accumulate", **TWO_MODES, reduction=True,
           bytes_counted="X accumulated by rank 0 into rank 1 per operation; "
                         "Mbytes/sec = X / t")
@contextmanager
def accumulate(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Accumulates X bytes (X/4 MPI_FLOAT, MPI_SUM) into rank 1's window.

    Timed on rank 0, the whole loop: non-aggregate, n times an accumulate and
    MPI_Win_flush; aggregate, n accumulates then one flush. t = loop / n.
    """
    yield from _pair(ctx, nbytes, ACC, reduction=True)


@benchmark("Get_accumulate", **TWO_MODES, reduction=True,
           bytes_counted="X accumulated by rank 0 into rank 1 and X returned per operation; "
                         "Mbytes/sec = X / t")
@contextmanager
def get_accumulate(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Get_accumulates X bytes (X/4 MPI_FLOAT, MPI_SUM) into rank 1's window,
    receiving the previous contents.

    Timed on rank 0, the whole loop: non-aggregate, n times the call and MPI_Win_flush;
    aggregate, n calls then one flush. t = loop / n.
    """
    yield from _pair(ctx, nbytes, GET_ACC, reduction=True)


@benchmark("Fetch_and_op", **TWO_MODES, reduction=True, sizes_rule=Sizes.ELEMENT,
           bytes_counted="one MPI_FLOAT (4 bytes) per operation; Mbytes/sec = 4 / t")
@contextmanager
def fetch_and_op(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Fetch_and_ops one MPI_FLOAT (MPI_SUM) into rank 1's window, receiving the
    previous value. One length: one element.

    Timed on rank 0, the whole loop: non-aggregate, n times the call and MPI_Win_flush;
    aggregate, n calls then one flush. t = loop / n.
    """
    yield from _pair(ctx, nbytes, FETCH_OP, reduction=True)


@benchmark("Compare_and_swap", **TWO_MODES, sizes_rule=Sizes.ELEMENT, size_unit=4, recvbuf=3.0,
           comments=("Uses MPI_INT data type",),
           bytes_counted="one MPI_INT (4 bytes) per operation; Mbytes/sec = 4 / t")
@contextmanager
def compare_and_swap(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Compare_and_swaps one MPI_INT in rank 1's window; origin, compare and result
    values sit in rank 0's receive buffer (at +8, +4 and +0 bytes), as IMB. One length.

    Timed on rank 0, the whole loop: non-aggregate, n times the call and MPI_Win_flush;
    aggregate, n calls then one flush. t = loop / n.
    """
    MPI = ctx.MPI
    rb = ctx.buffers(3 * nbytes)
    win = common.window(ctx, rb)
    me = ctx.rank
    if ctx.cfg.check and me == 0:
        for j in range(rb.count):
            rb[j].view(np.int32)[:] = (0, 0, CAS_VALUE)
    tally = Tally()
    yield ctx.timed(common.lock_loop, CAS, common.aggregate(ctx), REMOTE, int(me == 0), N_BARR,
                    *common.slots(rb, rb, rb), 1, ctx.handle(MPI.INT), 1 - me, 0,
                    MPI.LOCK_SHARED, ctx.handle(win), ctx.handle(ctx.comm), tally=tally)
    if ctx.cfg.check:
        _check_cas(ctx, rb, tally)


def _check_cas(ctx: Ctx, rb: BufferSet, tally: Tally) -> None:
    """The target's word holds the swapped-in value wherever a swap landed; the last result
    is the word's previous value (0 for a slot's first swap)."""
    if ctx.rank == 1:
        for j in range(rb.count):
            want = CAS_VALUE if tally.uses(j, rb.count) else 0
            ctx.defects += int(rb[j].view(np.int32)[0] != want)
        return
    want = CAS_VALUE if tally.uses(tally.last % rb.count, rb.count) > 1 else 0
    if check.corrupting(ctx):  # the test hook's defect: CAS has no send pattern to corrupt
        want += 1
    ctx.defects += int(rb[tally.last].view(np.int32)[0] != want)


# ----------------------------------------------------------------------------- truly passive
@contextmanager
def truly_passive_put(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Whether a put progresses while its target computes outside MPI. Rank 0 locks rank 1
    (shared) and runs two passes of n times MPI_Put, MPI_Win_flush, MPI_Barrier:

    * t_pure: rank 1 meanwhile only calls MPI_Barrier n times;
    * t_ovrl: rank 1 first runs the CPU kernel (below) for rank 0's t_pure each iteration,
      then calls MPI_Barrier.

    A put that completes without the target's help gives t_ovrl close to t_pure; one that
    waits for the target to enter MPI takes up to t_pure + the computation. Timed on rank 0,
    each pass as a whole loop; t = loop / n. The kernel's units are stored with each size.
    """
    MPI = ctx.MPI
    x = common.exposed(ctx, nbytes, PUT)
    sb, rb, win = x.send, x.recv, x.win
    me, comm = ctx.rank, ctx.comm
    work = cpu.workspace()
    ctx.keep(work)
    per_s = cpu.rate(capi.active().name)
    args = (*sb.slots, rb.count, rb.stride, nbytes, ctx.handle(MPI.BYTE), 1, ctx.handle(win),
            ctx.handle(comm))
    tally = Tally()

    def run(n: int) -> tuple[float, float]:
        tally.runs.append(n)
        comm.Barrier()
        if me == 0:
            win.Lock(1, MPI.LOCK_SHARED)
            (t_pure,) = ctx.call(common.passive_origin_loop, n, *args)
            comm.send(t_pure / n, dest=1, tag=1)
            comm.Barrier()
            (t_ovrl,) = ctx.call(common.passive_origin_loop, n, *args)
            win.Unlock(1)
            return t_pure, t_ovrl
        ctx.call(common.passive_target_loop, n, 0, work, ctx.handle(comm))
        units = cpu.units_for(comm.recv(source=0, tag=1), per_s)
        ctx.prepare("cpu_units", units)
        ctx.prepare("cpu_units_per_s", per_s)
        comm.Barrier()
        ctx.call(common.passive_target_loop, n, units, work, ctx.handle(comm))
        return math.nan, math.nan

    yield run
    if me == 1:
        common.expect_moved(ctx, rb[tally.last], 0, nbytes)


# The declaration, with the CPU kernel's description appended to what the docstring says.
truly_passive_put.__doc__ = (f"{inspect.cleandoc(truly_passive_put.__doc__ or '')}\n\n"
                             f"The CPU kernel. {cpu.DESCRIPTION}")
benchmark("Truly_passive_put", **PAIR, metrics=(T_PURE, T_OVRL),
          columns=("bytes", "repetitions", "rma_t_pure", "rma_t_ovrl"),
          comments=("The benchmark measures execution time of MPI_Put for 2 cases:",
                    "1) The target is waiting in MPI_Barrier call (t_pure value)",
                    "2) The target performs computation and then enters MPI_Barrier routine "
                    "(t_ovrl value)"),
          bytes_counted="X written by rank 0 to rank 1 per operation; no bandwidth",
          )(truly_passive_put)
