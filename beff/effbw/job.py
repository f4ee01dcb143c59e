"""``beff run``: validate on rank 0, measure b_eff, store everything, render on rank 0."""

from __future__ import annotations

import json
import sys
import time
import types
from dataclasses import asdict
from typing import Any

import numpy as np
from rich.console import Console

from beff.core import capi, runtime
from beff.core import mpi as _mpi
from beff.core.config import RunConfig, build_config, check_output_path
from beff.core.errors import UsageError
from beff.core.metadata import collect_rank, placement, run_attrs
from beff.core.progress import make_progress
from beff.effbw import measure as effbw
from beff.patterns import memory_mib, reduce_beff
from beff.render import beff as report_beff
from beff.results.archive import ResultFile


def default_output() -> str:
    return time.strftime("beff-%Y%m%dT%H%M%SZ.h5", time.gmtime())


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
        check_output_path(cfg.output)
        return cfg

    runtime.run_job(str(overrides.get("thread_level", "single")), prepare, run)


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
    overhead, backend_warning = capi.start(cfg.backend)
    ranks = world.allgather(collect_rank(MPI))
    where = placement(ranks)  # every rank: node ids for the cross-node shares
    plan = world.bcast(effbw.make_plan(cfg, ranks) if rank == 0 else None, root=0)
    out: ResultFile | None = None
    attrs: dict[str, Any] = {}
    if rank == 0:
        attrs = run_attrs(MPI, cfg.argv)
        attrs.update(config=json.loads(cfg.to_json()), config_sources=cfg.sources,
                     placement=where, overhead=overhead,
                     benchmarks=["b_eff"], suite="beff", checked=False,
                     oversubscribed=where["oversubscribed"])
        attrs["config"].pop("sources", None)
        out = ResultFile(cfg.output or default_output())
        out.create(attrs, ranks)
        _mpi.on_abort(lambda: out.finish("aborted") if out else None)
    stderr = Console(stderr=True, highlight=False)
    if rank == 0:
        for w in ([backend_warning] if backend_warning else []) + report_beff.run_warnings(
                attrs, plan):
            stderr.print(f"[bold yellow]warning:[/bold yellow] {w}")
    node_of = [int(r["node"]) for r in ranks]
    total = plan.repetitions * (len(plan.lengths) + 1)
    with make_progress(cfg.progress if rank == 0 else False, total) as advance:
        holder: dict[str, Any] = {}

        def flush(r: int, st: effbw.State) -> None:
            """After each repetition: reduce over ranks (collective) and store on rank 0."""
            bench = holder["bench"]
            participating = np.array([b.pattern.participate_cnt for b in bench.bound],
                                     dtype=np.float64)[None, None, :, None]
            lo, avg, hi = effbw.reduce_over_ranks(MPI, st.bw_local, participating)
            holder["reduced"] = (lo, avg, hi)
            if out is not None:
                _store_raw(out, plan, bench, st, lo, avg, hi, r)

        bench = effbw.Beff(MPI, plan, advance, flush)
        holder["bench"] = bench
        bench.run()
    crossing = _cross_node(MPI, bench.bound, node_of)
    total_cross = np.zeros_like(crossing)
    world.Reduce(crossing, total_cross, op=MPI.SUM, root=0)
    st = bench.state
    lo, avg, hi = holder["reduced"]  # the last repetition's flush reduced everything
    if rank != 0 or out is None:
        return
    summary = summarize(cfg, plan, bench, lo, total_cross, time.monotonic() - started)
    _store_raw(out, plan, bench, st, lo, avg, hi, plan.repetitions - 1, summary)
    out.finish("complete")
    fmt = cfg.format
    if fmt == "json":
        sys.stdout.write(json.dumps({"beff": summary}, indent=2) + "\n")
    else:
        console = Console(highlight=False, soft_wrap=True)
        report_beff.render(summary, attrs, console)
    stderr.print(f"[dim]results written to {out.path}[/dim]")


def pattern_b(plan: effbw.Plan, bench: effbw.Beff, lo: np.ndarray) -> np.ndarray:
    """b[rep, len, pat, meth] in bytes/s: min over ranks times all_msg_cnt / sr_count."""
    scales = bench.patterns.scales()
    b = np.where(np.isfinite(lo), lo, 0.0) * scales[None, None, :, None]
    return b


