"""Statistics over per-rank samples (numpy only, no MPI; scipy only where a test runs).

How sure a reported time is (see ``share/docs/statistics.md``): the timed loop of each size
runs in ``--batches`` batches (10 by default), and a batch is the unit of repetition. The
figure beff reports is t_avg, the mean over ranks of each rank's time per iteration (timed
seconds of all its batches / all its iterations, times the spec's time scale).

* :func:`certainty` gives per size a confidence interval of t_avg: a bootstrap over the
  batches, resampling batch indices jointly across the ranks (batch b of every rank ran at
  the same time, so the ranks' times within a batch are not independent; the batches are the
  independent draws). The interval is the *expanded percentile* interval (Hesterberg 2015):
  percentiles at 2-sided level alpha' = 2 Phi(-sqrt(n/(n-1)) t_{1-alpha/2, n-1}) instead of
  alpha, which corrects the plain percentile interval's known narrowness for few samples
  (10 batches: coverage about 0.89 instead of 0.95 for normal data). The resamples come from
  a Generator with a fixed seed, so a file shows the same interval every time, live or not.
* It gives a stability flag per size, in the manner of pyperf's checks: the size is
  *unstable* when the spread (std/mean) of the batches' t_avg is above ``CV_LIMIT`` (10 %,
  pyperf's threshold), or when the fastest batch is more than ``MIN_LIMIT`` (20 %) below the
  median batch (most batches were slowed by something the fastest one escaped).
* :func:`mann_whitney` and :func:`holm` test two runs' batches for ``beff compare``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from beff.results import printed
from beff.results.model import OK, Measurement

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


# ----------------------------------------------------------------------------- certainty
CI_LEVEL = 0.95  # the intervals' confidence level
RESAMPLES = 2000  # bootstrap resamples: the expanded interval's tails at 10 batches hold ~17
SEED = 26  # fixed, so that a file gives the same interval whenever it is shown
MIN_BATCHES = 3  # fewer batches: no interval, no stability verdict, no test
CV_LIMIT = 0.10  # unstable above: std/mean of the batches' t_avg (pyperf warns above 10 %)
MIN_LIMIT = 0.20  # unstable when the fastest batch is this far below the median batch


def _batches(m: Measurement, s: int, group: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Raw seconds and iterations [rank, batch] at size index s, of the batches that every
    rank (of ``group``) ran."""
    cols = slice(None) if group is None else m.group == group
    secs = np.asarray(m.samples[s][cols], dtype=np.float64)
    iters = np.asarray(m.batch_iters[s][cols], dtype=np.float64)
    if secs.ndim != 2 or secs.shape[0] == 0:
        return np.empty((0, 0)), np.empty((0, 0))
    ok = (iters > 0).all(axis=0) & np.isfinite(secs).all(axis=0)
    return secs[:, ok], iters[:, ok]


def batch_times(m: Measurement, s: int, group: int | None = None) -> np.ndarray:
    """Per batch at size index s: t_avg of that batch alone (µs per iteration, mean over the
    ranks), the independent draws that intervals and tests use."""
    secs, iters = _batches(m, s, group)
    if secs.size == 0:
        return np.empty(0)
    return np.asarray((secs / iters).mean(axis=0) * m.time_scale * US)


@lru_cache(maxsize=64)
def _weights(n: int, stream: int) -> np.ndarray:
    """[resample, batch] how often each of n batches is drawn, from a fixed seed (``stream``
    gives independent resamples for a second run)."""
    rng = np.random.default_rng([SEED, stream, n])
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=RESAMPLES).astype(np.float64)
    w.flags.writeable = False
    return w


def _replicates(batches: list[tuple[np.ndarray, np.ndarray]], stream: int) -> np.ndarray:
    """[item, resample] bootstrap replicates of t_avg / time scale (seconds) of items with the
    same number of batches, each given as (seconds, iterations) [rank, batch]."""
    n = batches[0][0].shape[1]
    w = _weights(n, stream)
    out = np.empty((len(batches), RESAMPLES))
    same = [bool((iters == iters[0]).all()) for _, iters in batches]
    if any(same):  # the usual case (every rank ran the same batches): one matrix product
        secs = np.stack([s.mean(axis=0) for (s, _), ok in zip(batches, same, strict=True) if ok])
        iters = np.stack([i[0] for (_, i), ok in zip(batches, same, strict=True) if ok])
        out[np.array(same)] = (secs @ w.T) / (iters @ w.T)
    for k, (secs, iters) in enumerate(batches):
        if not same[k]:
            out[k] = ((secs @ w.T) / (iters @ w.T)).mean(axis=0)
    return out


