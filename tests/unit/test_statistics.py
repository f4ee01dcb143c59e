"""How sure a figure is, and `beff compare`'s test, on synthetic batch samples whose answer is
known: the interval's coverage, the stability flag, a 10 % shift found, and two draws of one
distribution called different at no more than the stated rate (many trials each, fixed seeds).
"""

from __future__ import annotations

import numpy as np
import pytest

from beff.render import compare
from beff.results import stats
from beff.results.model import OK, Measurement, RunRecord

ITERS = 100  # iterations per batch


def measurement(per_iter_s: np.ndarray, benchmark: str = "X",
                iters: np.ndarray | None = None) -> Measurement:
    """A Measurement of [size, rank, batch] per-iteration seconds, ITERS iterations a batch."""
    n_sizes, ranks, batches = per_iter_s.shape
    it = np.full(per_iter_s.shape, ITERS) if iters is None else iters
    samples = per_iter_s * it
    return Measurement(
        suite="mpi1", benchmark=benchmark, kind="collective", nprocs=ranks, ngroups=1,
        multi=None, idle=0, sizes=np.arange(n_sizes), repetitions=it.sum(axis=2)[:, 0],
        status=[OK] * n_sizes, times=samples.sum(axis=2) / it.sum(axis=2),
        group=np.zeros(ranks, dtype=np.int64), world_ranks=np.arange(ranks),
        samples=samples, batch_iters=it)


def timings(rng: np.random.Generator, shape: tuple[int, ...], mean: float = 1e-6,
            cv: float = 0.05) -> np.ndarray:
    """Right-skewed times like a timer's (gamma), with the given mean and spread."""
    k = 1 / cv**2
    return rng.gamma(k, mean / k, shape)


# ----------------------------------------------------------------------------- the interval
@pytest.mark.parametrize("nu", [1, 2, 3, 4, 5, 9, 10, 19, 30, 99])
def test_t_quantile_is_students(nu: int) -> None:
    from scipy import stats as sps  # here: scipy.stats costs each worker's collection 0.7 s

    for p in (0.9, 0.975, 0.995):
        assert stats.t_quantile(p, nu) == pytest.approx(sps.t.ppf(p, nu), rel=1e-9)


def test_interval_covers_the_true_t_avg_at_about_its_stated_rate() -> None:
    """400 runs of 10 batches on 2 ranks (a shared batch effect and each rank's own noise):
    the 95 % interval holds the true t_avg in 91.5-98 % of them. The plain percentile
    interval would cover only about 90 % at 10 batches and fail this."""
    rng = np.random.default_rng(7)
    trials, batches = 400, 10
    shared = timings(rng, (trials, 1, batches), 1e-6, 0.08)
    own = rng.normal(0, 0.02e-6, (trials, 2, batches))
    rank_offset = np.array([0.0, 0.1e-6])[None, :, None]  # rank 1 is slower throughout
    m = measurement(shared + own + rank_offset)
    sure = stats.certainty(m)
    true_us = (1e-6 + 0.05e-6) * 1e6
    covered = np.mean((sure.low <= true_us) & (true_us <= sure.high))
    assert 0.915 <= covered <= 0.98, covered
    assert np.all(sure.low < stats.summarize(m).t_avg) and np.all(stats.summarize(m).t_avg
                                                                    < sure.high)


def test_batches_are_resampled_jointly_across_ranks() -> None:
    """Rank 0 is slow exactly when rank 1 is fast, so every batch's t_avg is the same: the
    interval has no width. Resampling each rank on its own would give it one."""
    wobble = np.array([0.3, -0.2, 0.1, -0.4, 0.25, 0.0, -0.1, 0.35, -0.3, 0.2]) * 1e-6
    per_iter = np.stack([1e-6 + wobble, 1e-6 - wobble])[None]
    sure = stats.certainty(measurement(per_iter))
    assert sure.high[0] - sure.low[0] == pytest.approx(0, abs=1e-9)
    assert sure.low[0] == pytest.approx(1.0)


def test_the_interval_is_the_same_every_time_and_follows_uneven_batches() -> None:
    rng = np.random.default_rng(3)
    per_iter = timings(rng, (3, 2, 10))
    iters = np.tile(np.array([100, 100, 100, 100, 100, 99, 99, 99, 99, 99]), (3, 2, 1))
    iters[:, 1, :] = iters[:, 1, ::-1]  # ranks ran different batch lengths: the slow path
    m = measurement(per_iter, iters=iters)
    first, again = stats.certainty(m), stats.certainty(m)
    assert np.array_equal(first.low, again.low) and np.array_equal(first.high, again.high)
    t_avg = stats.summarize(m).t_avg
    assert np.all(first.low < t_avg) and np.all(t_avg < first.high)


def test_too_few_batches_give_no_interval_and_no_verdict() -> None:
    rng = np.random.default_rng(1)
    for batches in (1, 2):
        sure = stats.certainty(measurement(timings(rng, (2, 2, batches))))
        assert np.isnan(sure.low).all() and sure.stable == [None, None]
        assert list(sure.batches) == [batches, batches]
    assert np.isfinite(stats.certainty(measurement(timings(rng, (1, 2, 3)))).low).all()


def test_the_unmeasured_size_and_its_missing_batches() -> None:
    """A size that was not measured has no interval; batches a size did not run (fewer
    iterations than batches) are left out."""
    rng = np.random.default_rng(2)
    m = measurement(timings(rng, (2, 2, 10)))
    m.status = [OK, "time-out"]
    m.samples[0, :, 7:] = np.nan
    m.batch_iters[0, :, 7:] = 0
    sure = stats.certainty(m)
    assert list(sure.batches) == [7, 0] and np.isfinite(sure.low[0]) and np.isnan(sure.low[1])


