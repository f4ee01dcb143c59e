"""The jobs of the I/O suites: b_eff_io (``beff io``), stored after every phase, and IMB-IO
(``beff imb io``), IMB's job with the run's files around it."""

from __future__ import annotations

import time
import types
from collections.abc import Callable
from typing import Any

from beff.bench.job import ImbJob
from beff.core import runtime
from beff.core.config import RunConfig
from beff.core.errors import CollectiveFailure
from beff.core.metadata import uname_fields
from beff.core.progress import Bar
from beff.core.suite import Suite
from beff.io import beffio, loops
from beff.io import run as io_run
from beff.io.record import BeffIORecord
from beff.results.model import Result, RunRecord


class BeffIOJob:
    """One ``beff io``: b_eff_io's plan, its phases, and its record after each phase."""

    network = False
    # rank 0 alone plans (the total memory counts every node once: the node ids, which rank 0
    # has): no rank holds the others' facts
    streaming = False

    def __init__(self, suite: Suite) -> None:
        self.derived: dict[str, Any] = {}
        self.plan: beffio.Plan | None = None
        self.io_record: dict[str, Any] = {}
        self.started = time.monotonic()
        self.kept_record: BeffIORecord | None = None  # rank 0, --resume: the file's record
        self.kept: beffio.Kept | None = None  # every rank: the phases it finished

    def resume(self, record: RunRecord) -> None:
        """Rank 0, ``--resume``: the phases the file's record finished are kept."""
        found = [r for r in record.results if isinstance(r, BeffIORecord)]
        self.kept_record = found[0] if found else None

    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        io_run.validate(cfg)
        beffio.check_partitions(cfg.options.partitions, MPI.COMM_WORLD.Get_size())

    def names(self) -> list[str]:
        return ["b_eff_io"]

    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        world = MPI.COMM_WORLD
        self.started = time.monotonic()
        plan, kept, why = None, None, ""
        if ranks is not None:  # rank 0's alone
            plan = beffio.make_plan(cfg, ranks)
            if self.kept_record is not None:
                why = beffio.kept_differs(self.kept_record, plan)
                kept = beffio.kept_of(self.kept_record)
        self.plan, self.kept, why = world.bcast((plan, kept, why), root=0)
        if why:  # every rank at once: one line, exit 2
            runtime.usage_exit(why)
        self.io_record = io_run.start(MPI, cfg, loops.precompile_beffio)
        return {"io": self.io_record}

    def notes(self) -> list[str]:
        assert self.plan is not None
        found = [io_run.stale_note(self.io_record)] if io_run.stale_note(self.io_record) else []
        if self.plan.quick:
            found.append("--quick: a first look (2 s per partition); b_eff_io needs "
                         "T / partitions >= 30 min to be comparable")
        return found

    def steps(self, nprocs: int) -> int:
        assert self.plan is not None
        return beffio.steps(self.plan, self.kept)

    def measure(self, MPI: types.ModuleType, cfg: RunConfig,
                emit: Callable[[Result], None], bar: Bar) -> str:
        assert self.plan is not None
        record = None
        if MPI.COMM_WORLD.Get_rank() == 0:
            record = self.kept_record or beffio.new_record(self.plan, uname_fields())
            record.failure = ""
        before = record.runtime_s if record is not None else 0.0

        def store(rec: BeffIORecord) -> None:
            rec.runtime_s = before + time.monotonic() - self.started
            emit(rec)

        try:
            beffio.BeffIO(MPI, self.plan, record, bar, store, self.kept).run()
        except CollectiveFailure as exc:
            return str(exc)
        return ""

    def finish(self, results: list[Result], nprocs: int) -> list[str]:
        io_run.remove_files()
        return []


class ImbIOJob(ImbJob):
    """IMB-IO: IMB's job, with the run's files named, checked and removed around it."""

    network = False

    def __init__(self, suite: Suite) -> None:
        super().__init__(suite)
        self.io_record: dict[str, Any] = {}

    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        super().prepare(MPI, cfg)
        io_run.validate(cfg)

    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        extra = super().start(MPI, cfg, ranks)
        self.io_record = io_run.start(MPI, cfg)
        return {**extra, "io": self.io_record}

    def notes(self) -> list[str]:
        note = io_run.stale_note(self.io_record)
        return [note] if note else []



def beffio_job(suite: Suite) -> BeffIOJob:
    return BeffIOJob(suite)


def imbio_job(suite: Suite) -> ImbIOJob:
    return ImbIOJob(suite)
