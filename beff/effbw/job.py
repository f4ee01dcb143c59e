"""b_eff's job (``beff run``): its checks, its plan, and a record after each repetition."""

from __future__ import annotations

import dataclasses
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from beff.core import runtime
from beff.core.config import RunConfig
from beff.core.errors import UsageError
from beff.core.metadata import uname_fields
from beff.core.mpi import quiet_barrier
from beff.core.progress import Bar
from beff.core.suite import Suite
from beff.effbw import measure as effbw
from beff.effbw.record import ONE_NODE, BeffRecord
from beff.patterns.looplength import MIN_REPETITIONS
from beff.results.model import Result, RunRecord


def _cross_node(MPI: types.ModuleType, bound: list[effbw.Bound],
                node_of: np.ndarray) -> np.ndarray:
    """Per pattern: messages this rank sends per iteration, and how many cross nodes."""
    world_group = MPI.COMM_WORLD.Get_group()
    me = node_of[MPI.COMM_WORLD.Get_rank()]
    out = np.zeros((len(bound), 2))
    for i, b in enumerate(bound):
        if b.participation <= 0:
            continue
        dests = [d for d, _, _ in b.steps if d >= 0]
        if not dests:
            continue
        group = b.comm.Get_group()
        world = MPI.Group.Translate_ranks(group, dests, world_group)
        group.Free()
        out[i] = (len(dests), sum(1 for w in world if node_of[w] != me))
    world_group.Free()
    return out


class BeffJob:
    """One ``beff run``: b_eff's plan, the measurement, and its record after each
    repetition (the record grows; it is rendered at the end)."""

    network = ONE_NODE  # the one-node warning in b_eff's words
    streaming = False

    def __init__(self, suite: Suite) -> None:
        self.derived: dict[str, Any] = {}
        self.plan: effbw.Plan | None = None
        self.started = time.monotonic()
        self.node_of: np.ndarray = np.zeros(0, dtype=np.int64)
        # --resume: the file's record, whose finished repetitions are not measured again
        self.kept: BeffRecord | None = None

    def resume(self, record: RunRecord) -> None:
        """Rank 0, ``--resume``: the repetitions the file's record finished are kept."""
        found = [r for r in record.results if isinstance(r, BeffRecord)]
        self.kept = found[0] if found else None

    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        unknown = sorted(set(cfg.options.methods) - set(effbw.METHODS))
        if unknown or not cfg.options.methods:
            raise UsageError(f"--methods: unknown method(s) {', '.join(unknown) or '(none)'}; "
                             f"known: {', '.join(effbw.METHODS)}")
        if MPI.COMM_WORLD.Get_size() < 2:
            raise UsageError("b_eff needs at least 2 processes; run it as "
                             "`mpiexec -n P beff run` with P >= 2")

    def names(self) -> list[str]:
        return ["b_eff"]

    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        world = MPI.COMM_WORLD
        self.started = time.monotonic()
        plan, why = None, ""
        if ranks is not None:  # rank 0's: every rank's facts
            plan = effbw.make_plan(cfg, ranks)
            if self.kept is not None:  # the same random patterns as the kept repetitions
                plan = dataclasses.replace(plan, seed=self.kept.seed)
                why = _kept_differs(self.kept, plan)
        self.plan, why = world.bcast((plan, why), root=0)
        if why:  # every rank at once: one line, exit 2
            runtime.usage_exit(why)
        self.node_of = runtime.node_ids
        return {}

    def notes(self) -> list[str]:
        return []

    def steps(self, nprocs: int) -> int:
        assert self.plan is not None
        return self.plan.repetitions * (len(self.plan.lengths) + 1)

    def measure(self, MPI: types.ModuleType, cfg: RunConfig,
                emit: Callable[[Result], None], bar: Bar) -> str:
        plan = self.plan
        assert plan is not None
        world = MPI.COMM_WORLD
        holder: dict[str, Any] = {}

        kept = self.kept
        first = kept.repetitions_done if kept is not None else 0

        def flush(r: int, st: effbw.State) -> None:
            """After each repetition: reduce over ranks (collective) and store on rank 0."""
            bench = holder["bench"]
            participating = np.array([b.pattern.participate_cnt for b in bench.bound],
                                     dtype=np.float64)[None, None, :, None]
            reduced = effbw.reduce_over_ranks(MPI, st.bw_local, participating)
            if world.Get_rank() == 0:
                if kept is not None:
                    reduced = _with_kept(reduced, kept, first, st)
                emit(make_record(cfg, plan, bench, reduced, r, holder["cross"],
                                 time.monotonic() - self.started
                                 + (kept.runtime_s if kept is not None else 0.0)))
            quiet_barrier(world)  # the others sleep while rank 0 writes

        bench = effbw.Beff(MPI, plan, bar, flush, cfg.stall_timeout, first=first)
        if kept is not None:  # the kept repetitions' loop control, as measured then
            st = bench.state
            for name, value in (("looplng", kept.looplng), ("loop_time", kept.loop_time),
                                ("loop_min", kept.loop_min), ("loop_max", kept.loop_max),
                                ("shortened", kept.shortened), ("best", kept.best_method)):
                getattr(st, name)[:first] = value[:first]
        holder["bench"] = bench
        crossing = _cross_node(MPI, bench.bound, self.node_of)
        holder["cross"] = np.zeros_like(crossing)
        world.Reduce(crossing, holder["cross"], op=MPI.SUM, root=0)
        bench.run()
        return ""

    def finish(self, results: list[Result], nprocs: int) -> list[str]:
        return []