def summarize(cfg: RunConfig, plan: effbw.Plan, bench: effbw.Beff, lo: np.ndarray,
              crossing: np.ndarray, runtime_s: float) -> dict[str, Any]:
    """The derived numbers under documented, stable keys (share/schema/README.md)."""
    b = pattern_b(plan, bench, lo)
    official = [i for i, m in enumerate(plan.methods)
                if m in effbw.OFFICIAL or cfg.extra_methods_in_beff]
    kinds = bench.patterns.kinds
    res = reduce_beff(b[..., official], nprocs=plan.nprocs, kinds=kinds, lengths=plan.lengths,
                      pingpong_index=bench.patterns.pingpong_index)
    P = plan.nprocs
    tag = "SHORT" if plan.short else ""
    mb = 1e6
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(crossing[:, 0] > 0, crossing[:, 1] / crossing[:, 0], 0.0)
    summary: dict[str, Any] = {
        "mode": f"b_eff{tag}",
        "nprocs": P,
        "memory_per_proc_bytes": plan.memory_per_proc,
        "memory_per_proc_source": plan.memory_source,
        "lmax_bytes": plan.lmax,
        "lengths": list(plan.lengths),
        "seed": plan.seed,
        "repetitions": plan.repetitions,
        "time_per_loop_s": plan.time_per_loop,
        "buffers": "hugepage" if plan.hugepages else "malloc-like",
        "methods": [effbw.METHODS[m] for m in plan.methods],
        "methods_in_b_eff": [effbw.METHODS[plan.methods[i]] for i in official],
        "b_eff_MBps": res.b_eff / mb,
        "b_eff_per_process_MBps": res.b_eff_per_process / mb,
        "b_eff_lmax_MBps": res.b_eff_lmax / mb,
        "b_eff_lmax_per_process_MBps": res.b_eff_lmax / mb / P,
        "ring_lmax_MBps": res.ring_lmax / mb,
        "ring_lmax_per_process_MBps": res.ring_lmax / mb / P,
        "b_ring_MBps": res.b_ring / mb,
        "b_random_MBps": res.b_random / mb,
        "latency_us": res.latency_us,
        "latency_ring_us": res.latency_ring_us,
        "latency_ring_text_us": res.latency_ring_text_us,
        "pingpong_latency_us": res.pingpong_latency_us,
        "pingpong_bandwidth_MBps": res.pingpong_bandwidth / mb,
        "per_length": [
            {"bytes": int(L), "b_eff_MBps": float(res.b_eff_length[i]) / mb,
             "ring_MBps": float(res.ring_length[i]) / mb,
             "random_MBps": float(res.random_length[i]) / mb}
            for i, L in enumerate(plan.lengths)],
        "patterns": [
            {"index": p.index, "label": p.label, "kind": p.kind,
             "b_MBps": float(res.b_pattern[p.index]) / mb,
             "cross_node_share": float(share[p.index])}
            for p in bench.patterns],
        "shortened_repetitions": [int(r) for r in np.flatnonzero(bench.state.shortened)],
        "runtime_s": runtime_s,
        "warnings": list(res.warnings),
    }
    summary["final_line"] = _final_line(res.b_eff, P, plan, tag)
    if len(official) < len(plan.methods):
        extra = reduce_beff(b, nprocs=P, kinds=kinds, lengths=plan.lengths)
        summary["b_eff_all_methods_MBps"] = extra.b_eff / mb
    return summary


def _final_line(b_eff: float, nprocs: int, plan: effbw.Plan, tag: str) -> str:
    from beff.patterns import final_line

    return final_line(b_eff, nprocs, memory_mib(plan.memory_per_proc), effbw.uname_fields(), tag)


def _store_raw(out: ResultFile, plan: effbw.Plan, bench: effbw.Beff, st: effbw.State,
               lo: np.ndarray, avg: np.ndarray, hi: np.ndarray, done_rep: int,
               summary: dict[str, Any] | None = None) -> None:
    """Write everything needed to recompute b_eff (after each repetition, and at the end)."""
    pats = bench.patterns
    attrs: dict[str, Any] = {
        "plan": json.dumps(asdict(plan)),
        "repetitions_done": done_rep + 1,
        "labels": json.dumps(list(pats.labels)),
        "kinds": json.dumps(list(pats.kinds)),
        "methods": json.dumps([effbw.METHODS[m] for m in plan.methods]),
        "method_labels": json.dumps([effbw.METHOD_LABELS[m] for m in plan.methods]),
        "dims2": json.dumps(list(pats.dims2)),
        "dims3": json.dumps(list(pats.dims3)),
        "extra": json.dumps(st.extra),
    }
    if summary is not None:
        attrs["summary"] = json.dumps(summary)
    datasets: dict[str, tuple[np.ndarray, str]] = {
        "lengths": (np.asarray(plan.lengths, dtype=np.int64), "B"),
        "bw_min": (lo, "B/s"),
        "bw_avg": (avg, "B/s"),
        "bw_max": (hi, "B/s"),
        "b": (pattern_b(plan, bench, lo), "B/s"),
        "scale": (pats.scales(), "1"),
        "all_msg_cnt": (np.array([p.all_msg_cnt for p in pats]), "1"),
        "sr_count": (np.array([p.sr_count(0) for p in pats]), "1"),
        "participate_cnt": (np.array([p.participate_cnt for p in pats]), "1"),
        "looplng": (st.looplng, "1"),
        "loop_time": (st.loop_time, "s"),
        "loop_min": (np.where(np.isfinite(st.loop_min), st.loop_min, np.nan), "s"),
        "loop_max": (st.loop_max, "s"),
        "shortened": (st.shortened, "1"),
        "best_method": (st.best, "1"),
    }
    if plan.nprocs <= 1 << 16:
        perms = [p.perm for p in pats if p.kind == "random" and p.perm is not None]
        if perms:
            datasets["random_perm"] = (np.stack(perms), "1")
    out.add_group("beff", attrs, datasets)
