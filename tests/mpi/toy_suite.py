"""A toy suite, all in this one module: what adding a suite to beff takes.

It is a plug-in (``BEFF_PLUGINS=tests.mpi.toy_suite``), with its own metric (``t_work``),
its own column (``work_share``) and two modes. Toy times MPI_Barrier and, separately, a
rank-local stretch of ``spin`` MPI_Wtime calls (``spin`` is the per-size preparation).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from beff.bench.ctx import Ctx
from beff.bench.registry import TIME, Kind, Metric, Runner, benchmark, register_suite
from beff.core.capi import loop
from beff.results import columns
from beff.results.model import Measurement

C: Any = None
register_suite("toy", "Toy suite (a test plug-in)", (__name__,))
SPIN = {"light": 10, "heavy": 2000}


@loop
def toy_loop(n: int, comm: int, spin: int) -> tuple[float, float, int]:
    """Barrier (metric t), then ``spin`` MPI_Wtime calls (metric t_work), n times."""
    err = 0
    t_sync = 0.0
    t_work = 0.0
    for _ in range(n):
        t0 = C.Wtime()
        err |= C.Barrier(comm)
        t1 = C.Wtime()
        for _ in range(spin):
            C.Wtime()
        t_sync += t1 - t0
        t_work += C.Wtime() - t1
    return t_sync, t_work, err


@columns.column("work_share", "work[%]", "work %", key="work_share_pct")
def work_share(m: Measurement, group: int | None) -> np.ndarray:
    """t_work as a share of t + t_work, from the slower rank of each."""
    t = np.nanmax(m.times, axis=1)
    work = np.nanmax(m.metric_times("t_work"), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(100.0 * work / (t + work))


T_WORK = columns.metric_column("t_work")


@benchmark("Toy", suite="toy", kind=Kind.COLLECTIVE, sendbuf=0.0, recvbuf=0.0,
           metrics=(TIME, Metric("t_work", "rank-local work per iteration")),
           columns=("bytes", "repetitions", "t_avg", T_WORK, "work_share"),
           modes=("light", "heavy"), bytes_counted="none")
@contextmanager
def toy(ctx: Ctx, nbytes: int) -> Iterator[Runner]:
    """MPI_Barrier, then SPIN[mode] MPI_Wtime calls; both timed per iteration."""
    spin = SPIN[ctx.mode]
    ctx.prepare("spin", spin)
    yield ctx.timed(toy_loop, ctx.handle(ctx.comm), spin)
