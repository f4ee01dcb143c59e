"""``beff io``: validate on rank 0, measure b_eff_io, store after every phase, render on rank 0."""

from __future__ import annotations

import json
import os
import sys
import time
import types
from typing import Any

from beff.core import runtime, terminal
from beff.core.config import (
    RunConfig,
    build_config,
    check_output_path,
    default_output,
    thread_level_before_init,
)
from beff.core.errors import CollectiveFailure
from beff.core.progress import make_progress
from beff.effbw.measure import uname_fields
from beff.io import beffio, loops
from beff.io import run as io_run
from beff.render import beffio as report_beffio
from beff.render.imb import print_warnings, render_header
from beff.results import warnings
from beff.results.archive import ResultFile, start_run_file
from beff.results.beffio import BeffIORecord, summarize
from beff.results.model import RunRecord


def main(overrides: dict[str, Any]) -> None:
    """Entry point of ``beff io`` once its options are parsed (before MPI)."""

    def prepare(MPI: types.ModuleType) -> RunConfig:
        cfg = build_config(overrides, overrides.get("config_file"))
        cfg.suite = "beffio"
        io_run.validate(cfg)
        beffio.check_partitions(cfg.partitions, MPI.COMM_WORLD.Get_size())
        if cfg.output is None:
            cfg.output = default_output()
        check_output_path(cfg.output, cfg.force, cfg.config_file)
        return cfg

    runtime.run_job(thread_level_before_init(overrides), prepare, run, overrides=overrides)


def run(MPI: types.ModuleType, cfg: RunConfig) -> None:
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    started = time.monotonic()
    # every rank's node id: the total memory counts every node once
    ranks, overhead, backend_warning = runtime.begin(MPI, cfg.timeout, cfg.backend, True)
    assert ranks is not None
    plan = world.bcast(beffio.make_plan(cfg, ranks) if rank == 0 else None, root=0)
    io_record = io_run.start(MPI, cfg, loops.precompile_beffio)
    out: ResultFile | None = None
    attrs: dict[str, Any] = {}
    record: BeffIORecord | None = None
    stderr = terminal.console(stderr=True)
    found: list[str] = []
    if rank == 0:
        out, attrs = start_run_file(MPI, cfg, ranks, overhead=overhead, benchmarks=["b_eff_io"],
                                    suite="beffio", checked=cfg.check, io=io_record)
        record = beffio.new_record(plan, uname_fields())
        found = ([backend_warning] if backend_warning else []) + warnings.run_warnings(
            attrs, network=False)
        if io_run.stale_note(io_record):
            found.append(io_run.stale_note(io_record))
        if plan.quick:
            found.append("--quick: a first look (2 s per partition); b_eff_io needs "
                         "T / partitions >= 30 min to be comparable")
        print_warnings(stderr, found)

    def store(rec: BeffIORecord) -> None:
        rec.runtime_s = time.monotonic() - started
        assert out is not None
        out.add_beff(rec)

    failure = ""
    with make_progress(cfg.progress if rank == 0 else False, beffio.steps(plan)) as advance:
        try:
            beffio.BeffIO(MPI, plan, record, advance, store).run()
        except CollectiveFailure as exc:
            failure = str(exc)
    io_run.remove_files()
    if rank == 0 and out is not None and record is not None:
        report(cfg, out, record, attrs, ranks, found, failure)
    world.Barrier()  # rank 0 has said why before any rank exits (launchers kill on exit 1)
    if failure:
        sys.exit(1)


def report(cfg: RunConfig, out: ResultFile, record: BeffIORecord, attrs: dict[str, Any],
           ranks: list[dict[str, Any]], found: list[str], failure: str) -> None:
    """Rank 0: close the result file and render it."""
    out.set_attrs(warnings=found)
    out.finish("failed" if failure else "complete")
    summary = summarize(record)
    if cfg.format == "json":
        sys.stdout.write(json.dumps({"beffio": summary}, indent=2) + "\n")
    elif cfg.format in ("imb", "csv"):
        sys.stdout.write(report_beffio.sum_text(summary))
    else:
        console = terminal.console()
        render_header(RunRecord(attrs=attrs, ranks=ranks), console)
        report_beffio.render(summary, attrs, console)
    sys.stdout.flush()
    stderr = terminal.console(stderr=True)
    stderr.print(f"[dim]results written to {os.fspath(out.path)}[/dim]")
    if failure:
        stderr.print(f"beff: error: {failure}; the phases measured before stay in {out.path}",
                     markup=False, highlight=False, soft_wrap=True)