def replicates(m: Measurement, s: int, group: int | None = None, stream: int = 0) -> np.ndarray:
    """Bootstrap replicates of t_avg (µs) at size index s: batch indices resampled jointly
    across the ranks, each rank's time being its drawn seconds over its drawn iterations, as
    the reported figure is. Empty with fewer than ``MIN_BATCHES`` batches."""
    secs, iters = _batches(m, s, group)
    if secs.shape[1] < MIN_BATCHES:
        return np.empty(0)
    return np.asarray(_replicates([(secs, iters)], stream)[0] * m.time_scale * US)


def _t_central(t: float, nu: int) -> float:
    """P(|T| <= t) for Student's t with nu degrees of freedom (Abramowitz and Stegun 26.7.3
    and 26.7.4: exact for integer nu)."""
    theta = math.atan(t / math.sqrt(nu))
    c2 = math.cos(theta) ** 2
    j, term, total = (1, math.cos(theta), 0.0) if nu % 2 else (0, 1.0, 0.0)
    while j <= nu - 2:
        total += term
        term *= c2 * (j + 1) / (j + 2)
        j += 2
    if nu % 2:
        return 2 / math.pi * (theta + math.sin(theta) * total)
    return math.sin(theta) * total


@lru_cache(maxsize=256)
def t_quantile(p: float, nu: int) -> float:
    """The p quantile (p > 0.5) of Student's t with nu degrees of freedom, by bisection (no
    scipy import, so that ``beff show`` stays light)."""
    target = 2 * p - 1
    lo, hi = 0.0, 1.0
    while _t_central(hi, nu) < target:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_central(mid, nu) < target else (lo, mid)
    return (lo + hi) / 2


def expanded_levels(n: int, level: float = CI_LEVEL) -> tuple[float, float]:
    """The percentiles (as fractions) of the expanded percentile interval for n samples:
    alpha'/2 = Phi(-sqrt(n/(n-1)) t_{1-alpha/2, n-1}) (Hesterberg 2015)."""
    z = math.sqrt(n / (n - 1)) * t_quantile(1 - (1 - level) / 2, n - 1)
    a = NormalDist().cdf(-z)
    return a, 1 - a


def row_quantiles(x: np.ndarray, qs: tuple[float, ...]) -> np.ndarray:
    """[q, row] quantiles of each row of ``x``: np.quantile(x, qs, axis=1) to the last bit
    (its default, linear method), by one sort of the rows, which takes a fraction of
    np.quantile's time (the table of every benchmark waits for it)."""
    s = np.sort(x, axis=1)
    n = s.shape[1]
    out = np.empty((len(qs), s.shape[0]))
    for k, q in enumerate(qs):
        v = q * (n - 1)
        lo = min(int(math.floor(v)), n - 1)
        hi = min(lo + 1, n - 1)
        t = v - lo
        a, b = s[:, lo], s[:, hi]
        d = b - a  # numpy's _lerp: from the nearer end
        out[k] = b - d * (1 - t) if t >= 0.5 else a + d * t
    out[:, np.isnan(x).any(axis=1)] = np.nan  # as np.quantile: a NaN makes every quantile NaN
    return out


@dataclass
class Certainty:
    """Per size, how sure t_avg is: its interval (µs, NaN: fewer than ``MIN_BATCHES``
    batches), the spread (std/mean) of the batches' t_avg (NaN: fewer than 2), the batches
    used, and the stability verdict (None: not judged) with its reason ("" when stable)."""

    low: np.ndarray
    high: np.ndarray
    cv: np.ndarray
    batches: np.ndarray
    stable: list[bool | None]
    why: list[str]


