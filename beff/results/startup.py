"""Each rank's start-up, as the result file's ``/ranks`` holds it (``startup_*`` columns,
measured by :func:`beff.core.runtime.startup_phases`), summed up per phase as ``osu_init``
sums up MPI_Init: the median over ranks, the maximum, and the slowest rank with its host."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# (column, what it is) in the order a rank goes through them
PHASES = (("startup_imports_s", "interpreter and imports"), ("startup_mpi_init_s", "MPI_Init"),
          ("startup_setup_s", "until the loops were ready"),
          ("startup_barrier_s", "first barrier"))


@dataclass(frozen=True)
class Phase:
    """One phase over the ranks: seconds."""

    key: str
    label: str
    median: float
    max: float
    slowest_rank: int
    host: str

    def summary(self) -> dict[str, Any]:
        return {"median_s": self.median, "max_s": self.max, "slowest_rank": self.slowest_rank,
                "host": self.host}


def phases(ranks: list[dict[str, Any]]) -> list[Phase]:
    """The phases the ranks table holds (none for files that predate them)."""
    out = []
    for key, label in PHASES:
        values = np.array([float(r.get(key, math.nan)) for r in ranks], dtype=np.float64)
        if not len(values) or not np.isfinite(values).any():
            continue
        slowest = int(np.nanargmax(values))
        out.append(Phase(key, label, float(np.nanmedian(values)), float(values[slowest]),
                         int(ranks[slowest].get("rank", slowest)),
                         str(ranks[slowest].get("host", "?"))))
    return out


def line(found: list[Phase]) -> str:
    """One line for a header: each phase's median and maximum, and where the maximum was."""
    return "start-up (median, max over ranks): " + "; ".join(
        f"{p.label} {p.median:.3g} s, {p.max:.3g} s (rank {p.slowest_rank}, {p.host})"
        for p in found)
