"""The job of every IMB-style suite (IMB-MPI1, NBC, MPI4, EXT, RMA, IO, P2P): IMB's selection
and a schedule (:class:`beff.bench.plan.Plan`, IMB's unless the suite's job gives its own),
measured by the one loop (:class:`beff.bench.driver.Driver`), one Measurement per benchmark,
mode and process count."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any

from beff.bench.driver import Driver
from beff.bench.options import MAX_MSGLOG
from beff.bench.plan import Plan
from beff.bench.registry import BenchmarkSpec, resolve
from beff.bench.schedule import read_msglen_file
from beff.core.config import RunConfig, read_lines
from beff.core.errors import UsageError
from beff.core.options import Values
from beff.core.progress import Bar
from beff.core.suite import Suite
from beff.results.model import Measurement, Result, RunRecord
from beff.results.placement import annotate


def read_input_file(path: str) -> list[str]:
    """IMB's -input FILE: one benchmark name per line, '#' lines are comments."""
    return [ln for ln in read_lines(path, "-input") if ln and not ln.startswith("#")]


def fit_msglog(cfg: RunConfig, msglen: list[int]) -> int:
    """-msglog's maximum for the named sizes: every message size the user names is run or
    refused. The maximum grows to fit the largest one unless -msglog was given (then the size
    is refused, as it is above beff's limit of 2^34 bytes per message)."""
    biggest = max(msglen)
    if biggest > 1 << MAX_MSGLOG:
        raise UsageError(f"message size {biggest} exceeds beff's limit of 2^{MAX_MSGLOG} bytes "
                         "(16 GiB)")
    need = max(0, (biggest - 1).bit_length())
    if need <= cfg.options.msglog_max:
        return int(cfg.options.msglog_max)
    if cfg.sources.get("msglog_max", "default") != "default":
        raise UsageError(f"message size {biggest} exceeds the largest length of -msglog, "
                         f"2^{cfg.options.msglog_max}"
                         "; raise -msglog or drop the size")
    return need


def nothing_ran(specs: list[BenchmarkSpec], nprocs: int) -> str:
    """Why a run measured nothing: every selected benchmark needs more processes."""
    need = ", ".join(f"{s.name} needs {s.procs or s.min_procs}" for s in specs)
    return (f"nothing was measured on {nprocs} process{'es' if nprocs != 1 else ''}: {need}; "
            "run with more ranks (mpiexec -n P)")


def map_rows(cfg: RunConfig, m: Measurement, world_size: int) -> list[list[int]]:
    """Rows of IMB's '-map PxQ' header: the group's world ranks in rank order."""
    grid = cfg.options.get("map")
    if grid is None or m.ngroups > 1 or grid[0] == 1 or grid[1] == 1:
        return []
    px = cfg.options.map[0]
    ranks = [int(r) for r in m.world_ranks]
    rows, ip = [], 0
    for i in range(px):
        if ip >= len(ranks):
            break
        cnt = min(world_size // px + (1 if i < world_size % px else 0), len(ranks) - ip)
        rows.append(ranks[ip : ip + cnt])
        ip += cnt
    return rows


class ImbJob:
    """One run of an IMB-style suite. IMB-IO's job (beff.io) adds its files around it."""

    streaming = True
    network = True

    def __init__(self, suite: Suite) -> None:
        self.suite = suite.name
        self.derived: dict[str, Any] = {}
        self.benchmarks: list[str] = []
        self.ranks: list[dict[str, Any]] = []
        self.cfg: RunConfig | None = None
        # --resume: the results the file holds (key -> failed), set on rank 0 before the
        # job is sent to every rank; none of them is measured again
        self.done: dict[str, bool] = {}

    def measured_config(self, cfg: RunConfig) -> RunConfig:
        """The config the driver measures with: the validated one and the derived values."""
        return dataclasses.replace(cfg, options=Values({**cfg.options, **self.derived}))

    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        if cfg.options.msglen_file is not None:
            self.derived["msglen"] = read_msglen_file(cfg.options.msglen_file)
        msglen = self.derived.get("msglen", cfg.options.msglen)
        if msglen:
            need = fit_msglog(cfg, msglen)
            if need != cfg.options.msglog_max:
                self.derived["msglog_max"] = need
        if cfg.options.input_file is not None:
            self.derived["benchmarks"] = cfg.options.benchmarks + read_input_file(
                cfg.options.input_file)
        specs = self.specs(cfg)
        size = MPI.COMM_WORLD.Get_size()
        grid = cfg.options.map
        if grid is not None and grid[0] * grid[1] > size:
            raise UsageError(f"-map {grid[0]}x{grid[1]} needs {grid[0] * grid[1]} "
                             f"processes, the job has {size}")
        self.benchmarks = [s.name for s in specs]

    def specs(self, cfg: RunConfig) -> list[BenchmarkSpec]:
        run_cfg = self.measured_config(cfg)
        return resolve(self.suite, run_cfg.options.benchmarks, cfg.options.include,
                       cfg.options.exclude)

    def plan(self, cfg: RunConfig) -> Plan:
        """The schedule the one loop measures this suite's benchmarks by (``cfg``: the
        measured config): IMB's."""
        return Plan(cfg)

    def resume(self, record: RunRecord) -> None:
        """Rank 0, ``--resume``: the results ``record`` holds are not measured again."""
        self.done = {r.key: r.failed for r in record.measurements}

    def names(self) -> list[str]:
        return list(self.benchmarks)

    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        self.ranks = ranks or []
        self.cfg = cfg
        return {"benchmark_comments": {s.name: list(s.comments) for s in self.specs(cfg)
                                       if s.comments}}

    def notes(self) -> list[str]:
        return []

    def steps(self, nprocs: int) -> int:
        assert self.cfg is not None
        plan = self.plan(self.measured_config(self.cfg))
        return sum(len(plan.sizes(s)) for s in self.specs(self.cfg)
                   for np_ in plan.counts(s, nprocs) if not plan.not_run(s, np_))

    def measure(self, MPI: types.ModuleType, cfg: RunConfig, emit: Callable[[Result], None],
                bar: Bar) -> str:
        run_cfg = self.measured_config(cfg)
        specs = self.specs(cfg)
        world = MPI.COMM_WORLD
        if world.Get_rank() != 0:
            Driver(MPI, run_cfg, done=self.done, plan=self.plan(run_cfg)).run_all(specs, emit)
            return ""

        def store(m: Measurement) -> None:
            if not m.unsupported:
                m.attrs["map_rows"] = map_rows(run_cfg, m, world.Get_size())
                annotate(m, self.ranks)
            emit(m)

        Driver(MPI, run_cfg, bar, done=self.done, plan=self.plan(run_cfg)).run_all(specs,
                                                                                  store)
        return ""

    def finish(self, results: list[Result], nprocs: int) -> list[str]:
        if results or self.cfg is None:
            return []
        return [nothing_ran(self.specs(self.cfg), nprocs)]


def job(suite: Suite) -> ImbJob:
    return ImbJob(suite)
