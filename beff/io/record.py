"""b_eff_io's results: the record ``beff io`` stores, and the figures derived from it.

The record holds what was planned and measured: per access method, partition size and
pattern the bytes, repetitions and rank 0's pattern time (the original's clock), every rank's
timing parts, and per type the open and close times. :func:`summarize` derives every figure
(pattern and type bandwidths, the weighted averages, b_eff_io per partition and the maximum)
with beff.io.reduce, whenever a report needs them. Nothing derived is stored.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from beff.io import plan
from beff.io.reduce import (
    ACCESSES,
    READ,
    REWRITE,
    T_CRIT_S,
    TYPES,
    Partition,
    maximum,
    reduce_partition,
    type_bandwidth,
    validity,
)
from beff.results.layout import Layout

MB = 1e6
MIB = 1 << 20
ERROR_MBPS = -999.999  # the original's value for a pattern with errors


@dataclass
class BeffIORecord:
    """One ``beff io`` run. Arrays are [access, partition, pattern] unless said otherwise;
    times in seconds, bytes per process."""

    suite: ClassVar[str] = "beffio"
    key: ClassVar[str] = "beffio"

    nprocs: int
    memory_per_proc: int
    memory_source: str
    total_memory: int
    total_memory_source: str
    lmax: int
    scheduled_time: float  # T, over all partitions
    quick: bool
    rewrite_all: bool
    shared: bool
    unique: bool
    checked: bool
    uname: list[str]  # sysname, nodename, release, version, machine of rank 0
    partitions: np.ndarray  # [partition] processes
    chunk: np.ndarray  # [partition, pattern] l: bytes per chunk on disk
    call: np.ndarray  # [partition, pattern] L: bytes per call
    weight: np.ndarray  # [pattern] U
    ptype: np.ndarray  # [pattern] type 0..4
    row: np.ndarray  # [pattern] row of the summary table (0: none, 8: apart)
    segment: np.ndarray  # [partition] bytes per process of types 3 and 4
    repetitions: np.ndarray  # [access, partition, pattern]; -1: not run
    t_pattern: np.ndarray  # rank 0's pattern time
    parts: np.ndarray  # [access, partition, pattern, rank, part] (beff.io.loops.PARTS)
    t_open: np.ndarray  # [access, partition, type] rank 0's open (between barriers)
    t_close: np.ndarray  # [access, partition, type] rank 0's close + barrier
    errors: np.ndarray  # stamp mismatches and failed calls, summed over ranks
    defects: np.ndarray  # --check: doubles that differ from what was written
    done: np.ndarray  # [access, partition] 1 when the phase completed
    runtime_s: float = 0.0
    failure: str = ""
    hints_used: dict[str, dict[str, str]] = field(default_factory=dict)

    def scheduled_per_partition(self) -> float:
        return self.scheduled_time / max(1, len(self.partitions))

    def measured(self, a: int, t: int) -> bool:
        """Whether access ``a`` covers type ``t`` (rewrite: type 0 only without --rewrite)."""
        return t == 0 or a != REWRITE or self.rewrite_all



LAYOUT = Layout(
    group="beffio", cls=BeffIORecord,
    scalars=("nprocs", "memory_per_proc", "memory_source", "total_memory",
             "total_memory_source", "lmax", "scheduled_time", "quick", "rewrite_all", "shared",
             "unique", "checked", "runtime_s", "failure"),
    names={"uname": "sysname, nodename, release, version, machine of rank 0"},
    arrays={
        "partitions": ("1", "[partition] processes doing I/O"),
        "chunk": ("B", "[partition, pattern] l: contiguous bytes per process on disk"),
        "call": ("B", "[partition, pattern] L: bytes per process per call"),
        "weight": ("1", "[pattern] U: share of the scheduled time"),
        "ptype": ("1", "[pattern] type: 0 scatter, 1 shared, 2 separated, 3 segmented, "
                  "4 seg_coll"),
        "row": ("1", "[pattern] row of the summary table (1..7; 0 none; 8 shown apart)"),
        "segment": ("B", "[partition] per-process segment of types 3 and 4"),
        "repetitions": ("1", "[access, partition, pattern] calls per process (-1: not run)"),
        "t_pattern": ("s", "[access, partition, pattern] rank 0's pattern time (barrier to "
                      "barrier)"),
        "parts": ("s", "[access, partition, pattern, rank, part] per-rank parts: t_pat, "
                  "barrier, bcast, sync, last_io, last_barrier_bcast (NaN: not a member)"),
        "t_open": ("s", "[access, partition, type] rank 0's open, between two barriers"),
        "t_close": ("s", "[access, partition, type] rank 0's close and barrier"),
        "errors": ("1", "[access, partition, pattern] stamp mismatches over ranks"),
        "defects": ("1", "[access, partition, pattern] --check: doubles read back wrong"),
        "done": ("1", "[access, partition] 1 when the phase completed"),
    },
    bools=("quick", "rewrite_all", "shared", "unique", "checked"), json=("hints_used",),
)

def _pattern_bw(rec: BeffIORecord, a: int, i: int) -> np.ndarray:
    """[pattern] bytes over all ranks / rank 0's pattern time (B/s); NaN where not run."""
    n = int(rec.partitions[i])
    reps = rec.repetitions[a, i].astype(np.float64)
    t = rec.t_pattern[a, i]
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where((reps >= 0) & (t > 0), rec.call[i] * reps * n / t, np.nan)
    return np.asarray(bw)


