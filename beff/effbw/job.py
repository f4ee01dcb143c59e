"""``beff run``: validate on rank 0, measure b_eff, store everything, render on rank 0."""

from __future__ import annotations

import json
import sys
import time
import types
from typing import Any

import numpy as np

from beff.core import runtime, terminal
from beff.core.config import (
    RunConfig,
    build_config,
    check_output_path,
    default_output,
    thread_level_before_init,
)
from beff.core.errors import UsageError
from beff.core.progress import make_progress
from beff.effbw import measure as effbw
from beff.render import beff as report_beff
from beff.render.imb import print_warnings
from beff.results import warnings
from beff.results.archive import ResultFile, start_run_file
from beff.results.effbw import BeffRecord, summarize


def main(overrides: dict[str, Any]) -> None:
    """Entry point of ``beff run`` once its options are parsed (before MPI)."""

    def prepare(MPI: types.ModuleType) -> RunConfig:
        cfg = build_config(overrides, overrides.get("config_file"))
        cfg.suite = "beff"
        unknown = sorted(set(cfg.methods) - set(effbw.METHODS))
        if unknown or not cfg.methods:
            raise UsageError(f"--methods: unknown method(s) {', '.join(unknown) or '(none)'}; "
                             f"known: {', '.join(effbw.METHODS)}")
        size = MPI.COMM_WORLD.Get_size()
        if size < 2:
            raise UsageError("b_eff needs at least 2 processes; run it as "
                             "`mpiexec -n P beff run` with P >= 2")
        if cfg.output is None:
            cfg.output = default_output()
        check_output_path(cfg.output, cfg.force, cfg.config_file)
        return cfg

    runtime.run_job(thread_level_before_init(overrides), prepare, run, overrides=overrides)


def _cross_node(MPI: types.ModuleType, bound: list[effbw.Bound],
                node_of: list[int]) -> np.ndarray:
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


def run(MPI: types.ModuleType, cfg: RunConfig) -> None:
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    started = time.monotonic()
    # every rank's node id: the cross-node shares
    ranks, overhead, backend_warning = runtime.begin(MPI, cfg.timeout, cfg.backend, True)
    assert ranks is not None
    plan = world.bcast(effbw.make_plan(cfg, ranks) if rank == 0 else None, root=0)
    out: ResultFile | None = None
    attrs: dict[str, Any] = {}
    if rank == 0:
        out, attrs = start_run_file(MPI, cfg, ranks, overhead=overhead, benchmarks=["b_eff"],
                                    suite="beff", checked=False)
    stderr = terminal.console(stderr=True)
    found: list[str] = []
    if rank == 0:
        found = ([backend_warning] if backend_warning else []) + warnings.run_warnings(
            attrs, network=True)
        print_warnings(stderr, found)
    node_of = [int(r["node"]) for r in ranks]
    total = plan.repetitions * (len(plan.lengths) + 1)
    with make_progress(cfg.progress if rank == 0 else False, total) as advance:
        holder: dict[str, Any] = {}

        def flush(r: int, st: effbw.State) -> None:
            """After each repetition: reduce over ranks (collective) and store on rank 0."""
            bench = holder["bench"]
            participating = np.array([b.pattern.participate_cnt for b in bench.bound],
                                     dtype=np.float64)[None, None, :, None]
            reduced = effbw.reduce_over_ranks(MPI, st.bw_local, participating)
            if out is not None:
                holder["record"] = make_record(cfg, plan, bench, reduced, r, total_cross,
                                               time.monotonic() - started)
                out.add_beff(holder["record"])

        bench = effbw.Beff(MPI, plan, advance, flush, cfg.stall_timeout)
        holder["bench"] = bench
        crossing = _cross_node(MPI, bench.bound, node_of)
        total_cross = np.zeros_like(crossing)
        world.Reduce(crossing, total_cross, op=MPI.SUM, root=0)
        bench.run()
    if rank != 0 or out is None:
        return
    out.set_attrs(warnings=found)
    out.finish("complete")
    summary = summarize(holder["record"])
    fmt = cfg.format
    if fmt == "json":
        sys.stdout.write(json.dumps({"beff": summary}, indent=2) + "\n")
    else:
        console = terminal.console()
        report_beff.render(summary, attrs, console)
    stderr.print(f"[dim]results written to {out.path}[/dim]")


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
        official=[m in effbw.OFFICIAL or cfg.extra_methods_in_beff for m in plan.methods],
        labels=list(pats.labels), kinds=list(pats.kinds), pingpong_index=pats.pingpong_index,
        uname=effbw.uname_fields(), lengths=np.asarray(plan.lengths, dtype=np.int64),
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
