"""IMB-EXT: MPI-2 one-sided communication with active-target (MPI_Win_fence) synchronization,
as IMB 2021.11 runs it (``src_c/IMB_window.c``, ``IMB_ones_unidir.c``, ``IMB_ones_bidir.c``,
``IMB_ones_accu.c``).

Unidir_* and Bidir_* run on 2 ranks (the others wait in a barrier; ``-multi`` runs pairs side by
side) and report t = the slower rank's time with Mbytes/sec = X / t. Window and Accumulate run
on NP ranks and report t_min, t_max and t_avg. Every benchmark but Window runs in the aggregate
mode, then in the non-aggregate mode (``-aggregate_mode`` picks one): in aggregate mode the n
operations of a sample are closed by one fence, in non-aggregate mode each by its own. Message
lengths are multiples of 4 bytes (one MPI_FLOAT) for every benchmark, and the second length is
4 whatever ``-msglog``'s min says, as in IMB-EXT. Data move as MPI_BYTE; Accumulate sums
MPI_FLOAT. Windows are created per message length (:mod:`beff.imb.onesided.common`) and a
fence opens their first epoch.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from beff.bench.ctx import Ctx, Tally
from beff.bench.registry import AGGREGATE, NON_AGGREGATE, Kind, Runner, Sizes, benchmark
from beff.core import capi
from beff.imb.onesided import common
from beff.imb.onesided.common import ACC, GET, N_BARR, PUT

SUITE = "ext"
MODES = (AGGREGATE, NON_AGGREGATE)
# Every operation is fenced with the partner: timed in batches, each batch's start skew would
# be charged to its first fence, so a sample is one batch, as IMB's single call.
EXT: dict[str, Any] = {"suite": SUITE, "sizes_rule": Sizes.EXT, "size_unit": 4,
                       "single_batch": True}
TRANSFER: dict[str, Any] = {**EXT, "kind": Kind.SINGLE_TRANSFER, "procs": 2, "modes": MODES}


def _transfer(ctx: Ctx, nbytes: int, op: int, both: bool) -> Iterator[Runner]:
    """Put or get X bytes between ranks 0 and 1 of the pair, fenced (module docstring).

    Puts go from rank 0 (both ranks with ``both``) into the partner's window over its receive
    buffer; gets read, on rank 1 (both), the partner's window over its send buffer.
    """
    x = common.exposed(ctx, nbytes, op, fence=True)
    me = ctx.rank
    origin = both or me == (0 if op == PUT else 1)
    agg = common.aggregate(ctx)
    tally = Tally()
    yield ctx.timed(common.fence_loop, op, agg, int(origin), N_BARR, agg, -1, 0, *x.slots,
                    nbytes, ctx.handle(ctx.MPI.BYTE), 1 - me, 0, ctx.handle(x.win),
                    ctx.handle(ctx.comm), tally=tally)
    # Puts: the target window (if the partner put); gets: what the origin read.
    if (op == PUT) != origin or both:
        common.expect_moved(ctx, x.recv[tally.last], 1 - me, nbytes)


@benchmark("Window", **EXT, kind=Kind.COLLECTIVE, reduction=True, nonaggr=True,
           bytes_counted="X bytes exposed per rank; one element put to itself; no bandwidth")
@contextmanager
def window(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Win_create over X bytes of the receive buffer on all NP ranks, MPI_Win_fence, one
    MPI_BYTE put by every rank into its own window (X > 0), MPI_Win_fence, MPI_Win_free.

    One mode; starts from msgs_nonaggr (-iter's third number) repetitions, as IMB.
    Timed: the whole loop of n create-fence-put-fence-free sequences; t = loop / n.
    """
    sb, rb = ctx.buffers(nbytes), ctx.buffers(nbytes)
    wins = capi.handle_array()
    ctx.keep(wins)
    MPI = ctx.MPI
    yield ctx.timed(common.window_loop, rb.address, nbytes, sb.address, ctx.handle(MPI.BYTE),
                    ctx.rank, ctx.handle(MPI.INFO_NULL), ctx.handle(ctx.comm), wins,
                    int(wins.ctypes.data))


