"""Statistics over per-rank samples (numpy only, no MPI)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from beff.results import printed
from beff.results.model import Measurement

MB = 1e6  # IMB 2021: Mbytes/sec with MB = 10^6 bytes
US = 1e6


@dataclass
class Summary:
    """Per-size figures as IMB reports them, over all ranks or one group (NaN if not measured).

    Times in microseconds; bandwidth in MB/s (10^6 B/s) = bw_scale * bytes / t_max.
    """

    t_min: np.ndarray
    t_max: np.ndarray
    t_avg: np.ndarray
    mbytes_per_sec: np.ndarray
    msg_per_sec: np.ndarray


def _reduce(times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if times.shape[1] == 0:
        nan = np.full(times.shape[0], np.nan)
        return nan, nan, nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: sizes not measured
        return np.nanmin(times, axis=1), np.nanmax(times, axis=1), np.nanmean(times, axis=1)


def summarize(m: Measurement, group: int | None = None, metric: str | None = None) -> Summary:
    """t_min/t_max/t_avg over ranks (of one group if given; ``-multi 0`` pools all groups),
    of the first metric or of ``metric``.

    Mbytes/sec = bw_scale * X / t_max / 10^6. For message-rate benchmarks (Uniband, Biband)
    Msg/sec = msgrate_factor / t_max and Mbytes/sec = Msg/sec * X / 10^6, as in IMB.

    An imported result (no samples) gives the figures its original printed, NaN where it
    printed none (IMB's single-transfer ``t`` is its t_max).
    """
    if m.printed:
        return Summary(*printed.figures(m, group, metric))
    times = m.times if metric is None else m.metric_times(metric)
    if group is not None:
        times = times[:, m.group == group]
    t_min, t_max, t_avg = _reduce(times)
    sizes = m.sizes.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(t_max > 0, m.msgrate_factor / t_max, 0.0)
        if m.msgrate_factor > 0:
            bw = rate * sizes / MB
        else:
            bw = np.where(t_max > 0, m.bw_scale * sizes / t_max / MB, 0.0)
    measured = np.isfinite(t_max)
    return Summary(t_min * US, t_max * US, t_avg * US, np.where(measured, bw, np.nan),
                   np.where(measured, rate, np.nan))


def batch_spread(m: Measurement) -> np.ndarray:
    """Per size, the coefficient of variation of per-iteration batch times on the slowest rank."""
    out = np.full(len(m.sizes), np.nan)
    for s in range(len(m.sizes)):
        if not np.isfinite(m.times[s]).any():
            continue
        r = int(np.nanargmax(m.times[s]))
        iters = m.batch_iters[s, r]
        valid = iters > 0
        per_iter = m.samples[s, r, valid] / iters[valid]
        if per_iter.size > 1 and per_iter.mean() > 0:
            out[s] = float(per_iter.std(ddof=1) / per_iter.mean())
    return out


def overlap_percent(t_pure: np.ndarray, t_cpu: np.ndarray, t_ovrl: np.ndarray,
                    denominator: Callable[[np.ndarray, np.ndarray], np.ndarray] = np.maximum,
                    ) -> np.ndarray:
    """IMB's overlap[%] = 100 * max(0, min(1, (t_pure + t_CPU - t_ovrl) / max(t_pure, t_CPU))):
    how much of the shorter of communication and computation was hidden (0 where both are 0).
    IMB-IO divides by min(t_pure, t_CPU) (``denominator=np.minimum``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (t_pure + t_cpu - t_ovrl) / denominator(t_pure, t_cpu)
    return np.where(np.isfinite(ratio), 100.0 * np.clip(ratio, 0.0, 1.0),
                    np.where(np.isnan(t_ovrl), np.nan, 0.0))


@dataclass
class Overlap:
    """Per size, IMB's overlap figures: t_ovrl, t_pure and t_CPU of the rank with the largest
    t_ovrl (microseconds), and overlap[%] computed from them."""

    t_ovrl: np.ndarray
    t_pure: np.ndarray
    t_cpu: np.ndarray
    percent: np.ndarray


def overlap(m: Measurement, group: int | None = None) -> Overlap:
    """:class:`Overlap` of a measurement with the metrics t_ovrl, t_pure and t_cpu (over all
    ranks, or one group)."""
    cols = slice(None) if group is None else m.group == group
    ovrl, pure, cpu = (m.metric_times(k)[:, cols] for k in ("t_ovrl", "t_pure", "t_cpu"))
    out = np.full((3, len(m.sizes)), np.nan)
    for s in range(len(m.sizes)):
        if ovrl.shape[1] and np.isfinite(ovrl[s]).any():
            r = int(np.nanargmax(ovrl[s]))  # the first of equal maxima, as IMB
            out[:, s] = ovrl[s, r], pure[s, r], cpu[s, r]
    out *= US
    return Overlap(out[0], out[1], out[2], overlap_percent(out[1], out[2], out[0]))
