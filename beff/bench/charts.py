"""The figures of IMB-style results (:class:`~beff.results.model.Measurement`): time and
bandwidth (and the message rate, where the table has one) against message size, a series per
process count (and mode, and group under ``-multi 1``), with the spread over the timed batches
drawn as a band and unstable sizes marked.

An imported result (``beff import`` of IMB's text) has no batches: its figures are the columns
IMB printed (:func:`printed_charts`), its time labelled as IMB's column (``t``, ``t_avg``,
``t_ovrl`` ...), with t_min to t_max as the band where IMB printed them."""

from __future__ import annotations

import numpy as np

from beff.render.charts import Chart, Series
from beff.results import columns, printed, stats
from beff.results.model import OK, Measurement

# A size is marked unstable as the tables mark it (stats.certainty); with too few batches for
# its verdict, when the batches' spread (the table's cv) is above stats.CV_LIMIT.
UNSTABLE_CV = stats.CV_LIMIT
BAND_PERCENTILES = (10.0, 90.0)
BANDWIDTH_LABEL = "bandwidth [MB/s, 10^6 B/s]"
MSG_RATE_LABEL = "message rate [messages/s]"
IMPORTED_NOTE = "imported: the values as IMB printed them"


def batch_band(m: Measurement, group: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per size, the 10th and 90th percentile of the batches' t_avg (µs per iteration, mean
    over the ranks, of ``group`` if given: :func:`beff.results.stats.batch_times`, what the
    cv, the interval and ``beff compare`` use); NaN where fewer than two batches were timed.
    The one place the band is computed."""
    lo = np.full(len(m.sizes), np.nan)
    hi = np.full(len(m.sizes), np.nan)
    for s in range(len(m.sizes)):
        if m.status[s] != OK:
            continue
        x = stats.batch_times(m, s, group)
        if x.size >= 2:
            lo[s], hi[s] = np.percentile(x, BAND_PERCENTILES)
    return lo, hi


def unstable(m: Measurement, group: int | None = None) -> np.ndarray:
    """Per size, whether it is unstable (:func:`beff.results.stats.certainty`), or, with too
    few batches for that verdict, whether the batches' spread is above :data:`UNSTABLE_CV`."""
    c = stats.certainty(m, group)
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


def msg_rate(m: Measurement, t_us: np.ndarray) -> np.ndarray:
    """Messages per second of times per iteration ``t_us`` (µs), as
    :func:`beff.results.stats.summarize` derives Msg/sec from t_max."""
    t = np.asarray(t_us, dtype=np.float64) / stats.US
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(t > 0, m.msgrate_factor / t, np.nan))


def suite_section(suite: str) -> str:
    """The report's section of an IMB-style suite's charts: its IMB component's name
    (``IMB-MPI1``, ``IMB-P2P``, ``IMB-IO``); a suite with a view of its own names its own."""
    return f"IMB-{suite.upper()}"


def series_label(m: Measurement, group: int | None = None) -> str:
    """What tells the series of one benchmark apart: process count, mode, groups (each
    group of a ``-multi 1`` run is its own series, "group N")."""
    label = f"np={m.nprocs}"
    if m.mode:
        label += f", {m.mode}"
    if group is not None:
        label += f", group {group}"
    elif m.ngroups > 1:
        label += f", {m.ngroups} groups"
    return label + _policy(m)


def _policy(m: Measurement) -> str:
    """``--sync window``'s results say so in every series (IMB's barrier start: nothing)."""
    return ", window starts" if m.attrs.get("start_policy") == "window" else ""


def _sync_label(m: Measurement, group: int | None) -> str:
    """A series of a benchmark without sizes (Barrier): its name, mode and group."""
    return m.benchmark + (f", {m.mode}" if m.mode else "") + (
        f", group {group}" if group is not None else "") + _policy(m)


def _key(m: Measurement, group: int | None) -> tuple[str, int] | tuple[str, int, int]:
    """What ``beff compare``'s rows of the series are found by (:func:`beff.render.plot.
    significance`): benchmark and process count, and the group of a ``-multi 1`` run."""
    return (m.benchmark, m.nprocs) if group is None else (m.benchmark, m.nprocs, group)