@benchmark("Unidir_Get", **TRANSFER,
           bytes_counted="X read by rank 1 from rank 0 per operation; Mbytes/sec = X / t")
@contextmanager
def unidir_get(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 1 MPI_Gets X bytes from rank 0's window; rank 0 only takes part in the fences.

    Timed on both ranks, the whole loop: aggregate, n gets then one MPI_Win_fence;
    non-aggregate, n times a get and a fence. t = loop / n (the slower rank's).
    """
    yield from _transfer(ctx, nbytes, GET, both=False)


@benchmark("Unidir_Put", **TRANSFER,
           bytes_counted="X written by rank 0 to rank 1 per operation; Mbytes/sec = X / t")
@contextmanager
def unidir_put(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Rank 0 MPI_Puts X bytes into rank 1's window; rank 1 only takes part in the fences.

    Timed on both ranks, the whole loop: aggregate, n puts then one MPI_Win_fence;
    non-aggregate, n times a put and a fence. t = loop / n (the slower rank's).
    """
    yield from _transfer(ctx, nbytes, PUT, both=False)


@benchmark("Bidir_Get", **TRANSFER,
           bytes_counted="X read by each rank from the other per operation; Mbytes/sec = X / t")
@contextmanager
def bidir_get(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Both ranks MPI_Get X bytes from the other's window at the same time.

    Timed on both ranks, the whole loop: aggregate, n gets then one MPI_Win_fence;
    non-aggregate, n times a get and a fence. t = loop / n (the slower rank's); Mbytes/sec
    counts one direction, as IMB.
    """
    yield from _transfer(ctx, nbytes, GET, both=True)


@benchmark("Bidir_Put", **TRANSFER,
           bytes_counted="X written by each rank to the other per operation; "
                         "Mbytes/sec = X / t")
@contextmanager
def bidir_put(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Both ranks MPI_Put X bytes into the other's window at the same time.

    Timed on both ranks, the whole loop: aggregate, n puts then one MPI_Win_fence;
    non-aggregate, n times a put and a fence. t = loop / n (the slower rank's); Mbytes/sec
    counts one direction, as IMB.
    """
    yield from _transfer(ctx, nbytes, PUT, both=True)


@benchmark("Accumulate", **EXT, kind=Kind.COLLECTIVE, reduction=True, modes=MODES,
           bytes_counted="X per rank accumulated into rank 0's window; no bandwidth")
@contextmanager
def accumulate(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """Every rank MPI_Accumulates X bytes (X/4 MPI_FLOAT, MPI_SUM) into rank 0's window.

    Aggregate: untimed barriers; timed, MPI_Win_fence(MPI_MODE_NOPRECEDE), n accumulates,
    MPI_Win_fence(MPI_MODE_NOSUCCEED). Non-aggregate (no barriers first, as IMB): timed,
    n times fence(NOPRECEDE), one accumulate, fence(NOSUCCEED). t = loop / n.
    """
    MPI = ctx.MPI
    x = common.exposed(ctx, nbytes, ACC, reduction=True, fence=True)
    agg = common.aggregate(ctx)
    tally = Tally()
    yield ctx.timed(common.fence_loop, ACC, agg, 1, N_BARR if agg else 0, 0,
                    MPI.MODE_NOPRECEDE, MPI.MODE_NOSUCCEED, *x.slots, nbytes // 4,
                    ctx.handle(MPI.FLOAT), 0, ctx.handle(MPI.SUM), ctx.handle(x.win),
                    ctx.handle(ctx.comm), tally=tally)
    if ctx.rank == 0:
        common.expect_accumulated(ctx, x.recv, list(range(ctx.size)), tally)