def _kept_differs(kept: BeffRecord, plan: effbw.Plan) -> str:
    """Why a resumed run would not measure what the kept repetitions measured ("" if it
    would): the same config can still give another plan, as the memory per process follows
    the nodes' memory."""
    mine = (plan.nprocs, plan.memory_per_proc, plan.seed, plan.repetitions,
            [effbw.METHODS[m] for m in plan.methods], [int(x) for x in plan.lengths])
    theirs = (kept.nprocs, kept.memory_per_proc, kept.seed, kept.repetitions, list(kept.methods),
              [int(x) for x in kept.lengths])
    if mine == theirs:
        return ""
    return (f"--resume: the file's b_eff measured {kept.memory_per_proc:,} bytes per process "
            f"at lengths up to {int(kept.lengths[-1]):,}, this run would measure "
            f"{plan.memory_per_proc:,} up to {int(plan.lengths[-1]):,} (give "
            "--memory-per-proc)")


def _with_kept(reduced: tuple[np.ndarray, ...], kept: BeffRecord, first: int,
               st: effbw.State) -> tuple[np.ndarray, ...]:
    """The reductions of a resumed run: the kept repetitions from the file. A later
    repetition whose largest length the 60-second rule took from the first repetition (on
    the ranks, which no longer hold it) takes it from the kept one."""
    out = tuple(np.array(a, copy=True) for a in reduced)
    for a, old in zip(out, (kept.bw_min, kept.bw_avg, kept.bw_max), strict=True):
        a[:first] = old[:first]
        for r in range(first, len(a)):
            if st.shortened[r] and r >= MIN_REPETITIONS:
                a[r, -1] = a[0, -1]
    return out


def make_record(cfg: RunConfig, plan: effbw.Plan, bench: effbw.Beff,
                reduced: tuple[np.ndarray, ...], done_rep: int,
                crossing: np.ndarray, runtime_s: float) -> BeffRecord:
    """Everything needed to derive b_eff (after each repetition, and at the end)."""
    pats, st = bench.patterns, bench.state
    lo, avg, hi = reduced
    perms = [p.perm for p in pats if p.kind == "random" and p.perm is not None]
    return BeffRecord(
        nprocs=plan.nprocs, memory_per_proc=plan.memory_per_proc,
        memory_source=plan.memory_source, lmax=plan.lmax, seed=plan.seed,
        repetitions=plan.repetitions, repetitions_done=done_rep + 1,
        time_per_loop=plan.time_per_loop, short=plan.short, hugepages=plan.hugepages,
        methods=[effbw.METHODS[m] for m in plan.methods],
        method_labels=[effbw.METHOD_LABELS[m] for m in plan.methods],
        official=[m in effbw.OFFICIAL or cfg.options.extra_methods_in_beff for m in plan.methods],
        labels=list(pats.labels), kinds=list(pats.kinds), pingpong_index=pats.pingpong_index,
        uname=uname_fields(), lengths=np.asarray(plan.lengths, dtype=np.int64),
        bw_min=lo, bw_avg=avg, bw_max=hi, scale=pats.scales(),
        all_msg_cnt=np.array([p.all_msg_cnt for p in pats]),
        sr_count=np.array([p.sr_count(0) for p in pats]),
        participate_cnt=np.array([p.participate_cnt for p in pats]),
        looplng=st.looplng, loop_time=st.loop_time,
        loop_min=np.where(np.isfinite(st.loop_min), st.loop_min, np.nan),
        loop_max=st.loop_max, shortened=st.shortened, best_method=st.best,
        cross_node=crossing, runtime_s=runtime_s, dims2=list(pats.dims2),
        dims3=list(pats.dims3),
        random_perm=np.stack(perms) if perms and plan.nprocs <= 1 << 16 else None,
    )


def job(suite: Suite) -> BeffJob:
    return BeffJob(suite)
