"""The measurement core shared by the IMB-style suites.

For each benchmark and process count it forms the active groups (idle ranks wait in a
barrier), and for each message size it checks the time and memory budgets, calibrates the
repetition count, warms up, synchronizes, and times batches of iterations with MPI.Wtime.
Kernels never see the schedule; they only run n iterations and return the timed seconds.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from beff.bench import iterations, measured, schedule, window
from beff.bench.ctx import Ctx
from beff.bench.registry import AGGREGATE, NON_AGGREGATE, BenchmarkSpec, Kind, Sizes
from beff.core import capi, counts, runtime
from beff.core import mpi as _mpi
from beff.core.buffers import off_cache_slots
from beff.core.config import RunConfig, stall_limit
from beff.core.errors import CollectiveFailure
from beff.results.model import (
    FAILED,
    OK,
    OUT_OF_MEM,
    SKIPPED,
    TIME_OUT,
    Measurement,
    measurement_key,
)

if TYPE_CHECKING:  # mpi4py's own stubs; importing mpi4py.MPI at run time would start MPI
    from mpi4py.MPI import Comm

N_BARR = 2
IDLE_POLL = 0.002  # seconds between polls of a waiting rank
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


ProgressFn = Callable[[str], None]


class Driver:
    """Runs the benchmarks of one suite on MPI.COMM_WORLD; rank 0 receives the Measurements."""

    def __init__(self, MPI: types.ModuleType, cfg: RunConfig,
                 progress: ProgressFn | None = None, done: dict[str, bool] | None = None,
                 ) -> None:
        self.MPI = MPI
        self.cfg = cfg
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
        """
        _mpi.injected_fault(spec.name, self.world.Get_rank())
        self.current = spec
        missing = [name for name in spec.requires if not capi.has(name)]
        if spec.requires and _mpi.allreduce_number(self.world, bool(missing), self.MPI.LOR):
            if self.world.Get_rank() == 0:
                emit(self.unsupported(spec, missing))
            return
        for mode in modes_for(spec, self.cfg):
            for np_ in counts_for(spec, self.cfg, self.world.Get_size()):
                key = measurement_key(spec.suite, spec.name, mode, np_,
                                      self.cfg.options.multi)
                if key in self.done:  # the resumed file's (the same on every rank)
                    if self.done[key]:
                        break
                    continue
                m = self.run_count(spec, np_, mode)
                if m is not None:
                    emit(m)
                if self.world.bcast(m.failed if m is not None else None, root=0):
                    break

    def unsupported(self, spec: BenchmarkSpec, missing: list[str]) -> Measurement:
        """The record of a benchmark this MPI library cannot run (every size UNSUPPORTED)."""
        counts = counts_for(spec, self.cfg, self.world.Get_size()) or [self.world.Get_size()]
        need = (f"MPI_{missing[0]}" + (f" and {len(missing) - 1} more of the calls it needs"
                                       if len(missing) > 1 else "")
                if missing else "a call that another rank's MPI library lacks")
        return measured.unmeasured(spec, sizes_for(spec, self.cfg), counts[0],
                                   f"{spec.name} not run: the MPI library lacks {need}",
                                   self.cfg.check, multi=self.cfg.options.multi)

    def run_count(self, spec: BenchmarkSpec, np_: int, mode: str = "") -> Measurement | None:
        MPI, world, cfg = self.MPI, self.world, self.cfg
        W = world.Get_size()
        ngroups = 1 if cfg.options.multi is None else max(1, W // np_)
        position = map_position(cfg, world.Get_rank(), W)
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
        stall = stall_limit(self.cfg, self.cfg.options.time)
        if idle:
            n_sizes = len(sizes_for(self.current, self.cfg)) if self.current else 1
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
        MPI, cfg = self.MPI, self.cfg
        sizes = sizes_for(spec, cfg)
        # Aggregate modes complete a sample's operations together: one batch, one completion.
        whole = mode == AGGREGATE or spec.single_batch
        S, B = len(sizes), 1 if whole else max(1, cfg.batches)
        x_sample = (cfg.options.msgs_nonaggr if mode == NON_AGGREGATE or spec.nonaggr
                    else cfg.options.msgspersample)
        is_root = rcomm.Get_rank() == 0
        ctx = Ctx(MPI, gcomm, cfg, spec, group_index, ngroups, mode=mode)
        K = len(spec.metrics)
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
        need = np.zeros(S)
        n_user = len(cfg.options.msglen) if cfg.options.msglen is not None else 0
        o = cfg.options
        budget = schedule.time_budget(n_user, o.msglog_min, o.msglog_max, o.time)
        t_start = MPI.Wtime()
        backend = capi.active()
        # the budget is for measuring: a loop's first compile (or load) is not counted
        compiled_before = backend.compile_seconds
        n_prev = cfg.options.msgspersample
        history: list[tuple[int, int]] = []
        raw = cfg.options.msglen if cfg.options.msglen is not None else sizes
        stall = stall_limit(cfg, cfg.options.time)
        failure = ""
        i = 0
        # The benchmark's own set-up (its file) spans all sizes; a CollectiveFailure, raised
        # by every rank of the group together, ends the benchmark with a failed row.
        with contextlib.ExitStack() as bench:
            try:
                if spec.setup is not None:
                    ctx.state = bench.enter_context(spec.setup(ctx, sizes))
                    t_start = MPI.Wtime()  # the -time budget is for measuring, not set-up
                    compiled_before = backend.compile_seconds
                for i, nbytes in enumerate(sizes):
                    _mpi.guard(stall, f"{spec.name} at {np_} processes, {nbytes} bytes")
                    if self.progress is not None and is_root:
                        self.progress(f"{spec.name} np={np_} {nbytes} B")
                    policy = self._policy(spec)
                    n0 = schedule.initial_repetitions(nbytes, cfg.options.msgspersample,
                                                      cfg.options.overall_vol_mib << 20, policy,
                                                      np_,
                                                      cfg.options.msglog_max, x_sample)
                    need[i] = buffer_bytes(spec, nbytes, np_, cfg, n0) / GIB + 0.001
                    # every rank computes the same need from the same config: no broadcast
                    if need[i] - 0.001 > cfg.options.mem_gb:
                        status[i] = OUT_OF_MEM
                        break
                    if nbytes > counts.limit() and not spec.large_counts:
                        raise CollectiveFailure(  # the same decision on every rank
                            f"{nbytes} bytes exceed the {counts.limit()} of a C int count; "
                            f"{spec.suite.upper()} messages that large are not supported yet")
                    ctx.begin_size(n0)
                    with (contextlib.ExitStack() as ctx.resources,
                          spec.kernel(ctx, nbytes) as run_all):

                        def run(k: int) -> float:  # the first metric: calibration and warm-up
                            return float(np.atleast_1d(run_all(k))[0])

                        if policy == "dynamic" and spec.kind is not Kind.SYNC:
                            n = self._calibrate(spec, run, gcomm, n0, n_prev, nbytes, raw[i],
                                                history)
                        elif policy == "dynamic":
                            n = self._calibrate(spec, run, gcomm, x_sample, x_sample,
                                                nbytes, raw[i], [])
                        else:
                            n = n0
                        n_prev = n
                        history.append((raw[i], n))
                        # IMB checks the budget after calibration, before warm-up.
                        late = is_root and (MPI.Wtime() - t_start - (
                            backend.compile_seconds - compiled_before)) > budget
                        if rcomm.bcast(late, root=0):
                            status[i] = TIME_OUT
                            break
                        warm = schedule.warmup_iterations(n)
                        if cfg.options.warm_up and spec.warm_up and warm:
                            run(warm)
                        for _ in range(N_BARR):
                            gcomm.Barrier()
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
                            timed = np.array([np.atleast_1d(run_all(k)) for ctx.batch, k
                                              in enumerate(parts)], dtype=np.float64)
                        if ctx.iter_times is not None:
                            my_single.append(ctx.iter_times * spec.time_scale)
                            strides.append(ctx.iter_stride)
                    status[i] = OK
                    reps[i] = n
                    my_iters[i, : len(parts)] = parts
                    my_samples[i, : len(parts)] = timed
                    my_times[i] = np.nansum(timed, axis=0) / max(n, 1) * spec.time_scale
                    defects[i] = ctx.defects
                    for name, value in ctx.prepared.items():
                        my_prepared.setdefault(name, np.full(S, np.nan))[i] = value
                    rcomm.Barrier()  # groups start each size together (IMB's world barrier)
                    if cfg.options.msg_pause:
                        time.sleep(max(my_times[i, 0] * n / 10, 0.1))
            except CollectiveFailure as exc:
                status[i] = FAILED
                failure = str(exc)
        _mpi.guard(stall, f"{spec.name} at {np_} processes, gathering the results")
        gathered = rcomm.gather(
            (my_samples, my_iters, group_index, self.world.Get_rank(), defects, my_prepared,
             my_single, window.clock_row(clock)), root=0,
        )
        if not is_root or gathered is None:
            return None
        samples_, iters, groups, world_ranks, all_defects, preps, singles, clocks = zip(
            *gathered, strict=True)
        return measured.from_batches(
            spec, sizes=sizes, repetitions=reps, status=status,
            samples=np.stack(samples_, axis=1),  # [size, rank, batch, metric]
            batch_iters=np.stack(iters, axis=1), nprocs=np_, ngroups=ngroups,
            multi=cfg.options.multi, mode=mode, group=groups, world_ranks=world_ranks,
            msgrate_factor=msgrate_factor(spec, cfg, np_),
            defects=np.sum(all_defects, axis=0) if cfg.check else None, needed_gb=need,
            checked=cfg.check,
            prepared={name: np.stack([p.get(name, np.full(S, np.nan)) for p in preps], axis=1)
                      for name in dict.fromkeys(n for p in preps for n in p)},
            attrs={**({"failure": failure} if failure else {}), **ctx.attrs,
                   **({"iteration_stride": strides} if strides else {}),
                   **(window.attrs(clocks, widths, invalid, resynced, latest)
                      if clock is not None else {})},
            iterations=iterations.stack(singles, S) if cfg.options.get("per_iteration")
            else None)

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

    def _policy(self, spec: BenchmarkSpec) -> str:
        policy = self.cfg.options.iter_policy
        if policy == "auto":
            return "multiple_np" if spec.rooted else "dynamic"
        return str(policy)

    def _calibrate(self, spec: BenchmarkSpec, run: Callable[[int], float], comm: Comm, n0: int,
                   n_prev: int, nbytes: int, raw: int, history: list[tuple[int, int]]) -> int:
        """IMB's dynamic policy: time 1 iteration, then a test batch, then fit ``-time``.

        Unlike IMB, the fit uses the wall-clock time per iteration when that is larger than
        the reported time, so the untimed ``-sync`` barrier of collectives counts against
        ``-time`` (on an oversubscribed node it can cost more than the call itself).
        """
        MPI, cfg = self.MPI, self.cfg
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



def msgrate_factor(spec: BenchmarkSpec, cfg: RunConfig, np_: int) -> float:
    """Messages counted per reported second (Uniband/Biband: bw_scale * window * NP/2)."""
    if spec.kind is not Kind.MSG_RATE:
        return 0.0
    return float(spec.bw_scale * cfg.options.window_size * (np_ // 2))
