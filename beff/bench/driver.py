"""The one measuring loop of every IMB-style suite.

For each benchmark and process count it forms the active groups (idle ranks wait in a
barrier), and for each message size it asks the suite's :class:`~beff.bench.plan.Plan` (the
schedule as data: IMB's by default) for the repetitions and the steps around the timed run,
times the run as batches of iterations, gathers every rank's batches and builds one
Measurement (:mod:`beff.results.build`). Kernels never see the schedule; they only run n
iterations and return the timed seconds.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from beff.bench import iterations, schedule, window
from beff.bench.ctx import Ctx
from beff.bench.plan import Plan
from beff.bench.registry import BenchmarkSpec, Kind
from beff.core import capi, runtime
from beff.core import mpi as _mpi
from beff.core.config import RunConfig
from beff.core.errors import CollectiveFailure
from beff.results import build as measured
from beff.results.model import FAILED, OK, SKIPPED, Measurement, measurement_key

if TYPE_CHECKING:  # mpi4py's own stubs; importing mpi4py.MPI at run time would start MPI
    from mpi4py.MPI import Comm

IDLE_POLL = 0.002  # seconds between polls of a waiting rank

ProgressFn = Callable[[str], None]


class Driver:
    """Runs the benchmarks of one suite on MPI.COMM_WORLD; rank 0 receives the Measurements."""

    def __init__(self, MPI: types.ModuleType, cfg: RunConfig,
                 progress: ProgressFn | None = None, done: dict[str, bool] | None = None,
                 plan: Plan | None = None) -> None:
        self.MPI = MPI
        self.cfg = cfg
        self.plan = Plan(cfg) if plan is None else plan
        # --resume: the results the file holds (key -> failed), not measured again
        self.done = done or {}
        self.world = MPI.COMM_WORLD
        self.progress = progress
        self.current: BenchmarkSpec | None = None

    def run_all(self, specs: Sequence[BenchmarkSpec],
                emit: Callable[[Measurement], None]) -> None:
        for spec in specs:
            self.run(spec, emit)
        _mpi.guard(None, "")

    def run(self, spec: BenchmarkSpec, emit: Callable[[Measurement], None]) -> None:
        """Run ``spec`` in each of its modes at each process count; ``emit`` is called on
        world rank 0.

        Modes are run one after the other, as IMB lists a benchmark once per mode. Any failed
        size (time-out, out-of-mem) ends the benchmark in that mode, later counts included.
        A count the plan says ``spec`` does not run at gets a record that says why.
        """
        _mpi.injected_fault(spec.name, self.world.Get_rank())
        self.current = spec
        plan = self.plan
        missing = [name for name in spec.requires if not capi.has(name)]
        if spec.requires and _mpi.allreduce_number(self.world, bool(missing), self.MPI.LOR):
            if self.world.Get_rank() == 0:
                emit(self.unsupported(spec, missing))
            return
        for mode in plan.modes(spec):
            for np_ in plan.counts(spec, self.world.Get_size()):
                key = measurement_key(spec.suite, spec.name, mode, np_, plan.multi)
                if key in self.done:  # the resumed file's (the same on every rank)
                    if self.done[key]:
                        break
                    continue
                why = plan.not_run(spec, np_)
                if why:  # the same decision on every rank
                    if self.world.Get_rank() == 0:
                        emit(measured.unmeasured(spec, plan.sizes(spec), np_, why,
                                                 self.cfg.check, multi=plan.multi))
                    continue
                m = self.run_count(spec, np_, mode)
                if m is not None:
                    emit(m)
                _mpi.quiet_barrier(self.world)  # the others sleep while rank 0 writes
                if self.world.bcast(m.failed if m is not None else None, root=0):
                    break

    def unsupported(self, spec: BenchmarkSpec, missing: list[str]) -> Measurement:
        """The record of a benchmark this MPI library cannot run (every size UNSUPPORTED)."""
        counts = self.plan.counts(spec, self.world.Get_size()) or [self.world.Get_size()]
        need = (f"MPI_{missing[0]}" + (f" and {len(missing) - 1} more of the calls it needs"
                                       if len(missing) > 1 else "")
                if missing else "a call that another rank's MPI library lacks")
        return measured.unmeasured(spec, self.plan.sizes(spec), counts[0],
                                   f"{spec.name} not run: the MPI library lacks {need}",
                                   self.cfg.check, multi=self.plan.multi)

    def run_count(self, spec: BenchmarkSpec, np_: int, mode: str = "") -> Measurement | None:
        MPI, world = self.MPI, self.world
        W = world.Get_size()
        ngroups = 1 if self.plan.multi is None else max(1, W // np_)
        position = self.plan.position(world.Get_rank(), W)
        active = position < ngroups * np_
        group_index = position // np_ if active else MPI.UNDEFINED
        gcomm = world.Split(group_index, position)
        rcomm = world.Split(0 if active else MPI.UNDEFINED, position)
        try:
            if not active:
                self.idle_barrier(idle=True)
                return None
            m = self._measure(spec, np_, ngroups, int(group_index), gcomm, rcomm, mode)
            self.idle_barrier(idle=False)
            if m is not None:
                m.idle = W - ngroups * np_
            return m
        finally:
            for c in (gcomm, rcomm):
                if c != MPI.COMM_NULL:
                    c.Free()

    def idle_barrier(self, idle: bool) -> None:
        """IMB's idle ranks wait in a barrier; here a nonblocking one polled with short sleeps.

        A blocking MPI_Barrier busy-polls, and on an oversubscribed node the waiting ranks
        would steal CPU time from the ranks being measured. Every rank uses the same call
        (nonblocking and blocking collectives do not match). An ``idle`` rank waits for the
        whole benchmark; the measuring ranks, which ended its last size together, for the
        others' last steps only (a size's guard: the deadline moves on, and the backstop's
        timer is not set back and forth for each benchmark).
        """
        req = self.world.Ibarrier()
        stall = self.plan.stall()
        if idle:
            n_sizes = len(self.plan.sizes(self.current)) if self.current else 1
            _mpi.guard(stall * (n_sizes + 1), "waiting for the other ranks' benchmark")
        else:
            _mpi.guard(stall, "waiting for the other ranks to end the benchmark")
        delay = IDLE_POLL / 256  # short at first: the others are often about to arrive
        while not req.Test():
            time.sleep(delay)
            delay = min(IDLE_POLL, 2 * delay)
        # Until the next size arms its own: the steps between benchmarks are guarded too.
        _mpi.guard(stall, "the steps between benchmarks")

    def _measure(self, spec: BenchmarkSpec, np_: int, ngroups: int, group_index: int,
                 gcomm: Comm, rcomm: Comm, mode: str) -> Measurement | None:
        MPI, cfg, plan = self.MPI, self.cfg, self.plan
        sizes = plan.sizes(spec)
        S, B = len(sizes), plan.batches(spec, mode)
        is_root = rcomm.Get_rank() == 0
        ctx = Ctx(MPI, gcomm, cfg, spec, group_index, ngroups, mode=mode)
        K = plan.figures(spec)  # one per metric; IMB-MT's: one per thread
        reps = np.zeros(S, dtype=np.int64)
        status = [SKIPPED] * S
        my_times = np.full((S, K), np.nan)
        my_samples = np.full((S, B, K), np.nan)
        my_iters = np.zeros((S, B), dtype=np.int64)
        my_prepared: dict[str, np.ndarray] = {}
        defects = np.zeros(S, dtype=np.int64)
        my_single: list[np.ndarray] = []  # --per-iteration: each size's recorded iterations
        # --sync window (collectives): the clocks, and per size the width, invalid calls
        clock = (self._synchronize(gcomm) if cfg.options.get("start_policy") == "window"
                 and spec.kind in (Kind.COLLECTIVE, Kind.SYNC) else None)
        widths, invalid, resynced = np.full(S, np.nan), np.zeros(S, dtype=np.int64), []
        latest = np.full(S, np.nan)  # per size: the calls' latest end less the start, mean
        ctx.twins = (("windowed",) if clock is not None else ()) + (
            ("per_iteration",) if cfg.options.get("per_iteration") else ())
        strides: list[int] = []  # and which: every stride-th of the size's timed ones
        plan.open(ctx, sizes)
        failure = ""
        i = 0
        # The benchmark's own set-up (its file) spans all sizes; a CollectiveFailure, raised
        # by every rank of the group together, ends the benchmark with a failed row.
        with contextlib.ExitStack() as bench:
            try:
                if spec.setup is not None:
                    ctx.state = bench.enter_context(spec.setup(ctx, sizes))
                    plan.open(ctx, sizes)  # the -time budget is for measuring, not set-up
                for i, nbytes in enumerate(sizes):
                    what = f"{spec.name} at {np_} processes, {plan.label(nbytes)}"
                    stall = plan.stall(nbytes)
                    _mpi.guard(stall, what)
                    if self.progress is not None and is_root:
                        self.progress(plan.progress(spec, np_, nbytes))
                    n0, ended = plan.admit(ctx, i, nbytes)
                    if ended is not None:
                        status[i] = ended
                        break
                    ctx.begin_size(n0)
                    with contextlib.ExitStack() as ctx.resources:
                        run_all = plan.enter(ctx, nbytes)

                        def run(k: int, run_all: Callable[[int], object] = run_all) -> float:
                            # the first figure: calibration and warm-up
                            return float(np.atleast_1d(np.asarray(run_all(k)))[0])

                        n, ended = plan.repetitions(ctx, run, rcomm, i, nbytes, n0)
                        if ended is not None:
                            status[i] = ended
                            break
                        per = plan.warm_up(ctx, run, n)
                        parts = schedule.split_batches(n, B)
                        ctx.batches = len(parts)
                        if ctx.twins:  # an untimed call readies the twins the timed use
                            run_all(1)
                        if cfg.options.get("per_iteration"):
                            iterations.prepare(ctx, n, int(cfg.options["per_iteration_max"]))
                        if clock is not None:
                            if self._stale(gcomm, clock):
                                clock = self._synchronize(gcomm, clock.fits + 1)
                                resynced.append(int(nbytes))
                            widths[i] = window.width_for(self._per_call(gcomm, run, n),
                                                         clock.residual_max)
                            timed, parts = self._windowed(ctx, run_all, parts, gcomm, clock,
                                                          float(widths[i]))
                            invalid[i] = n - sum(parts)
                            n = sum(parts)
                            total, count = ctx.window_latest
                            if count:
                                latest[i] = total / count
                        else:
                            timed = plan.timed(ctx, run_all, parts, per, stall, what)
                        if ctx.iter_times is not None:
                            my_single.append(ctx.iter_times * spec.time_scale)
                            strides.append(ctx.iter_stride)
                    # after the kernel's own end: its checks count their defects there
                    status[i] = OK
                    reps[i] = n
                    my_iters[i, : len(parts)] = parts
                    my_samples[i, : len(parts)] = timed
                    my_times[i] = np.nansum(timed, axis=0) / max(n, 1) * spec.time_scale
                    defects[i] = ctx.defects
                    for name, value in ctx.prepared.items():
                        my_prepared.setdefault(name, np.full(S, np.nan))[i] = value
                    plan.close_size(ctx, rcomm, i, float(my_times[i, 0] * n))
            except CollectiveFailure as exc:
                status[i] = FAILED
                failure = str(exc)
        _mpi.guard(plan.stall(), f"{spec.name} at {np_} processes, gathering the results")
        gathered = rcomm.gather(
            (my_samples, my_iters, group_index, self.world.Get_rank(), defects, my_prepared,
             my_single, window.clock_row(clock)), root=0,
        )
        if not is_root or gathered is None:
            return None
        samples_, iters, groups, world_ranks, all_defects, preps, singles, clocks = zip(
            *gathered, strict=True)
        return measured.from_batches(spec, **plan.record(
            sizes=sizes, repetitions=reps, status=status,
            samples=np.stack(samples_, axis=1),  # [size, rank, batch, figure]
            batch_iters=np.stack(iters, axis=1), nprocs=np_, ngroups=ngroups,
            multi=plan.multi, mode=mode, group=groups, world_ranks=world_ranks,
            msgrate_factor=plan.factor(spec, np_),
            defects=np.sum(all_defects, axis=0) if cfg.check else None,
            needed_gb=plan.needed_gb(), checked=cfg.check,
            prepared={name: np.stack([p.get(name, np.full(S, np.nan)) for p in preps], axis=1)
                      for name in dict.fromkeys(n for p in preps for n in p)},
            attrs={**({"failure": failure} if failure else {}), **ctx.attrs, **plan.attrs(),
                   **({"iteration_stride": strides} if strides else {}),
                   **(window.attrs(clocks, widths, invalid, resynced, latest)
                      if clock is not None else {})},
            iterations=iterations.stack(singles, S) if cfg.options.get("per_iteration")
            else None))

    def _synchronize(self, comm: Comm, fits: int = 1) -> window.Clock:
        """Every rank of the group: its model of the group root's clock (--sync window)."""
        world_rank = np.array([self.world.Get_rank()], dtype=np.int64)
        members = np.empty(comm.Get_size(), dtype=np.int64)
        comm.Allgather(world_rank, members)
        node_of = [int(runtime.node_ids[r]) for r in members] if runtime.node_ids is not None \
            else [0] * len(members)
        clock = window.synchronize(self.MPI, comm, node_of)
        clock.fits = fits
        clock.residual_max = _mpi.allreduce_number(comm, clock.residual, self.MPI.MAX)
        return clock

    def _stale(self, comm: Comm, clock: window.Clock) -> bool:
        """Whether some rank's model may have drifted past the bound (group-wide)."""
        worst = _mpi.allreduce_number(comm, clock.predicted_error(self.MPI.Wtime()),
                                      self.MPI.MAX)
        return bool(worst > window.RESYNC_BOUND_S)

    def _per_call(self, comm: Comm, run: Callable[[int], float], n: int) -> float:
        """The slowest rank's time per call of a short untimed run (the window's width)."""
        k = max(1, min(n, 20))
        return float(_mpi.allreduce_number(comm, run(k) / k, self.MPI.MAX))

    def _windowed(self, ctx: Ctx, run_all: Callable[[int], object], parts: list[int],
                  comm: Comm, clock: window.Clock, width: float
                  ) -> tuple[np.ndarray, list[int]]:
        """The timed batches under the window policy (the kernel's timed calls agree on
        their starts, :class:`beff.bench.window.Windows`): each batch's figures over its
        valid calls (NaN where none was valid), and how many were valid."""
        timed, valid = [], []
        own = runtime.own
        crowded = int(own.get("local_size", 1)) > max(1, int(own.get("ncpus", 1) or 1))
        ctx.window = window.Windows(self.MPI, comm, clock, width, share=crowded)
        try:
            for ctx.batch, k in enumerate(parts):
                ctx.window_valid = None
                figures = np.atleast_1d(np.asarray(run_all(k), dtype=np.float64))
                count = k if ctx.window_valid is None else int(ctx.window_valid.sum())
                timed.append(figures if count else np.full_like(figures, np.nan))
                valid.append(count)
        finally:
            ctx.window = None
        return np.array(timed, dtype=np.float64), valid
