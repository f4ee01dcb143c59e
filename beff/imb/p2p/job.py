"""IMB-P2P's job: the IMB-style job (:class:`beff.bench.job.ImbJob`) with IMB-P2P's options
and its schedule (:class:`.plan.P2PPlan`), measured by the one loop every IMB-style suite
uses. One Measurement per benchmark, at the job's process count."""

from __future__ import annotations

import types

from beff.bench.job import ImbJob
from beff.bench.plan import Plan
from beff.bench.registry import BenchmarkSpec, resolve
from beff.core.config import RunConfig
from beff.core.suite import Suite
from beff.imb.p2p.options import MIB, message_sizes, parse_iter
from beff.imb.p2p.plan import P2PPlan


class P2PJob(ImbJob):
    """One run of IMB-P2P."""

    def prepare(self, MPI: types.ModuleType, cfg: RunConfig) -> None:
        sizes = message_sizes(cfg.options, cfg.given())
        max_iter, numerator = parse_iter(cfg.options["iter"])
        self.derived.update(sizes=sizes, iter_max=max_iter, iter_numerator_bytes=numerator * MIB)
        self.benchmarks = [s.name for s in resolve(self.suite, cfg.options.benchmarks, [], [])]

    def specs(self, cfg: RunConfig) -> list[BenchmarkSpec]:
        return resolve(self.suite, self.benchmarks, [], [])

    def plan(self, cfg: RunConfig) -> Plan:
        return P2PPlan(cfg)

    def notes(self) -> list[str]:
        if self.cfg is not None and self.cfg.check and self.cfg.options.get("msgwr", True):
            return ["--check: -msgwr's writes into the send buffers are off (they would "
                    "change the data checked)"]
        return []


def job(suite: Suite) -> P2PJob:
    return P2PJob(suite)
