"""The schedule as data: what the one measuring loop (:class:`beff.bench.driver.Driver`)
measures of a benchmark, and how, as a policy object.

:class:`Plan` is IMB's schedule (IMB-MPI1 and its siblings): IMB's sizes, process counts and
modes; per size its memory check, a repetition count calibrated to ``-time`` (or fixed by
``-iter_policy``), its time budget, a warm-up of n/10 and two barriers before the timed
batches, and a barrier of all groups after them. A suite with another schedule subclasses
it in its own folder and overrides the steps that differ (IMB-P2P: fixed repetitions from a
formula, its pauses and its own barrier). The loop itself, the timed batches and what is
gathered and stored, is the Driver's and the same for every suite.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from beff.bench import schedule
from beff.bench.ctx import Ctx
from beff.bench.registry import AGGREGATE, NON_AGGREGATE, BenchmarkSpec, Kind, Sizes
from beff.core import capi, counts
from beff.core import mpi as _mpi
from beff.core.buffers import off_cache_slots
from beff.core.config import RunConfig, stall_limit
from beff.core.errors import CollectiveFailure
from beff.results.model import OUT_OF_MEM, TIME_OUT

if TYPE_CHECKING:  # mpi4py's own stubs; importing mpi4py.MPI at run time would start MPI
    from mpi4py.MPI import Comm

Run = Callable[[int], float]
# A size whose warm-up or last batch says a batch will take long is guarded for this many
# times that, on top of the stall limit: a slower phase of the load must not look hung.
SLOW_MARGIN = 4.0

N_BARR = 2
GIB = float(1 << 30)


def unit_size(spec: BenchmarkSpec, cfg: RunConfig) -> int:
    """Sizes are multiples of the data type (the reduction type for reductions), or of the
    spec's own unit."""
    if spec.size_unit:
        return spec.size_unit
    o = cfg.options
    return schedule.TYPE_SIZES[o.red_data_type if spec.reduction else o.data_type]


