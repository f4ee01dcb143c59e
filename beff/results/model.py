"""The in-memory result model shared by the driver, the HDF5 store and the renderers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Status of one message size.
OK = "ok"
TIME_OUT = "time-out"
OUT_OF_MEM = "out-of-mem"
SKIPPED = "skipped"


@dataclass
class Measurement:
    """One benchmark at one process count: every size, every participating rank.

    ``times[s, r]`` is rank r's reported time per iteration in seconds (timed seconds divided
    by the repetitions, times the spec's time_scale); NaN where the size was not measured.
    ``samples[s, r, b]`` are rank r's raw timed seconds of batch b (``batch_iters[s, r, b]``
    iterations), before any scaling.
    """

    suite: str
    benchmark: str
    kind: str
    nprocs: int
    ngroups: int
    multi: int | None
    idle: int
    sizes: np.ndarray
    repetitions: np.ndarray
    status: list[str]
    times: np.ndarray
    group: np.ndarray
    world_ranks: np.ndarray
    samples: np.ndarray
    batch_iters: np.ndarray
    time_scale: float = 1.0
    bw_scale: float = 1.0
    msgrate_factor: float = 0.0
    defects: np.ndarray | None = None
    needed_gb: np.ndarray | None = None
    checked: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Stable group name inside the result file."""
        return f"{self.suite}/{self.benchmark}/np{self.nprocs}" + (
            f"-multi{self.multi}" if self.multi is not None else ""
        )

    @property
    def failed(self) -> bool:
        """A time-out or out-of-mem row ends the benchmark, later process counts included."""
        return TIME_OUT in self.status or OUT_OF_MEM in self.status


@dataclass
class RunRecord:
    """Everything in one result file: run metadata plus the measurements in order."""

    attrs: dict[str, Any]
    measurements: list[Measurement] = field(default_factory=list)
    ranks: list[dict[str, Any]] = field(default_factory=list)
    beff: dict[str, Any] | None = None