def measurement_charts(m: Measurement) -> list[Chart]:
    """Time per iteration (t_avg over ranks) and, for a benchmark with a bandwidth column,
    MB/s (and with a message rate column, messages/s) against the message size on log axes;
    a benchmark without sizes (Barrier) gets its time against the process count. An imported
    result gets the columns IMB printed (:func:`printed_charts`)."""
    if m.unsupported or OK not in m.status:
        return []
    if m.printed:
        return printed_charts(m)
    ok = np.array([s == OK for s in m.status])
    section = suite_section(m.suite)
    metric = "time per iteration" if m.metric == "t" else m.metric
    base = f"{m.suite}/{m.benchmark}"
    ylabel = f"{metric}, mean over ranks [µs]"
    sized = "bytes" in m.columns
    times: list[Series] = []
    rates: dict[str, list[Series]] = {"bandwidth": [], "msgrate": []}
    for g in m.table_groups:
        summary = stats.summarize(m, g)
        lo, hi = batch_band(m, g)
        shaky = unstable(m, g)
        sel = ok & np.isfinite(summary.t_avg)
        if not sized:
            x = np.full(int(sel.sum()), float(m.nprocs))
            times.append(Series(_sync_label(m, g), x, summary.t_avg[sel], lo[sel], hi[sel],
                                shaky[sel]))
            continue
        if not sel.any():
            continue
        x = m.sizes[sel].astype(np.float64)
        key = _key(m, g)
        label = series_label(m, g)
        times.append(Series(label, x, summary.t_avg[sel], lo[sel], hi[sel], shaky[sel],
                            compare_key=key))
        if "mbytes_per_sec" in m.columns:
            rates["bandwidth"].append(Series(
                label, x, summary.mbytes_per_sec[sel], bandwidth(m, hi)[sel],
                bandwidth(m, lo)[sel], shaky[sel], compare_key=key))
        if "msg_per_sec" in m.columns and m.msgrate_factor > 0:
            rates["msgrate"].append(Series(
                label, x, summary.msg_per_sec[sel], msg_rate(m, hi)[sel], msg_rate(m, lo)[sel],
                shaky[sel], compare_key=key))
    if not sized:
        return [Chart(
            id=f"{base}/time", title=f"{m.benchmark}: time per call",
            xlabel="processes", ylabel=ylabel, series=tuple(times), subject=m.benchmark,
            section=section, xlog=False, ylog=True, note=batch_note(times, sync=True),
            higher_is_better=False)]
    return _sized_charts(m, times, rates, ylabel, batch_note(times), batch_note(
        rates["bandwidth"] + rates["msgrate"])) + tail_charts(m, ok)


def tail_charts(m: Measurement, ok: np.ndarray) -> list[Chart]:
    """``--per-iteration``: single iterations against the message size, the median with a
    band up to p99, and the slowest one (each iteration at its slowest rank)."""
    if m.iterations is None:
        return []
    tail = stats.tails(m)
    sel = ok & np.isfinite(tail["p50_us"])
    if not sel.any():
        return []
    x = m.sizes[sel].astype(np.float64)
    series = (Series("p50 (band: p50 to p99)", x, tail["p50_us"][sel], tail["p50_us"][sel],
                     tail["p99_us"][sel]),
              Series("max", x, tail["max_us"][sel]))
    return [Chart(id=f"{m.suite}/{m.benchmark}/tails",
                  title=f"{m.benchmark}: single iterations", xlabel="message size [B]",
                  ylabel="time of one iteration, slowest rank [µs]", series=series,
                  subject=m.benchmark, section=suite_section(m.suite),
                  note="--per-iteration: each recorded iteration's time at its slowest rank; "
                       "line: median, band: up to the 99th percentile; max: the slowest",
                  higher_is_better=False)]


def batch_note(series: list[Series], sync: bool = False) -> str:
    """What a measured chart's band and marks say, as far as its series have them: a band
    where two or more batches were timed (``sync``: a chart against the process count,
    drawn as bars where it has one point: whiskers there), red circles where a size is
    unstable; a run of one batch per size (--batches 1, older IMB-MT and IMB-P2P files) has
    neither, and says so."""
    banded = any(s.lo is not None and s.hi is not None and bool(np.isfinite(s.lo).any()
                                                                 & np.isfinite(s.hi).any())
                 for s in series)
    marked = any(s.marked is not None and bool(s.marked.any()) for s in series)
    if not banded:
        return "one timed batch per size: no band of the batches' spread, no stability verdict"
    band = "10-90 % of the per-iteration times of the timed batches"
    band = f"band (whiskers on a bar): {band}" if sync else f"band: {band}"
    if marked:
        return f"{band}; red circles: unstable (batch spread above {UNSTABLE_CV:.0%})"
    return f"{band}; none unstable (batch spread above {UNSTABLE_CV:.0%})"


