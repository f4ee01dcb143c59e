"""The toy suite's job: samples of ``iter`` barriers timed by beff's compiled barrier loop."""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from beff_toy.record import ToyRecord

from beff.core import capi
from beff.core.config import RunConfig
from beff.core.errors import UsageError
from beff.core.progress import Bar
from beff.core.suite import Suite
from beff.results.model import Result


class ToyJob:
    network = True
    streaming = True
    derived: dict[str, Any]

    def __init__(self, suite: Suite) -> None:
        self.derived = {}
        self.samples = 0

    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        if cfg.options["iter"] * cfg.options["samples"] > 10**6:
            raise UsageError("toy: -iter x -samples must stay within 10^6 barriers")

    def names(self) -> list[str]:
        return ["Barrier"]

    def start(self, MPI: types.ModuleType, cfg: RunConfig,
              ranks: list[dict[str, Any]] | None) -> dict[str, Any]:
        self.samples = int(cfg.options["samples"])
        return {}

    def notes(self) -> list[str]:
        return []

    def steps(self, nprocs: int) -> int:
        return self.samples

    def measure(self, MPI: types.ModuleType, cfg: RunConfig,
                emit: Callable[[Result], None], bar: Bar) -> str:
        world = MPI.COMM_WORLD
        iters = int(cfg.options["iter"])
        mine = np.zeros(self.samples)
        refusing = os.environ.get("BEFF_TOY_REFUSE")  # a plug-in's own error, inside the job
        if refusing is not None and int(refusing) == world.Get_rank():
            raise UsageError(f"toy: rank {refusing} refuses inside the job")
        for s in range(self.samples):
            seconds, err = capi.barrier_loop(iters, capi.handle(world))
            capi.check(err, "toy Barrier")
            mine[s] = seconds / iters
            bar(f"sample {s + 1}")
        every = np.zeros((world.Get_size(), self.samples)) if world.Get_rank() == 0 else None
        world.Gather(mine, every, root=0)
        if every is not None:
            emit(ToyRecord(world.Get_size(), iters, np.ascontiguousarray(every.T)))
        return ""

    def finish(self, results: list[Result], nprocs: int) -> list[str]:
        return []


def job(suite: Suite) -> ToyJob:
    return ToyJob(suite)
