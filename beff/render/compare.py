"""``beff compare A.h5 B.h5``: per-size ratios of two runs, with a noise check (no MPI)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from beff.core import suite as suites
from beff.render.view import view_of
from beff.results import stats
from beff.results.model import OK, Measurement, RunRecord

# Metadata that must match for a fair comparison (pyperf's "checked metadata" idea).
CHECKED = (("nprocs", lambda a: a.get("nprocs")),
           ("MPI library",
            lambda a: str(a.get("mpi", {}).get("library_version", "")).replace("\x00", "")
            .split("\n")[0].strip()),  # files written under Open MPI before: a NUL
           ("hosts", lambda a: a.get("placement", {}).get("hosts")),
           ("oversubscribed", lambda a: a.get("placement", {}).get("oversubscribed")),
           ("check mode", lambda a: bool(a.get("config", {}).get("check"))),
           ("timed-loop backend", lambda a: a.get("overhead", {}).get("backend", "python")),
           ("buffers", lambda a: "hugepage" if a.get("config", {}).get("hugepages")
            else "malloc-like"))
def kind_of_run(record: RunRecord) -> str:
    """What ran, as compare names it (two files compare only when it is the same)."""
    found = suites.find(record.suite)
    return found.label if found is not None else record.suite


@dataclass
class Row:
    benchmark: str
    nprocs: int
    nbytes: int
    a_us: float
    b_us: float
    ratio: float
    significant: bool
    samples: bool = True  # both have samples (an imported result has none: no noise check)


def mismatches(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Checked metadata that differ between the two runs."""
    out = []
    for name, get in CHECKED:
        va, vb = get(a), get(b)
        if va != vb:
            out.append(f"{name} differs: {va!r} vs {vb!r}")
    return out


def _pairs(a: RunRecord, b: RunRecord) -> Iterator[tuple[Any, Any]]:
    """The results of two files stored under the same key."""
    by_key = {r.key: r for r in b.results}
    for ra in a.results:
        if ra.key in by_key:
            yield ra, by_key[ra.key]


def setting_mismatches(a: RunRecord, b: RunRecord) -> list[str]:
    """The suite's settings that differ between the results of two files (e.g. b_eff's mode
    and memory per process), as the suite's view declares them."""
    va, vb = view_of(a), view_of(b)
    out = []
    for ra, rb in _pairs(a, b):
        sb = dict(vb.settings(rb))
        out += [f"{name} differs: {value!r} vs {sb.get(name)!r}"
                for name, value in va.settings(ra) if sb.get(name) != value]
    return out


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
            if not (np.isfinite(ta) and np.isfinite(tb)):  # imported IMB text: t only
                ta, tb = float(sa.t_max[i]), float(sb.t_max[j])
            if not (np.isfinite(ta) and np.isfinite(tb)):
                continue
            rows.append(Row(ma.benchmark, ma.nprocs, int(size), ta, tb,
                            tb / ta if ta > 0 else float("nan"),
                            significant(per_iteration(ma, i), per_iteration(mb, j)),
                            not (ma.printed or mb.printed)))
    return rows


def compare_figures(a: RunRecord, b: RunRecord) -> list[tuple[str, float, float, bool]]:
    """The headline figures of two files' results of the same key (b_eff, b_eff_io): (name,
    A, B, larger is better). Empty for suites compared size by size."""
    va, vb = view_of(a), view_of(b)
    out = []
    for ra, rb in _pairs(a, b):
        fb = {name: value for name, value, _ in vb.figures(rb)}
        out += [(name, value, fb[name], up) for name, value, up in va.figures(ra) if name in fb]
    return out
