"""The toy suite's record: every rank's seconds per barrier, per sample."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from beff.results.layout import Layout


@dataclass
class ToyRecord:
    """``seconds[sample, rank]``: rank's time of one MPI_Barrier, averaged over ``iters``."""

    suite: ClassVar[str] = "toy"
    key: ClassVar[str] = "toy"

    nprocs: int
    iters: int
    seconds: np.ndarray

    def summary(self) -> dict[str, float | int]:
        """The toy's summary: the slowest rank per sample, then min/median/max in µs."""
        slowest = self.seconds.max(axis=1) * 1e6
        return {"nprocs": self.nprocs, "iters": self.iters, "samples": len(slowest),
                "t_min_us": float(slowest.min()), "t_median_us": float(np.median(slowest)),
                "t_max_us": float(slowest.max())}


LAYOUT = Layout(group="toy", cls=ToyRecord, scalars=("nprocs", "iters"), names={},
                arrays={"seconds": ("s", "[sample, rank] seconds per MPI_Barrier")})