def _sized_charts(m: Measurement, times: list[Series], rates: dict[str, list[Series]],
                  ylabel: str, note: str, rate_note: str) -> list[Chart]:
    """The time, bandwidth and message rate charts of a benchmark with sizes (none of a kind
    without series); ``note`` goes under the time chart, ``rate_note`` under the others."""
    drawn = (("time", "time per iteration", ylabel, times, note, False),
             ("bandwidth", "bandwidth", BANDWIDTH_LABEL, rates["bandwidth"], rate_note, True),
             ("msgrate", "message rate", MSG_RATE_LABEL, rates["msgrate"], rate_note, True))
    return [Chart(id=f"{m.suite}/{m.benchmark}/{kind}", title=f"{m.benchmark}: {title}",
                  xlabel="message size [B]", ylabel=y, series=tuple(series),
                  subject=m.benchmark, section=suite_section(m.suite), note=text,
                  higher_is_better=up)
            for kind, title, y, series, text, up in drawn if series]


def printed_time(m: Measurement) -> tuple[str, str | None, str | None] | None:
    """The time column an imported result's figure draws, and its band's columns: t_avg
    between t_min and t_max where IMB printed them, else the first time column it printed
    (``t``, IMB-P2P's ``t``, ``t_ovrl`` ...); None when it printed none (Uniband)."""
    p = m.printed
    if "t_avg" in p:
        return ("t_avg", "t_min" if "t_min" in p else None, "t_max" if "t_max" in p else None)
    for cid in (*m.columns, *p):
        col = columns.lookup(cid)
        if cid in p and col is not None and col.timing:
            return cid, None, None
    return None


def printed_name(cid: str) -> str:
    """IMB's name of a time column: ``t`` for ``t[usec]``, ``t_ovrl`` for ``t_ovrl[usec]``."""
    col = columns.lookup(cid)
    return (col.imb if col is not None else cid).strip().split("[")[0]


def printed_charts(m: Measurement) -> list[Chart]:
    """An imported result's figures: the time IMB printed (``t [usec] (IMB's t)`` ...) and
    its Mbytes/sec and Msg/sec where printed, a series per group of a ``-multi 1`` table; no
    batches, so no band but t_min to t_max (where printed), and nothing marked unstable."""
    ok = np.array([s == OK for s in m.status])
    time = printed_time(m)
    name = printed_name(time[0]) if time is not None else ""
    ylabel = f"{name} [usec] (IMB's {name})"
    sized = "bytes" in m.columns
    times: list[Series] = []
    rates: dict[str, list[Series]] = {"bandwidth": [], "msgrate": []}
    for g in m.table_groups:
        x_all = m.sizes.astype(np.float64) if sized else np.full(len(m.sizes),
                                                                  float(m.nprocs))
        label = series_label(m, g) if sized else _sync_label(m, g)
        if time is not None:
            cid, lo_id, hi_id = time
            y = printed.column(m, cid, g)
            sel = ok & np.isfinite(y)
            lo = printed.column(m, lo_id, g)[sel] if lo_id and hi_id else None
            hi = printed.column(m, hi_id, g)[sel] if lo_id and hi_id else None
            if sel.any():
                times.append(Series(label, x_all[sel], y[sel], lo, hi))
        for kind, cid in (("bandwidth", "mbytes_per_sec"), ("msgrate", "msg_per_sec")):
            if cid in m.printed and sized:
                y = printed.column(m, cid, g)
                sel = ok & np.isfinite(y)
                if sel.any():
                    rates[kind].append(Series(label, x_all[sel], y[sel]))
    band = time is not None and time[1] is not None and time[2] is not None
    note = IMPORTED_NOTE + ("; band: t_min to t_max over the ranks" if band else "")
    if not sized:
        if not times:
            return []
        return [Chart(
            id=f"{m.suite}/{m.benchmark}/time", title=f"{m.benchmark}: time per call",
            xlabel="processes", ylabel=ylabel, series=tuple(times), subject=m.benchmark,
            section=suite_section(m.suite), xlog=False, ylog=True, note=note,
            higher_is_better=False)]
    return _sized_charts(m, times, rates, ylabel, note, IMPORTED_NOTE)
