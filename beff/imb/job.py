"""``beff imb SUITE ...``: parse, validate on rank 0, measure, store and render."""

from __future__ import annotations

import json
import os
import sys
import types
from dataclasses import dataclass
from typing import Any

from beff.core import mpi as _mpi
from beff.core import runtime, terminal
from beff.core.config import (
    MAX_MSGLOG,
    RunConfig,
    build_config,
    check_output_path,
    default_output,
    read_lines,
    thread_level_before_init,
)
from beff.core.errors import UsageError
from beff.core.metadata import placement, run_attrs
from beff.core.progress import make_progress
from beff.imb import args as imb_args
from beff.imb.driver import Driver, counts_for, sizes_for
from beff.imb.registry import BenchmarkSpec, resolve
from beff.imb.schedule import read_msglen_file
from beff.io import run as io_run
from beff.render import imb as report
from beff.results import warnings
from beff.results.archive import ResultFile, load
from beff.results.model import Measurement


@dataclass
class Prepared:
    cfg: RunConfig
    names: list[str]


def read_input_file(path: str) -> list[str]:
    """IMB's -input FILE: one benchmark name per line, '#' lines are comments."""
    return [ln for ln in read_lines(path, "-input") if ln and not ln.startswith("#")]


def main(suite: str, argv: list[str]) -> None:
    """Entry point of ``beff imb SUITE [IMB flags and names]``."""
    try:
        imb_args.check_suite(suite, argv)
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
        if cfg.msglen:
            fit_msglog(cfg)
        if cfg.input_file is not None:
            cfg.benchmarks = cfg.benchmarks + read_input_file(cfg.input_file)
        specs = resolve(suite, cfg.benchmarks, cfg.include, cfg.exclude)
        size = MPI.COMM_WORLD.Get_size()
        if cfg.map is not None and cfg.map[0] * cfg.map[1] > size:
            raise UsageError(f"-map {cfg.map[0]}x{cfg.map[1]} needs {cfg.map[0] * cfg.map[1]} "
                             f"processes, the job has {size}")
        if cfg.output is None:
            cfg.output = default_output()
        check_output_path(cfg.output, cfg.force, cfg.config_file)
        if suite == "io":
            io_run.validate(cfg)
        return Prepared(cfg, [s.name for s in specs])

    one_sided = suite in ("ext", "rma")
    runtime.run_job(thread_level_before_init(overrides), prepare, run,
                    _mpi.OMPI_ONE_SIDED_SETTINGS if one_sided else None, overrides=overrides)


def fit_msglog(cfg: RunConfig) -> None:
    """Every message size the user names is run or refused: -msglog's maximum grows to fit
    the largest one unless -msglog was given (then the size is refused, as it is above beff's
    limit of 2^30 bytes per message)."""
    assert cfg.msglen is not None
    biggest = max(cfg.msglen)
    if biggest > 1 << MAX_MSGLOG:
        raise UsageError(f"message size {biggest} exceeds beff's limit of 2^{MAX_MSGLOG} bytes "
                         "(16 GiB)")
    need = max(0, (biggest - 1).bit_length())
    if need <= cfg.msglog_max:
        return
    if cfg.sources.get("msglog_max", "default") != "default":
        raise UsageError(f"message size {biggest} exceeds -msglog's maximum 2^{cfg.msglog_max}"
                         "; raise -msglog or drop the size")
    cfg.msglog_max = need


def nothing_ran(specs: list[BenchmarkSpec], nprocs: int) -> str:
    """Why a run measured nothing: every selected benchmark needs more processes."""
    need = ", ".join(f"{s.name} needs {s.procs or s.min_procs}" for s in specs)
    return (f"nothing was measured on {nprocs} process{'es' if nprocs != 1 else ''}: {need}; "
            "run with more ranks (mpiexec -n P)")


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
    ranks, overhead, backend_warning = runtime.begin(MPI, cfg.timeout, cfg.backend, False)
    io_record = io_run.start(MPI, cfg) if cfg.suite == "io" else {}
    if rank != 0:
        Driver(MPI, cfg).run_all(specs, lambda m: None)
        return
    assert ranks is not None and overhead is not None
    where = placement(ranks)
    attrs = run_attrs(MPI, cfg.argv)
    attrs.update(config=_config_dict(cfg), config_sources=cfg.sources, placement=where,
                 overhead=overhead, benchmarks=prep.names, suite=cfg.suite,
                 benchmark_comments={s.name: list(s.comments) for s in specs if s.comments},
                 checked=cfg.check, oversubscribed=where["oversubscribed"])
    if io_record:
        attrs["io"] = io_record
    out = ResultFile(cfg.output or default_output())
    out.create(attrs, ranks, exclusive=not cfg.force)
    out.guard()
    stdout = terminal.console()
    stderr = terminal.console(stderr=True)
    fmt = cfg.format
    if fmt == "imb":
        sys.stdout.write(report.imb_header(attrs, prep.names))
    elif fmt == "csv":
        sys.stdout.write(report.csv_text([], header=True))
    found = ([backend_warning] if backend_warning else []) + warnings.run_warnings(
        attrs, network=any(s.has_bandwidth for s in specs) and cfg.suite != "io")
    if io_run.stale_note(io_record):
        found.append(io_run.stale_note(io_record))
    report.print_warnings(stderr, found)
    total = sum(len(sizes_for(s, cfg)) * len(counts_for(s, cfg, world.Get_size()))
                for s in specs)
    collected: list[Measurement] = []

    with make_progress(cfg.progress, total) as bar:

        def emit(m: Measurement) -> None:
            if m.unsupported:  # one line, no table
                out.add(m)
                collected.append(m)
                found.append(m.attrs["unsupported"])
                with bar.paused():
                    report.print_warnings(stderr, found[-1:])
                return
            m.attrs["map_rows"] = map_rows(cfg, m, world.Get_size())
            m.attrs["placement"] = report.placement_label(m, ranks)
            m.attrs["placement_groups"] = report.placement_groups(m, ranks)
            out.add(m)
            collected.append(m)
            new = [w for w in warnings.result_warnings(attrs, m, m.attrs["placement_groups"])
                   if w not in found]
            found.extend(new)
            with bar.paused():
                report.print_warnings(stderr, new)
                if fmt == "imb":
                    sys.stdout.write(report.imb_block(m))
                elif fmt == "csv":
                    sys.stdout.write(report.csv_text([m], header=False))
                elif fmt == "table":
                    stdout.print(report.rich_table(m, ranks))

        Driver(MPI, cfg, bar).run_all(specs, emit)
    if not collected:
        found.append(nothing_ran(specs, world.Get_size()))
        report.print_warnings(stderr, found[-1:])
    out.set_attrs(warnings=found)
    out.finish("complete")
    if fmt == "imb":
        sys.stdout.write(report.IMB_FOOTER)
    elif fmt == "json":
        sys.stdout.write(report.json_text(load(out.path)))
    if fmt == "table":
        report.footer(attrs, stdout)  # the warnings went to stderr as they were found
    sys.stdout.flush()
    stderr.print(f"[dim]results written to {os.fspath(out.path)}[/dim]")


def _config_dict(cfg: RunConfig) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(cfg.to_json())
    data.pop("sources", None)
    return data