# ----------------------------------------------------------------------------- stability
def test_stability_rule() -> None:
    quiet = np.full(10, 1.0)
    quiet[::2] = 1.02
    one_slow_batch = quiet.copy()
    one_slow_batch[4] = 2.0  # spread ~30 %
    mostly_slowed = np.full(10, 1.3)
    mostly_slowed[0] = 1.0  # spread 7.5 %, but the fastest is 23 % below the median
    per_iter = np.stack([quiet, one_slow_batch, mostly_slowed])[:, None, :] * 1e-6
    sure = stats.certainty(measurement(np.repeat(per_iter, 2, axis=1)))
    assert sure.stable == [True, False, False]
    assert sure.why[0] == "" and sure.why[1] == "spread 28% > 10%"
    assert sure.why[2] == "fastest batch 23% below the median"
    assert sure.cv[2] == pytest.approx(np.std(mostly_slowed, ddof=1) / mostly_slowed.mean())


# ----------------------------------------------------------------------------- two runs
def test_holm() -> None:
    adjusted = stats.holm(np.array([0.01, 0.04, np.nan, 0.03, 0.005]))
    assert adjusted[[0, 1, 3, 4]] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert np.isnan(adjusted[2])


def test_mann_whitney_is_exact_without_ties() -> None:
    """10 batches all faster than 10 others: p = 2 / C(20, 10) = 1.1e-5, which stays below
    0.05 after Holm's correction over 500 sizes (the normal approximation gives 1.8e-4, and
    0.09 after it)."""
    a, b = np.arange(10.0), np.arange(10.0) + 10.5
    assert stats.mann_whitney(a, b) == pytest.approx(2 / 184756)
    assert stats.mann_whitney(a, a) == pytest.approx(1.0)  # all tied: the approximation
    assert np.isnan(stats.mann_whitney(a[:2], b))


def run(per_iter: np.ndarray) -> RunRecord:
    return RunRecord(attrs={"suite": "mpi1"}, results=[measurement(per_iter)])


def trials(rng: np.random.Generator, n: int, sizes: int, shift: float, cv: float,
           ) -> list[list[compare.Row]]:
    """n comparisons of `sizes` sizes each, B = A's distribution times (1 + shift)."""
    out = []
    for _ in range(n):
        a = timings(rng, (sizes, 2, 10), 1e-6, cv)
        b = timings(rng, (sizes, 2, 10), 1e-6 * (1 + shift), cv)
        out.append(compare.compare_records(run(a), run(b)))
    return out


def test_a_ten_percent_shift_with_low_noise_is_found() -> None:
    """100 comparisons of 10 sizes, B 10 % slower (or faster), batch spread 3 %: the rows say
    so at least 95 % of the time, and never the opposite."""
    rng = np.random.default_rng(11)
    slower = [r for rows in trials(rng, 50, 10, 0.10, 0.03) for r in rows]
    faster = [r for rows in trials(rng, 50, 10, -0.10, 0.03) for r in rows]
    assert np.mean([r.verdict == compare.SLOWER for r in slower]) >= 0.95
    assert np.mean([r.verdict == compare.FASTER for r in faster]) >= 0.95
    assert not [r for r in slower if r.verdict == compare.FASTER]
    assert not [r for r in faster if r.verdict == compare.SLOWER]
    ratios = [(r.ratio_low, r.ratio_high) for r in slower]
    assert 0.9 <= np.mean([lo <= 1.1 <= hi for lo, hi in ratios]) <= 0.99


def test_two_draws_of_one_distribution_are_called_different_at_most_at_alpha() -> None:
    """200 comparisons of 10 sizes, A and B from one distribution: some row is called
    different in at most alpha = 5 % of the comparisons (plus 2 standard errors), thanks to
    Holm's correction; uncorrected, about 5 % of the rows would be, and 1 - 0.95^10 = 40 %
    of the comparisons."""
    rng = np.random.default_rng(5)
    runs = trials(rng, 200, 10, 0.0, 0.05)
    any_called = np.mean([any(r.verdict != compare.SAME for r in rows) for rows in runs])
    assert any_called <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 200), any_called
    raw = np.array([r.p for rows in runs for r in rows])
    assert 0.025 <= np.mean(raw <= 0.05) <= 0.075
    assert np.mean([min(r.p for r in rows) <= 0.05 for rows in runs]) > 0.2
    rows = [r for rows in runs for r in rows]
    assert 0.92 <= np.mean([r.ratio_low <= 1 <= r.ratio_high for r in rows]) <= 0.98


def test_the_verdict_follows_the_batches_not_one_slow_batch() -> None:
    """B's batches are all 5 % faster but one is 5 times slower: its mean is higher, yet the
    test sees a faster B; the row shows both, with B marked unstable."""
    a = np.linspace(1.0, 1.02, 10)
    b = a * 0.95
    b[3] = 5.0
    rows = compare.compare_records(run(np.tile(a * 1e-6, (1, 2, 1))),
                                   run(np.tile(b * 1e-6, (1, 2, 1))))
    assert rows[0].ratio > 1 and rows[0].verdict == compare.FASTER
    assert rows[0].b_stable is False and rows[0].a_stable is True


def test_a_run_against_itself_and_rows_without_batches() -> None:
    rng = np.random.default_rng(9)
    a = run(timings(rng, (4, 2, 10)))
    rows = compare.compare_records(a, a)
    assert [r.verdict for r in rows] == [compare.SAME] * 4
    assert all(r.p == 1.0 and r.ratio == 1.0 and r.ratio_low < 1 < r.ratio_high for r in rows)
    few = run(timings(rng, (4, 2, 2)))
    assert {r.verdict for r in compare.compare_records(few, few)} == {compare.UNTESTED}