def _type_bw(rec: BeffIORecord, a: int, i: int) -> np.ndarray:
    """[type] all bytes of the type (U=0 patterns included) over open + patterns + close."""
    n = int(rec.partitions[i])
    out = np.full(len(TYPES), np.nan)
    if not rec.done[a, i]:
        return out
    for t in range(len(TYPES)):
        if not rec.measured(a, t):
            continue
        sel = rec.ptype == t
        nbytes = float((rec.call[i, sel] * rec.repetitions[a, i, sel]).sum())
        seconds = float(rec.t_open[a, i, t] + rec.t_pattern[a, i, sel].sum()
                        + rec.t_close[a, i, t])
        out[t] = type_bandwidth(nbytes, n, seconds)
    return out


def _mbps(x: float) -> float | None:
    return round(x / MB, 6) if math.isfinite(x) else None


Cells = dict[str, dict[str, dict[str, "float | None"]]]  # access -> type -> chunk -> MB/s


@dataclass(frozen=True)
class PartitionFigures:
    """One partition size: its averages (MB/s, None where the partition did not complete),
    every pattern's bandwidth (``patterns_MBps[access][type][chunk]``), the bytes moved, and
    the original's validity criteria."""

    nprocs: int
    complete: bool
    measured: bool
    write_MBps: float | None
    rewrite_MBps: float | None
    read_MBps: float | None
    write_rewrite_MBps: float | None
    b_eff_io_MBps: float | None
    type_MBps: dict[str, dict[str, float | None]]
    patterns_MBps: Cells
    bytes_per_access: int
    percent_of_total_memory: float | None
    errors: int
    defects: int | None
    valid: bool
    criteria: dict[str, bool]


