"""``beff imb SUITE ...``: parse, validate on rank 0, measure, store and render."""

from __future__ import annotations

import json
import os
import sys
import time
import types
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from beff.core import capi, runtime
from beff.core import mpi as _mpi
from beff.core.config import (
    RunConfig,
    build_config,
    check_output_path,
    thread_level_before_init,
)
from beff.core.errors import UsageError
from beff.core.metadata import collect_rank, placement, run_attrs
from beff.core.progress import make_progress
from beff.imb import args as imb_args
from beff.imb.driver import Driver, counts_for, sizes_for
from beff.imb.registry import resolve
from beff.imb.schedule import read_msglen_file
from beff.render import imb as report
from beff.results.archive import ResultFile, load
from beff.results.model import Measurement


@dataclass
class Prepared:
    cfg: RunConfig
    names: list[str]


def default_output() -> str:
    return time.strftime("beff-%Y%m%dT%H%M%SZ.h5", time.gmtime())


def read_input_file(path: str) -> list[str]:
    """IMB's -input FILE: one benchmark name per line, '#' lines are comments."""
    try:
        with open(path, encoding="utf-8") as fh:
            return [ln.strip() for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]
    except OSError as exc:
        raise UsageError(f"-input: cannot read {path}: {exc.strerror}") from None


def main(suite: str, argv: list[str]) -> None:
    """Entry point of ``beff imb SUITE [IMB flags and names]``."""
    try:
        overrides = imb_args.parse(argv)
        overrides["suite"] = suite
        resolve(suite, overrides.get("benchmarks", []), overrides.get("include", []),
                overrides.get("exclude", []))
    except UsageError as exc:
        runtime.usage_exit(str(exc))
    overrides["argv"] = ["imb", suite, *argv]

    def prepare(MPI: types.ModuleType) -> Prepared:
        cfg = build_config(overrides, overrides.get("config_file"))
        if cfg.msglen_file is not None:
            cfg.msglen = read_msglen_file(cfg.msglen_file)
        if cfg.input_file is not None:
            cfg.benchmarks = cfg.benchmarks + read_input_file(cfg.input_file)
        specs = resolve(suite, cfg.benchmarks, cfg.include, cfg.exclude)
        size = MPI.COMM_WORLD.Get_size()
        if cfg.map is not None and cfg.map[0] * cfg.map[1] > size:
            raise UsageError(f"-map {cfg.map[0]}x{cfg.map[1]} needs {cfg.map[0] * cfg.map[1]} "
                             f"processes, the job has {size}")
        if cfg.output is None:
            cfg.output = default_output()
        check_output_path(cfg.output)
        return Prepared(cfg, [s.name for s in specs])

    runtime.run_job(thread_level_before_init(overrides), prepare, run)


def map_rows(cfg: RunConfig, m: Measurement, world_size: int) -> list[list[int]]:
    """Rows of IMB's '-map PxQ' header: the group's world ranks in rank order."""
    if cfg.map is None or m.ngroups > 1 or cfg.map[0] == 1 or cfg.map[1] == 1:
        return []
    px = cfg.map[0]
    ranks = [int(r) for r in m.world_ranks]
    rows, ip = [], 0
    for i in range(px):
        if ip >= len(ranks):
            break
        cnt = min(world_size // px + (1 if i < world_size % px else 0), len(ranks) - ip)
        rows.append(ranks[ip : ip + cnt])
        ip += cnt
    return rows


def run(MPI: types.ModuleType, prep: Prepared) -> None:
    """Measure every selected benchmark; rank 0 stores and renders as results arrive."""
    cfg = prep.cfg
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    specs = resolve(cfg.suite, cfg.benchmarks, cfg.include, cfg.exclude)
    overhead, backend_warning = capi.start(cfg.backend)
    ranks = world.gather(collect_rank(MPI), root=0)
    if rank != 0:
        Driver(MPI, cfg).run_all(specs, lambda m: None)
        return
    assert ranks is not None and overhead is not None
    where = placement(ranks)
    attrs = run_attrs(MPI, cfg.argv)
    attrs.update(config=_config_dict(cfg), config_sources=cfg.sources, placement=where,
                 overhead=overhead, benchmarks=prep.names, suite=cfg.suite,
                 checked=cfg.check, oversubscribed=where["oversubscribed"])
    out = ResultFile(cfg.output or default_output())
    out.create(attrs, ranks)
    _mpi.on_abort(lambda: out.finish("aborted"))
    stdout = Console(highlight=False, soft_wrap=True)
    stderr = Console(stderr=True, highlight=False)
    fmt = cfg.format
    if fmt == "imb":
        sys.stdout.write(report.imb_header(attrs, prep.names))
    elif fmt == "csv":
        sys.stdout.write(report.csv_text([], header=True))
    early = ([backend_warning] if backend_warning else []) + report.warnings_for(attrs)
    for w in early:
        stderr.print(f"[bold yellow]warning:[/bold yellow] {w}")
    total = sum(len(sizes_for(s, cfg)) * len(counts_for(s, cfg, world.Get_size()))
                for s in specs)
    collected: list[Measurement] = []

    with make_progress(cfg.progress, total) as advance:

        def emit(m: Measurement) -> None:
            m.attrs["map_rows"] = map_rows(cfg, m, world.Get_size())
            m.attrs["placement"] = report.placement_label(m, ranks)
            m.attrs["placement_groups"] = report.placement_groups(m, ranks)
            out.add(m)
            collected.append(m)
            if fmt == "imb":
                sys.stdout.write(report.imb_block(m))
                sys.stdout.flush()
            elif fmt == "csv":
                sys.stdout.write(report.csv_text([m], header=False))
                sys.stdout.flush()
            elif fmt == "table":
                stdout.print(report.rich_table(m, ranks))

        Driver(MPI, cfg, advance).run_all(specs, emit)
    out.finish("complete")
    if fmt == "imb":
        sys.stdout.write(report.IMB_FOOTER)
    elif fmt == "json":
        sys.stdout.write(report.json_text(load(out.path)))
    if fmt == "table":
        report.footer(attrs, stdout, collected, ranks)
    else:  # warnings that only the finished benchmarks could tell (e.g. PingPong inside a node)
        for w in report.warnings_for(attrs, collected, ranks):
            if w not in early:
                stderr.print(f"[bold yellow]warning:[/bold yellow] {w}")
    sys.stdout.flush()
    stderr.print(f"[dim]results written to {os.fspath(out.path)}[/dim]")


def _config_dict(cfg: RunConfig) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(cfg.to_json())
    data.pop("sources", None)
    return data

