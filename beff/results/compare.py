"""``beff compare A.h5 B.h5``: per-size ratios of two runs, with a noise check (no MPI)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from beff.results import stats
from beff.results.effbw import beff_summary
from beff.results.model import OK, Measurement, RunRecord

# Metadata that must match for a fair comparison (pyperf's "checked metadata" idea).
CHECKED = (("nprocs", lambda a: a.get("nprocs")),
           ("MPI library",
            lambda a: str(a.get("mpi", {}).get("library_version", "")).split("\n")[0]),
           ("hosts", lambda a: a.get("placement", {}).get("hosts")),
           ("oversubscribed", lambda a: a.get("placement", {}).get("oversubscribed")),
           ("check mode", lambda a: bool(a.get("config", {}).get("check"))),
           ("timed-loop backend", lambda a: a.get("overhead", {}).get("backend", "python")),
           ("buffers", lambda a: "hugepage" if a.get("config", {}).get("hugepages")
            else "malloc-like"))
# b_eff runs: what makes two b_eff figures comparable.
Getter = Callable[[dict[str, Any]], Any]
CHECKED_BEFF: tuple[tuple[str, Getter], ...] = (
    ("mode", lambda s: s.get("mode")),
    ("memory per process", lambda s: s.get("memory_per_proc_bytes")),
    ("methods in b_eff", lambda s: s.get("methods_in_b_eff")))
CHECKED_BEFFIO: tuple[tuple[str, Getter], ...] = (
    ("mode", lambda s: s.get("mode")),
    ("largest chunk (Lmax)", lambda s: s.get("lmax_bytes")),
    ("scheduled time", lambda s: s.get("scheduled_time_s")),
    ("partitions", lambda s: s.get("partitions")),
    ("rewrite of all types", lambda s: s.get("rewrite_all")))
# b_eff figures and whether larger is better.
BEFF_FIGURES = (("b_eff_MBps", True), ("b_eff_lmax_MBps", True), ("b_ring_MBps", True),
                ("b_random_MBps", True), ("latency_us", False), ("pingpong_latency_us", False),
                ("pingpong_bandwidth_MBps", True))


def kind_of_run(record: RunRecord) -> str:
    if record.beffio is not None:
        return "b_eff_io"
    if record.beff is not None or record.beff_v1_summary is not None:
        return "b_eff"
    return f"IMB {record.attrs.get('suite', 'mpi1')}"


@dataclass
class Row:
    benchmark: str
    nprocs: int
    nbytes: int
    a_us: float
    b_us: float
    ratio: float
    significant: bool


def mismatches(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Checked metadata that differ between the two runs."""
    out = []
    for name, get in CHECKED:
        va, vb = get(a), get(b)
        if va != vb:
            out.append(f"{name} differs: {va!r} vs {vb!r}")
    return out


def beff_mismatches(a: RunRecord, b: RunRecord) -> list[str]:
    """b_eff (or b_eff_io) settings that differ between two ``beff run`` (``beff io``) files."""
    sa, sb = summary_of(a) or {}, summary_of(b) or {}
    checked = CHECKED_BEFFIO if a.beffio is not None else CHECKED_BEFF
    return [f"{name} differs: {get(sa)!r} vs {get(sb)!r}" for name, get in checked
            if get(sa) != get(sb)]


def summary_of(record: RunRecord) -> dict[str, Any] | None:
    """The derived figures of a ``beff run`` or ``beff io`` file (None for IMB files)."""
    if record.beffio is not None:
        from beff.results.beffio import summarize

        return summarize(record.beffio)
    return beff_summary(record)


def beffio_figures(s: dict[str, Any]) -> dict[str, float]:
    """b_eff_io and, per partition, its weighted averages and b_eff_io (MB/s)."""
    out = {"b_eff_io_MBps": s.get("b_eff_io_MBps")}
    for p in s.get("per_partition", []):
        for key in ("write_MBps", "rewrite_MBps", "read_MBps", "b_eff_io_MBps"):
            out[f"n={p['nprocs']} {key}"] = p.get(key)
    return {k: float(v) for k, v in out.items() if v is not None}


def per_iteration(m: Measurement, s: int) -> np.ndarray:
    """Per-iteration times (µs) of every batch of every rank at size index s."""
    iters = m.batch_iters[s]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = m.samples[s] / iters * m.time_scale * 1e6
    return np.asarray(x[(iters > 0) & np.isfinite(x)])


def significant(a: np.ndarray, b: np.ndarray) -> bool:
    """A difference counts when the batch ranges (10th to 90th percentile) do not overlap."""
    if a.size < 2 or b.size < 2:
        return False
    a_lo, a_hi = np.percentile(a, [10, 90])
    b_lo, b_hi = np.percentile(b, [10, 90])
    return bool(a_hi < b_lo or b_hi < a_lo)


def compare_records(a: RunRecord, b: RunRecord) -> list[Row]:
    """t_avg of B over t_avg of A for every (benchmark, nprocs, size) both runs measured."""
    index = {(m.benchmark, m.mode, m.nprocs, m.ngroups): m for m in b.measurements}
    rows = []
    for ma in a.measurements:
        mb = index.get((ma.benchmark, ma.mode, ma.nprocs, ma.ngroups))
        if mb is None:
            continue
        sa, sb = stats.summarize(ma), stats.summarize(mb)
        sizes_b = {int(x): i for i, x in enumerate(mb.sizes)}
        for i, size in enumerate(ma.sizes):
            j = sizes_b.get(int(size))
            if j is None or ma.status[i] != OK or mb.status[j] != OK:
                continue
            ta, tb = float(sa.t_avg[i]), float(sb.t_avg[j])
            rows.append(Row(ma.benchmark, ma.nprocs, int(size), ta, tb,
                            tb / ta if ta > 0 else float("nan"),
                            significant(per_iteration(ma, i), per_iteration(mb, j))))
    return rows


def compare_beff(a: RunRecord, b: RunRecord) -> list[tuple[str, float, float, bool]]:
    """The headline figures of two ``beff run`` (or two ``beff io``) files: (name, A, B,
    larger is better)."""
    sa, sb = summary_of(a), summary_of(b)
    if sa is None or sb is None:
        return []
    if a.beffio is not None:
        fa, fb = beffio_figures(sa), beffio_figures(sb)
        return [(k, fa[k], fb[k], True) for k in fa if k in fb]
    return [(k, float(sa[k]), float(sb[k]), up) for k, up in BEFF_FIGURES]