@dataclass(frozen=True)
class BeffIOSummary:
    """b_eff_io's figures derived from a record, under documented, stable keys
    (share/schema/README.md); :meth:`to_json` is the JSON view's entry."""

    mode: str
    nprocs: int
    partitions: tuple[int, ...]
    memory_per_proc_bytes: int
    memory_per_proc_source: str
    total_memory_bytes: int
    total_memory_source: str
    lmax_bytes: int
    scheduled_time_s: float
    scheduled_time_per_partition_s: float
    validity_time_s: float
    rewrite_all: bool
    shared_file_pointer: bool
    unique_open: bool
    checked: bool
    b_eff_io_MBps: float | None
    nprocs_at_max: int | None
    valid: bool
    per_partition: tuple[PartitionFigures, ...]
    runtime_s: float
    failure: str | None
    final_line: str

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(self)))
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BeffIOSummary:
        """A summary stored as its figures (``beff import`` of b_eff_io's .sum)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in fields}
        kwargs["partitions"] = tuple(kwargs.get("partitions", ()))
        kwargs["per_partition"] = tuple(PartitionFigures(**p)
                                        for p in kwargs.get("per_partition", ()))
        return cls(**kwargs)


def summarize(rec: BeffIORecord) -> BeffIOSummary:
    """The derived numbers under documented, stable keys (share/schema/README.md)."""
    per_partition: list[PartitionFigures] = []
    reduced: list[Partition] = []
    for i, n in enumerate(int(x) for x in rec.partitions):
        bw_type = np.stack([_type_bw(rec, a, i) for a in range(3)])
        complete = bool(rec.done[:, i].all())
        part = reduce_partition(n, np.nan_to_num(bw_type, nan=0.0), rec.rewrite_all)
        errors = int(rec.errors[:, i].sum())
        defects = int(rec.defects[:, i].sum())
        if complete:
            reduced.append(part)
        crit = validity(rec.scheduled_per_partition(), rec.shared, errors)
        table: dict[str, dict[str, dict[str, float | None]]] = {}
        for a, access in enumerate(ACCESSES):
            bw = _pattern_bw(rec, a, i)
            bad = rec.errors[a, i] > 0
            table[access] = {}
            for t, tname in enumerate(TYPES):
                if not rec.measured(a, t):
                    continue
                cells: dict[str, float | None] = {}
                for p in np.flatnonzero(rec.ptype == t):
                    row = int(rec.row[p])
                    if not 1 <= row <= 8:
                        continue
                    key = "2MiB_per_call" if row == 8 else plan.row_key(
                        plan.ROW_CHUNKS[row - 1])
                    cells[key] = ERROR_MBPS if bad[p] else _mbps(float(bw[p]))
                table[access][tname] = cells
        nbytes = float((rec.call[i] * np.maximum(rec.repetitions[READ, i], 0)).sum()) * n
        per_partition.append(PartitionFigures(
            nprocs=n,
            complete=complete,
            measured=bool((rec.repetitions[:, i] >= 0).any()),
            write_MBps=_mbps(part.write) if complete else None,
            rewrite_MBps=_mbps(part.rewrite) if complete else None,
            read_MBps=_mbps(part.read) if complete else None,
            write_rewrite_MBps=_mbps(part.write_rewrite) if complete else None,
            b_eff_io_MBps=_mbps(part.b_eff_io) if complete else None,
            type_MBps={access: {tname: _mbps(float(bw_type[a, t]))
                                for t, tname in enumerate(TYPES) if rec.measured(a, t)}
                       for a, access in enumerate(ACCESSES)},
            patterns_MBps=table,
            bytes_per_access=int(nbytes),
            percent_of_total_memory=100.0 * nbytes / rec.total_memory
            if rec.total_memory else None,
            errors=errors,
            defects=defects if rec.checked else None,
            valid=all(crit),
            criteria={"scheduled_time": crit[0], "shared_file_pointer": crit[1],
                      "no_errors": crit[2]},
        ))
    best = maximum(reduced)
    at_best = next((p for p in per_partition if best is not None and p.nprocs == best.nprocs),
                   None)
    best_errors = at_best.errors if at_best is not None else 0
    best_valid = at_best.valid if at_best is not None else False
    return BeffIOSummary(
        mode="quick" if rec.quick else "b_eff_io",
        nprocs=rec.nprocs,
        partitions=tuple(int(x) for x in rec.partitions),
        memory_per_proc_bytes=rec.memory_per_proc,
        memory_per_proc_source=rec.memory_source,
        total_memory_bytes=rec.total_memory,
        total_memory_source=rec.total_memory_source,
        lmax_bytes=rec.lmax,
        scheduled_time_s=rec.scheduled_time,
        scheduled_time_per_partition_s=rec.scheduled_per_partition(),
        validity_time_s=T_CRIT_S,
        rewrite_all=rec.rewrite_all,
        shared_file_pointer=rec.shared,
        unique_open=rec.unique,
        checked=rec.checked,
        b_eff_io_MBps=_mbps(best.b_eff_io) if best else None,
        nprocs_at_max=best.nprocs if best else None,
        valid=bool(best_valid),
        per_partition=tuple(per_partition),
        runtime_s=rec.runtime_s,
        failure=rec.failure or None,
        final_line=final_line(rec, best, best_valid, best_errors),
    )


def final_line(rec: BeffIORecord, best: Partition | None, valid: bool, errors: int) -> str:
    """The original's last line, character for character (without its leading newline)."""
    if best is None:
        return "b_eff_io = (no complete partition)"
    u = rec.uname
    line = (f" b_eff_io = {best.b_eff_io / MB:8.3f} MB/s on {best.nprocs} processes with "
            f"{rec.memory_per_proc // MIB:3d} MByte/PE, scheduled time="
            f"{rec.scheduled_per_partition() / 60:3.1f} Min, on {u[0]} {u[1]} {u[2]} {u[3]} "
            f"{u[4]}")
    if not valid:
        line += ", NOT VALID (see above)"
    if errors > 0:
        line += f", with {errors} ERRORS --!--!--!--"
    if rec.quick:
        line += ", QUICK (beff io --quick: a first look)"
    return line
