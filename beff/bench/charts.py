"""The figures of IMB-style results (:class:`~beff.results.model.Measurement`): time and
bandwidth against message size, a series per process count (and mode), with the spread over
the timed batches drawn as a band and unstable sizes marked."""

from __future__ import annotations

import numpy as np

from beff.render.charts import Chart, Series
from beff.results import stats
from beff.results.model import OK, Measurement

# A size is marked unstable as the tables mark it (stats.certainty); with too few batches for
# its verdict, when the batches' spread (the table's cv) is above stats.CV_LIMIT.
UNSTABLE_CV = stats.CV_LIMIT
BAND_PERCENTILES = (10.0, 90.0)
SUITE_NAMES = {"p2p": "IMB-P2P", "io": "IMB-IO", "beffio": "b_eff_io", "beff": "b_eff"}


def batch_band(m: Measurement) -> tuple[np.ndarray, np.ndarray]:
    """Per size, the 10th and 90th percentile of the batches' t_avg (µs per iteration, mean
    over the ranks: :func:`beff.results.stats.batch_times`, what the cv, the interval and
    ``beff compare`` use); NaN where fewer than two batches were timed. The one place the
    band is computed."""
    lo = np.full(len(m.sizes), np.nan)
    hi = np.full(len(m.sizes), np.nan)
    for s in range(len(m.sizes)):
        if m.status[s] != OK:
            continue
        x = stats.batch_times(m, s)
        if x.size >= 2:
            lo[s], hi[s] = np.percentile(x, BAND_PERCENTILES)
    return lo, hi


def unstable(m: Measurement) -> np.ndarray:
    """Per size, whether it is unstable (:func:`beff.results.stats.certainty`), or, with too
    few batches for that verdict, whether the batches' spread is above :data:`UNSTABLE_CV`."""
    c = stats.certainty(m)
    with np.errstate(invalid="ignore"):
        spread = np.isfinite(c.cv) & (c.cv > UNSTABLE_CV)
    return np.array([s is False or (s is None and bool(w)) for s, w in zip(c.stable, spread,
                                                                           strict=True)])


def bandwidth(m: Measurement, t_us: np.ndarray) -> np.ndarray:
    """MB/s (10^6 B/s) of times per iteration ``t_us`` (µs) at each size, as
    :func:`beff.results.stats.summarize` derives it from t_max."""
    sizes = m.sizes.astype(np.float64)
    t = np.asarray(t_us, dtype=np.float64) / stats.US
    with np.errstate(divide="ignore", invalid="ignore"):
        if m.msgrate_factor > 0:
            bw = m.msgrate_factor / t * sizes / stats.MB
        else:
            bw = m.bw_scale * sizes / t / stats.MB
    return np.asarray(np.where(t > 0, bw, np.nan))


def suite_section(suite: str) -> str:
    return SUITE_NAMES.get(suite, f"IMB-{suite.upper()}")


def series_label(m: Measurement) -> str:
    """What tells the series of one benchmark apart: process count, mode, groups."""
    label = f"np={m.nprocs}"
    if m.mode:
        label += f", {m.mode}"
    if m.ngroups > 1:
        label += f", {m.ngroups} groups"
    return label


def measurement_charts(m: Measurement) -> list[Chart]:
    """Time per iteration (t_avg over ranks) and, for a benchmark with a bandwidth column,
    MB/s against the message size on log axes; a benchmark without sizes (Barrier) gets its
    time against the process count."""
    if m.unsupported or OK not in m.status:
        return []
    ok = np.array([s == OK for s in m.status])
    summary = stats.summarize(m)
    lo, hi = batch_band(m)
    shaky = unstable(m)
    section = suite_section(m.suite)
    metric = "time per iteration" if m.metric == "t" else m.metric
    base = f"{m.suite}/{m.benchmark}"
    if "bytes" not in m.columns:
        sel = ok & np.isfinite(summary.t_avg)
        label = m.benchmark + (f", {m.mode}" if m.mode else "")
        x = np.full(int(sel.sum()), float(m.nprocs))
        return [Chart(
            id=f"{base}/time", title=f"{m.benchmark}: time per call",
            xlabel="processes", ylabel=f"{metric}, mean over ranks [µs]",
            series=(Series(label, x, summary.t_avg[sel], lo[sel], hi[sel], shaky[sel]),),
            subject=m.benchmark, section=section, xlog=False, ylog=True,
            higher_is_better=False)]
    sel = ok & np.isfinite(summary.t_avg)
    if not sel.any():
        return []
    x = m.sizes[sel].astype(np.float64)
    key = (m.benchmark, m.nprocs)
    band_note = ("band: 10-90 % of the per-iteration times of the timed batches; "
                 f"open markers: unstable (batch spread above {UNSTABLE_CV:.0%})")
    charts = [Chart(
        id=f"{base}/time", title=f"{m.benchmark}: time per iteration",
        xlabel="message size [B]", ylabel=f"{metric}, mean over ranks [µs]",
        series=(Series(series_label(m), x, summary.t_avg[sel], lo[sel], hi[sel], shaky[sel],
                       compare_key=key),),
        subject=m.benchmark, section=section, note=band_note, higher_is_better=False)]
    if "mbytes_per_sec" in m.columns:
        charts.append(Chart(
            id=f"{base}/bandwidth", title=f"{m.benchmark}: bandwidth",
            xlabel="message size [B]", ylabel="bandwidth [MB/s, 10^6 B/s]",
            series=(Series(series_label(m), x, summary.mbytes_per_sec[sel],
                           bandwidth(m, hi)[sel], bandwidth(m, lo)[sel], shaky[sel],
                           compare_key=key),),
            subject=m.benchmark, section=section, note=band_note, higher_is_better=True))
    return charts