def sizes_for(spec: BenchmarkSpec, cfg: RunConfig) -> list[int]:
    """The message lengths ``spec`` runs at (Barrier-like SYNC benchmarks: one entry;
    single-element benchmarks: one element)."""
    unit = unit_size(spec, cfg)
    if spec.sizes_rule is Sizes.ELEMENT:
        return [unit]
    if spec.kind is Kind.SYNC:
        return [(1 << cfg.options.msglog_max) // unit * unit]
    if cfg.options.msglen is not None:
        return schedule.user_lengths(cfg.options.msglen, cfg.options.msglog_max, unit)
    cap = unit if spec.sizes_rule is Sizes.EXT else None
    o = cfg.options
    return schedule.imb_lengths(o.msglog_min, o.msglog_max, o.zero_size, unit, cap)


def modes_for(spec: BenchmarkSpec, cfg: RunConfig) -> tuple[str, ...]:
    """The modes ``spec`` runs in: its own, or the one ``-aggregate_mode`` picks."""
    if cfg.options.aggregate_mode == "multi" or not {AGGREGATE, NON_AGGREGATE} <= set(spec.modes):
        return spec.modes
    return (AGGREGATE,) if cfg.options.aggregate_mode == "aggregate" else (NON_AGGREGATE,)


def counts_for(spec: BenchmarkSpec, cfg: RunConfig, nprocs: int) -> list[int]:
    """Process counts at which ``spec`` runs (IMB's selection of active processes)."""
    if spec.procs is not None:
        return [spec.procs] if nprocs >= spec.procs else []
    npmin = cfg.options.npmin if cfg.options.npmin is not None else spec.default_npmin
    return schedule.process_counts(nprocs, npmin, even=spec.kind is Kind.MSG_RATE)


def map_position(cfg: RunConfig, world_rank: int, nprocs: int) -> int:
    """Position of a world rank in group order; ``-map PxQ`` numbers ranks along rows."""
    if cfg.options.map is None:
        return world_rank
    p, q = (int(v) for v in cfg.options.map)
    if p == 1 or q == 1 or world_rank >= p * q:
        return world_rank
    return (world_rank % p) * q + world_rank // p


def buffer_bytes(spec: BenchmarkSpec, nbytes: int, np_: int, cfg: RunConfig,
                 n0: int) -> float:
    """Bytes one rank needs at one size (IMB's -mem check): send plus receive buffer, plus
    the benchmark's other resources (windows, ...)."""
    init = max(nbytes, 4)
    total = 0.0
    for factor, per_np in ((spec.sendbuf, spec.send_np), (spec.recvbuf, spec.recv_np)):
        length = factor * init * (np_ if per_np else 1)
        if (cfg.options.off_cache is not None and length > 0 and spec.kind is not Kind.SYNC
                and not spec.one_buffer):
            stride, count = off_cache_slots(int(length), int(cfg.options.off_cache[0] * (1 << 20)),
                                            cfg.options.off_cache[1], n0)
            length = max(length, stride * count)
        total += length
    if spec.other_memory is not None:
        total += spec.other_memory(nbytes, np_)
    return total


def msgrate_factor(spec: BenchmarkSpec, cfg: RunConfig, np_: int) -> float:
    """Messages counted per reported second (Uniband/Biband: bw_scale * window * NP/2)."""
    if spec.kind is not Kind.MSG_RATE:
        return 0.0
    return float(spec.bw_scale * cfg.options.window_size * (np_ // 2))


class Plan:
    """IMB's schedule, the policy of the one loop for IMB-MPI1, NBC, MPI4, EXT, RMA and IO.

    The Driver asks it, in this order: which modes, process counts and sizes a benchmark
    runs (:meth:`modes`, :meth:`counts`, :meth:`sizes`; :meth:`not_run` for a benchmark that
    does not run at a count at all); per process count :meth:`open`; per size :meth:`admit`
    (before the kernel's set-up), then :meth:`repetitions` and :meth:`warm_up` (with the
    kernel's ``run``), the timed batches (the Driver's), and :meth:`close_size`. What it
    learned goes into the Measurement through :meth:`factor`, :meth:`needed_gb` and
    :meth:`attrs`. Every rank of a group makes the same decisions.
    """

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.need = np.zeros(0)
        self.spec: BenchmarkSpec | None = None
        self.np_ = 1
        self.sizes_: list[int] = []
        self.budget = 0.0
        self.t_start = 0.0
        self.compiled_before = 0.0
        self.n_prev = 0
        self.history: list[tuple[int, int]] = []

    # ---------------------------------------------------------------- what is measured
    def sizes(self, spec: BenchmarkSpec) -> list[int]:
        return sizes_for(spec, self.cfg)

    def counts(self, spec: BenchmarkSpec, nprocs: int) -> list[int]:
        return counts_for(spec, self.cfg, nprocs)

    def modes(self, spec: BenchmarkSpec) -> tuple[str, ...]:
        return modes_for(spec, self.cfg)

    @property
    def multi(self) -> int | None:
        """IMB's -multi (None: one group)."""
        return self.cfg.options.get("multi")

    def position(self, world_rank: int, nprocs: int) -> int:
        return map_position(self.cfg, world_rank, nprocs)

    def not_run(self, spec: BenchmarkSpec, nprocs: int) -> str:
        """Why ``spec`` is not run at ``nprocs`` processes ("": it is)."""
        return ""

    def stall(self, size: int | None = None) -> float:
        """The stall guard of one size (``size``), and of the steps between sizes (None)."""
        return stall_limit(self.cfg, self.cfg.options.time)

    def label(self, size: int) -> str:
        """A size as the guard's messages name it."""
        return f"{size} bytes"

    def progress(self, spec: BenchmarkSpec, np_: int, size: int) -> str:
        """The progress bar's line for one size."""
        return f"{spec.name} np={np_} {size} B"

    def figures(self, spec: BenchmarkSpec) -> int:
        """How many figures a timed call of ``spec``'s kernel returns: one per metric."""
        return len(spec.metrics)

    def enter(self, ctx: Ctx, size: int) -> Callable[[int], object]:
        """Set up ``ctx.spec``'s kernel for one size, its end tied to ``ctx.resources``;
        its ``run(n)``."""
        run: Callable[[int], object] = ctx.resources.enter_context(ctx.spec.kernel(ctx, size))
        return run

    def record(self, **fields: Any) -> dict[str, Any]:
        """The fields of the Measurement (:func:`beff.results.build.from_batches`), as this
        schedule stores them: IMB's as they are."""
        return fields

    def batches(self, spec: BenchmarkSpec, mode: str) -> int:
        """How many batches a size's timed run is cut into. Aggregate modes complete a
        sample's operations together: one batch, one completion."""
        whole = mode == AGGREGATE or spec.single_batch
        return 1 if whole else max(1, self.cfg.batches)

    # ---------------------------------------------------------------- one process count
    def open(self, ctx: Ctx, sizes: list[int]) -> None:
        """Before the first size of ``ctx.spec`` at ``ctx``'s group size (and again after
        the benchmark's own set-up: the -time budget is for measuring)."""
        o = self.cfg.options
        self.spec, self.np_, self.sizes_ = ctx.spec, ctx.size, sizes
        self.need = np.zeros(len(sizes))
        n_user = len(o.msglen) if o.msglen is not None else 0
        self.budget = schedule.time_budget(n_user, o.msglog_min, o.msglog_max, o.time)
        self.t_start = ctx.MPI.Wtime()
        # the budget is for measuring: a loop's first compile (or load) is not counted
        self.compiled_before = capi.active().compile_seconds
        self.n_prev = o.msgspersample
        self.history = []

    def _x_sample(self, mode: str) -> int:
        spec, o = self.spec, self.cfg.options
        assert spec is not None
        return int(o.msgs_nonaggr if mode == NON_AGGREGATE or spec.nonaggr else o.msgspersample)

    def _policy(self) -> str:
        policy = self.cfg.options.iter_policy
        if policy == "auto":
            assert self.spec is not None
            return "multiple_np" if self.spec.rooted else "dynamic"
        return str(policy)

    def admit(self, ctx: Ctx, i: int, nbytes: int) -> tuple[int, str | None]:
        """Before the kernel's set-up: the size's first repetition count n0 (its buffers
        hold n0 slots under -off_cache), or a status that ends the benchmark here (its
        memory need above -mem). Raises CollectiveFailure for a size no rank can run."""
        spec, o = ctx.spec, self.cfg.options
        n0 = schedule.initial_repetitions(nbytes, o.msgspersample, o.overall_vol_mib << 20,
                                          self._policy(), self.np_, o.msglog_max,
                                          self._x_sample(ctx.mode))
        self.need[i] = buffer_bytes(spec, nbytes, self.np_, self.cfg, n0) / GIB + 0.001
        # every rank computes the same need from the same config: no broadcast
        if self.need[i] - 0.001 > o.mem_gb:
            return n0, OUT_OF_MEM
        if nbytes > counts.limit() and not spec.large_counts:
            raise CollectiveFailure(  # the same decision on every rank
                f"{nbytes} bytes exceed the {counts.limit()} of a C int count; "
                f"{spec.suite.upper()} messages that large are not supported yet")
        return n0, None

    def repetitions(self, ctx: Ctx, run: Run, rcomm: Comm, i: int, nbytes: int,
                    n0: int) -> tuple[int, str | None]:
        """The timed repetitions of this size (IMB's calibration, or n0), or a status that
        ends the benchmark here (its -time budget spent)."""
        spec, cfg = ctx.spec, self.cfg
        policy = self._policy()
        x_sample = self._x_sample(ctx.mode)
        raw = cfg.options.msglen if cfg.options.msglen is not None else self.sizes_
        if policy == "dynamic" and spec.kind is not Kind.SYNC:
            n = self._calibrate(ctx, run, n0, self.n_prev, nbytes, raw[i], self.history)
        elif policy == "dynamic":
            n = self._calibrate(ctx, run, x_sample, x_sample, nbytes, raw[i], [])
        else:
            n = n0
        self.n_prev = n
        self.history.append((raw[i], n))
        # IMB checks the budget after calibration, before warm-up.
        backend = capi.active()
        late = rcomm.Get_rank() == 0 and (ctx.MPI.Wtime() - self.t_start - (
            backend.compile_seconds - self.compiled_before)) > self.budget
        if rcomm.bcast(late, root=0):
            return n, TIME_OUT
        return n, None

    def warm_up(self, ctx: Ctx, run: Run, n: int) -> float:
        """IMB's warm-up (n/10 repetitions) and its two barriers before the timed batches;
        the seconds per repetition it saw (0: none seen)."""
        warm = schedule.warmup_iterations(n)
        per = 0.0
        if self.cfg.options.warm_up and ctx.spec.warm_up and warm:
            began = time.monotonic()
            run(warm)
            per = (time.monotonic() - began) / warm
        for _ in range(N_BARR):
            ctx.comm.Barrier()
        return per

    def timed(self, ctx: Ctx, run_all: Callable[[int], object], parts: list[int],
              per: float, stall: float, what: str) -> np.ndarray:
        """The timed batches of one size, one after the other: [batch, figure] seconds.

        Between them, nothing but the stall guard's re-arming: slow is not hung. A batch may
        last what the warm-up or the batch before it says (``per`` seconds a repetition; a
        loaded node's 1 ms at 100,000 fixed repetitions), and each batch is progress."""
        timed = []
        for ctx.batch, k in enumerate(parts):
            expected = per * k
            if SLOW_MARGIN * expected > stall:
                _mpi.guard(stall + SLOW_MARGIN * expected,
                           f"{what} (batch {ctx.batch + 1} of {len(parts)}: {k} repetitions, "
                           f"about {expected:.0f} s by the last ones)")
            began = time.monotonic()
            timed.append(np.atleast_1d(np.asarray(run_all(k), dtype=np.float64)))
            per = max(per, (time.monotonic() - began) / k)
        return np.array(timed, dtype=np.float64)

    def close_size(self, ctx: Ctx, rcomm: Comm, i: int, seconds: float) -> None:
        """After the timed batches (``seconds``: this rank's timed seconds of the size): the
        groups start each size together (IMB's world barrier); -msg_pause."""
        rcomm.Barrier()
        if self.cfg.options.msg_pause:
            time.sleep(max(seconds / 10, 0.1))

    def factor(self, spec: BenchmarkSpec, np_: int) -> float:
        return msgrate_factor(spec, self.cfg, np_)

    def needed_gb(self) -> np.ndarray | None:
        return self.need

    def attrs(self) -> dict[str, Any]:
        """Facts of this schedule stored with the Measurement."""
        return {}

    def _calibrate(self, ctx: Ctx, run: Run, n0: int, n_prev: int, nbytes: int, raw: int,
                   history: list[tuple[int, int]]) -> int:
        """IMB's dynamic policy: time 1 iteration, then a test batch, then fit ``-time``.

        Unlike IMB, the fit uses the wall-clock time per iteration when that is larger than
        the reported time, so the untimed ``-sync`` barrier of collectives counts against
        ``-time`` (on an oversubscribed node it can cost more than the call itself).
        """
        MPI, cfg, comm, spec = ctx.MPI, self.cfg, ctx.comm, ctx.spec
        wtime = MPI.Wtime
        backend = capi.active()

        def timed(k: int) -> float:
            readied = backend.compile_seconds
            start = wtime()
            reported = run(k)  # NaN on a rank that times nothing (an RMA target)
            # less the first call's compile (or load) of its loop: local work, not the call's
            wall = wtime() - start - (backend.compile_seconds - readied)
            return float(max(reported, wall) if reported == reported else wall) / k

        # buffer reductions: mpi4py's object ones keep the watchdogs from running meanwhile
        t = timed(1)
        _mpi.injected_stop("calibration")  # the others wait in the reduction
        t = _mpi.allreduce_number(comm, t, MPI.MAX)
        k = _mpi.allreduce_number(comm, int(schedule.calibration_test_count(t)), MPI.MAX)
        n = min(n0, k)
        if n > 1:
            t = _mpi.allreduce_number(comm, timed(n), MPI.MAX)
        t_sample = schedule.time_limited_count(n0, cfg.options.time, t)
        if cfg.options.msglen is not None and spec.kind is not Kind.SYNC:
            n = min(n0, schedule.monotone_count(t_sample, nbytes, history))
        else:
            n = min(n0, n_prev, t_sample)
        return int(comm.bcast(max(1, n), root=0))


class EveryRank(Plan):
    """A schedule without IMB-MPI1's selection: every rank at once (one process count, the
    job's), one mode, one group, no memory check; each size's run cut into ``--batches``.
    IMB-P2P's and IMB-MT's plans start from it."""

    def counts(self, spec: BenchmarkSpec, nprocs: int) -> list[int]:
        return [nprocs]

    def modes(self, spec: BenchmarkSpec) -> tuple[str, ...]:
        return ("",)

    @property
    def multi(self) -> int | None:
        return None

    def position(self, world_rank: int, nprocs: int) -> int:
        return world_rank

    def batches(self, spec: BenchmarkSpec, mode: str) -> int:
        return max(1, self.cfg.batches)

    def admit(self, ctx: Ctx, i: int, nbytes: int) -> tuple[int, str | None]:
        return 1, None

    def needed_gb(self) -> np.ndarray | None:
        return None

