"""Table columns: what a benchmark declares it yields, computed from a measurement's data.

A column is an id (stored with every measurement), its IMB text header, its label in rich
tables and JSON/CSV, and a function of the measurement (and group) that gives one value per
message size. Renderers look columns up here and never decide by benchmark class. A suite
with figures of its own registers its columns with :func:`column` next to its kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from beff.results import printed, stats
from beff.results.model import Measurement

Compute = Callable[[Measurement, "int | None"], np.ndarray]


@dataclass(frozen=True)
class Column:
    """One table column: ``compute(m, group)`` gives its value per size (NaN: no value)."""

    id: str
    imb: str  # IMB text header, e.g. "t_min[usec]"
    label: str  # rich table header
    key: str  # JSON/CSV field name
    compute: Compute
    digits: int = 2
    integer: bool = False
    timing: bool = False  # a time (rich tables add no t_min/t_max/t_avg where one is shown)


COLUMNS: dict[str, Column] = {}


def column(id: str, imb: str, label: str, key: str | None = None, digits: int = 2,
           integer: bool = False, timing: bool = False) -> Callable[[Compute], Compute]:
    """Register ``compute`` as column ``id``."""

    def wrap(compute: Compute) -> Compute:
        COLUMNS[id] = Column(id, imb, label, key or id, compute, digits, integer, timing)
        return compute

    return wrap


def lookup(id: str) -> Column | None:
    return COLUMNS.get(id)


def values(m: Measurement, ids: tuple[str, ...] | list[str],
           group: int | None = None) -> dict[str, np.ndarray]:
    """Every known column of ``ids`` for ``m`` (and ``group``), one array per column; NaN
    where the file lacks a metric the column needs (a file is shown, never refused). An
    imported result gives the columns as printed (NaN where the original printed none)."""
    out = {}
    for cid in ids:
        if m.printed and cid not in ("bytes", "repetitions", "defects"):
            out[cid] = printed.column(m, cid, group)
            continue
        col = COLUMNS.get(cid)
        if col is not None:
            try:
                out[cid] = np.asarray(col.compute(m, group), dtype=np.float64)
            except KeyError:
                out[cid] = np.full(len(m.sizes), np.nan)
    return out


@column("bytes", "#bytes", "bytes", key="bytes", integer=True)
def _bytes(m: Measurement, group: int | None) -> np.ndarray:
    return m.sizes.astype(np.float64)


@column("repetitions", "#repetitions", "reps", key="repetitions", integer=True)
def _reps(m: Measurement, group: int | None) -> np.ndarray:
    return m.repetitions.astype(np.float64)


@column("t", "t[usec]", "t [µs]", key="t_us", timing=True)
def _t(m: Measurement, group: int | None) -> np.ndarray:
    return stats.summarize(m, group).t_max  # IMB's t[usec] is the slower rank's time


@column("t_min", "t_min[usec]", "t_min [µs]", key="t_min_us", timing=True)
def _t_min(m: Measurement, group: int | None) -> np.ndarray:
    return stats.summarize(m, group).t_min


@column("t_max", "t_max[usec]", "t_max [µs]", key="t_max_us", timing=True)
def _t_max(m: Measurement, group: int | None) -> np.ndarray:
    return stats.summarize(m, group).t_max


@column("t_avg", "t_avg[usec]", "t_avg [µs]", key="t_avg_us", timing=True)
def _t_avg(m: Measurement, group: int | None) -> np.ndarray:
    return stats.summarize(m, group).t_avg


@column("mbytes_per_sec", "Mbytes/sec", "MB/s", key="mbytes_per_sec")
def _mbps(m: Measurement, group: int | None) -> np.ndarray:
    return stats.summarize(m, group).mbytes_per_sec


@column("msg_per_sec", "Msg/sec", "msg/s", key="msg_per_sec", digits=0)
def _msgs(m: Measurement, group: int | None) -> np.ndarray:
    return stats.summarize(m, group).msg_per_sec


@column("defects", "defects", "defects", key="defects")
def _defects(m: Measurement, group: int | None) -> np.ndarray:
    if m.defects is None:
        return np.zeros(len(m.sizes))
    return m.defects.astype(np.float64)


def metric_column(metric: str, stat: str = "max", id: str | None = None) -> str:
    """Register (once) and return the id of a column of metric ``metric``'s min/max/avg over
    ranks, in microseconds: e.g. ``t_pure`` -> header ``t_pure[usec]``. ``id`` names it where
    that name is taken (by another column with the same header)."""
    name = metric if stat == "max" else f"{metric}_{stat}"
    cid = id or name
    if cid not in COLUMNS:

        def compute(m: Measurement, group: int | None) -> np.ndarray:
            s = stats.summarize(m, group, metric)
            return {"min": s.t_min, "max": s.t_max, "avg": s.t_avg}[stat]

        column(cid, f"{name}[usec]", f"{name} [µs]", key=f"{name}_us", timing=True)(compute)
    return cid


# IMB-NBC/MPI4's overlap table: the figures of the rank with the largest t_ovrl.
def _overlap_column(field: str) -> Compute:
    def compute(m: Measurement, group: int | None) -> np.ndarray:
        return np.asarray(getattr(stats.overlap(m, group), field))

    return compute


for _id, _imb, _label, _key, _field in (
    ("t_ovrl", "t_ovrl[usec]", "t_ovrl [µs]", "t_ovrl_us", "t_ovrl"),
    ("t_pure", "t_pure[usec]", "t_pure [µs]", "t_pure_us", "t_pure"),
    ("t_cpu", "t_CPU[usec]", "t_CPU [µs]", "t_cpu_us", "t_cpu"),
    ("overlap", " overlap[%]", "overlap [%]", "overlap_pct", "percent"),
):
    column(_id, _imb, _label, key=_key, timing=_id != "overlap")(_overlap_column(_field))


# IMB-RMA: one origin's time (targets report none), kept as t[usec] under -multi 0 (IMB's
# MultPassiveTransfer), and Truly_passive_put's two times, each the maximum over ranks.
column("t_origin", "t[usec]", "t [µs]", key="t_us", timing=True)(_t)
for _metric in ("t_pure", "t_ovrl"):
    metric_column(_metric, id=f"rma_{_metric}")


# IMB-IO's overlap table: t_ovrl, t_pure and t_CPU each the maximum over ranks, and overlap[%]
# divided by the smaller of t_pure and t_CPU (IMB_output.c, unlike IMB-NBC's larger one).
IO_OVERLAP = ("bytes", "repetitions", "io_t_ovrl", "io_t_pure", "io_t_cpu", "io_overlap")
def _max_of(metric: str) -> Compute:
    def compute(m: Measurement, group: int | None) -> np.ndarray:
        return stats.summarize(m, group, metric).t_max

    return compute


for _metric, _imb in (("t_ovrl", "t_ovrl"), ("t_pure", "t_pure"), ("t_cpu", "t_CPU")):
    column(f"io_{_metric}", f"{_imb}[usec]", f"{_imb} [µs]", key=f"{_metric}_us",
           timing=True)(_max_of(_metric))


@column("io_overlap", " overlap[%]", "overlap [%]", key="overlap_pct")
def _io_overlap(m: Measurement, group: int | None) -> np.ndarray:
    ovrl, pure, cpu = (stats.summarize(m, group, k).t_max for k in ("t_ovrl", "t_pure", "t_cpu"))
    return stats.overlap_percent(pure, cpu, ovrl, denominator=np.minimum)


def io_overlap_columns() -> tuple[str, ...]:
    return IO_OVERLAP


# --per-iteration's tail latencies (beff.results.stats.tails); NaN without them
def _tail(key: str) -> Compute:
    def compute(m: Measurement, group: int | None) -> np.ndarray:
        return stats.tails(m)[key]

    return compute


for _key in stats.TAIL_COLUMNS:
    _label = _key[:-3]
    column(_label, f"{_label}[usec]", f"{_label} [us]", key=_key, timing=True)(_tail(_key))