def certainty(m: Measurement, group: int | None = None, level: float = CI_LEVEL) -> Certainty:
    """:class:`Certainty` of t_avg of every measured size (over all ranks, or one group).
    Sizes with the same number of batches are handled together (one matrix product)."""
    n_sizes = len(m.sizes)
    out = Certainty(np.full(n_sizes, np.nan), np.full(n_sizes, np.nan),
                    np.full(n_sizes, np.nan), np.zeros(n_sizes, dtype=np.int64),
                    [None] * n_sizes, [""] * n_sizes)
    by_n: dict[int, list[tuple[int, np.ndarray, np.ndarray]]] = {}
    for s in range(n_sizes):
        if m.status[s] == OK:
            secs, iters = _batches(m, s, group)
            out.batches[s] = n = secs.shape[1] if secs.size else 0
            if n > 1:
                by_n.setdefault(n, []).append((s, secs, iters))
    for n, items in by_n.items():
        at = np.array([s for s, _, _ in items])
        x = np.stack([(secs / iters).mean(axis=0) for _, secs, iters in items])  # [size, batch]
        mean = x.mean(axis=1)
        good = np.flatnonzero(mean > 0)
        at, x, mean, items = at[good], x[good], mean[good], [items[i] for i in good]
        cv = x.std(axis=1, ddof=1) / mean
        out.cv[at] = cv
        if n < MIN_BATCHES or not items:
            continue
        fastest = 1 - x.min(axis=1) / np.median(x, axis=1)
        for s, c, f in zip(at.tolist(), cv.tolist(), fastest.tolist(), strict=True):
            reasons = []
            if c > CV_LIMIT:
                reasons.append(f"spread {c:.0%} > {CV_LIMIT:.0%}")
            if f > MIN_LIMIT:
                reasons.append(f"fastest batch {f:.0%} below the median")
            out.stable[s] = not reasons
            out.why[s] = "; ".join(reasons)
        reps = _replicates([(secs, iters) for _, secs, iters in items], 0)
        bounds = row_quantiles(reps, expanded_levels(n, level)) * m.time_scale * US
        out.low[at], out.high[at] = bounds[0], bounds[1]
    return out


# ----------------------------------------------------------------------------- two runs
def mann_whitney(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the Mann-Whitney U test of two runs' batch times (scipy): exact
    without ties (the normal approximation cannot go below ~2e-4 at 10 against 10 batches,
    too coarse once corrected for hundreds of sizes), the normal approximation with tie and
    continuity corrections otherwise. NaN with fewer than ``MIN_BATCHES`` batches on a side."""
    if a.size < MIN_BATCHES or b.size < MIN_BATCHES:
        return math.nan
    from scipy.stats import mannwhitneyu

    ties = np.unique(np.concatenate([a, b])).size < a.size + b.size
    exact = not ties and a.size <= 100 and b.size <= 100
    result = mannwhitneyu(a, b, alternative="two-sided",
                          method="exact" if exact else "asymptotic")
    return float(result.pvalue)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN entries are not tests and stay NaN): rejecting
    where adjusted p <= alpha keeps the chance of any false rejection among all of them at
    most alpha, whatever the tests' dependence."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    k = order.size
    adjusted = np.maximum.accumulate(np.minimum(1.0, (k - np.arange(k)) * p[order]))
    out[order] = adjusted
    return out


def ratio_interval(a: Measurement, sa: int, b: Measurement, sb: int,
                   level: float = CI_LEVEL, group: int | None = None) -> tuple[float, float]:
    """Interval of t_avg(B) / t_avg(A) (of ``group`` on both sides, if given): the expanded
    percentile interval of the ratio of independent bootstrap replicates of both runs, for
    the smaller number of batches (NaN with fewer than ``MIN_BATCHES`` on a side)."""
    ra, rb = replicates(a, sa, group), replicates(b, sb, group, stream=1)
    if ra.size == 0 or rb.size == 0:
        return math.nan, math.nan
    n = min(batch_times(a, sa, group).size, batch_times(b, sb, group).size)
    lo, hi = np.quantile(rb / ra, expanded_levels(n, level))
    return float(lo), float(hi)


# --per-iteration (beff.bench.iterations): percentiles of single iterations
TAIL_PERCENTILES = {"p50_us": 50.0, "p90_us": 90.0, "p99_us": 99.0}
TAIL_COLUMNS = ("p50_us", "p90_us", "p99_us", "max_us")


def tails(m: Measurement) -> dict[str, np.ndarray]:
    """Per size: p50, p90, p99 and max (us) over the recorded iterations of each one's
    slowest rank (``m.iterations[S, R, M]``, IMB's t_max per repetition); NaN without
    them."""
    S = len(m.sizes)
    out = {c: np.full(S, np.nan) for c in TAIL_COLUMNS}
    if m.iterations is None:
        return out
    for s in range(S):
        ranks = m.iterations[s]
        kept = ~np.isnan(ranks).all(axis=0)
        if not kept.any():
            continue
        slowest = np.nanmax(ranks[:, kept], axis=0) * 1e6
        for column, q in TAIL_PERCENTILES.items():
            out[column][s] = np.percentile(slowest, q)
        out["max_us"][s] = slowest.max()
    return out
