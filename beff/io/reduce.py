"""b_eff_io's averaging (b_eff_io.c 2.1), from per-type bandwidths to the one number.

Per partition size n and access method (write, rewrite, read) the five pattern types'
bandwidths are averaged with type 0 (scatter) counted twice; the write side of the final
figure is the mean of the five write types and type 0's rewrite; b_eff_io(n) is the geometric
mean of that and the read average; b_eff_io is the maximum over the partition sizes.
Bandwidths are in bytes per second; NaN marks a type that was not measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ACCESSES = ("write", "rewrite", "read")
TYPES = ("scatter", "shared", "separated", "segmented", "seg_coll")
WRITE, REWRITE, READ = range(3)
T_CRIT_S = 1800.0  # validity: scheduled time per partition (T / number of partitions)


def type_bandwidth(bytes_per_rank: float, nprocs: int, seconds: float) -> float:
    """One type's bandwidth: its bytes over all ranks (the U=0 patterns included) divided by
    its time (open + every pattern + close, rank 0's clock)."""
    return bytes_per_rank * nprocs / seconds if seconds > 0 else math.nan


def access_average(bw_types: np.ndarray, rewrite_all: bool = True, access: int = WRITE) -> float:
    """The weighted average of one access method: (2 bw_0 + bw_1 + ... + bw_4) / 6; the
    rewrite of type 0 alone (no ``--rewrite``) is (2 bw_0) / 2."""
    bw = np.asarray(bw_types, dtype=np.float64)
    if access == REWRITE and not rewrite_all:
        return float(bw[0])
    return float((2 * bw[0] + bw[1:].sum()) / 6)


def write_rewrite(bw_write: np.ndarray, bw_rewrite_scatter: float) -> float:
    """The write side of b_eff_io: the five write types and type 0's rewrite, over 6."""
    return float((np.asarray(bw_write, dtype=np.float64).sum() + bw_rewrite_scatter) / 6)


@dataclass(frozen=True)
class Partition:
    """The figures of one partition size (bytes/s)."""

    nprocs: int
    write: float
    rewrite: float
    read: float
    write_rewrite: float
    b_eff_io: float


def reduce_partition(nprocs: int, bw: np.ndarray, rewrite_all: bool) -> Partition:
    """``bw[access, type]``: the per-type bandwidths of one partition size."""
    wr = write_rewrite(bw[WRITE], float(bw[REWRITE, 0]))
    read = access_average(bw[READ], access=READ)
    return Partition(
        nprocs=nprocs,
        write=access_average(bw[WRITE], access=WRITE),
        rewrite=access_average(bw[REWRITE], rewrite_all, access=REWRITE),
        read=read, write_rewrite=wr,
        b_eff_io=math.sqrt(wr * read) if wr >= 0 and read >= 0 else math.nan,
    )


def maximum(partitions: list[Partition]) -> Partition | None:
    """The partition with the largest b_eff_io (the first of equals, as the original)."""
    best: Partition | None = None
    for p in partitions:
        if math.isfinite(p.b_eff_io) and (best is None or p.b_eff_io > best.b_eff_io):
            best = p
    return best


def validity(scheduled_per_partition_s: float, shared: bool, errors: int) -> list[bool]:
    """b_eff_io 2.1's three criteria: T / #partitions >= 30 min, shared file pointers used
    for type 1, no errors."""
    return [scheduled_per_partition_s >= T_CRIT_S, shared, errors == 0]
