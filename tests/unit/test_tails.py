"""--per-iteration's tails (beff.results.stats.tails) on known iterations: a fake clock."""

from __future__ import annotations

import numpy as np

from beff.results.model import OK, Measurement
from beff.results.stats import tails


def measurement(iterations: np.ndarray) -> Measurement:
    S, R, _ = iterations.shape
    return Measurement(
        suite="mpi1", benchmark="Allreduce", kind="collective", nprocs=R, ngroups=1,
        multi=None, idle=0, sizes=np.arange(S, dtype=np.int64),
        repetitions=np.full(S, iterations.shape[2], dtype=np.int64), status=[OK] * S,
        times=np.ones((S, R)), group=np.zeros(R, dtype=np.int64),
        world_ranks=np.arange(R, dtype=np.int64), samples=np.ones((S, R, 1)),
        batch_iters=np.ones((S, R, 1), dtype=np.int64), iterations=iterations)


def base(n: int = 10_000, seed: int = 1) -> np.ndarray:
    """2 ranks, 1 size: 1 us iterations with 5 % noise."""
    rng = np.random.default_rng(seed)
    return 1e-6 * (1 + 0.05 * rng.random((1, 2, n)))


def test_each_iteration_counts_at_its_slowest_rank() -> None:
    it = np.array([[[1e-6, 5e-6, 1e-6], [2e-6, 1e-6, 3e-6]]])
    got = tails(measurement(it))
    assert got["max_us"][0] == 5.0
    assert got["p50_us"][0] == 3.0  # of 2, 5, 3 us


def test_one_slow_iteration_in_1000_moves_the_max_not_the_percentiles() -> None:
    quiet = tails(measurement(base()))
    it = base()
    it[0, 1, ::1000] = 10e-3  # 10 ms on one rank, one iteration in 1,000
    slow = tails(measurement(it))
    for key in ("p50_us", "p90_us", "p99_us"):  # 10 of 10,000 values gone from below
        assert abs(slow[key][0] - quiet[key][0]) < 1e-3
    assert slow["max_us"][0] == 10_000.0 and quiet["max_us"][0] < 1.06


def test_one_slow_iteration_in_50_moves_p99_not_p50() -> None:
    quiet = tails(measurement(base()))
    it = base()
    it[0, 0, ::50] = 10e-3  # 2 % of the iterations
    slow = tails(measurement(it))
    assert slow["p99_us"][0] == 10_000.0 and quiet["p99_us"][0] < 1.06
    assert abs(slow["p50_us"][0] - quiet["p50_us"][0]) < 0.01


def test_a_size_without_iterations_has_none() -> None:
    it = base(100)
    both = np.concatenate([it, np.full_like(it, np.nan)])
    got = tails(measurement(both))
    assert np.isfinite(got["p50_us"][0]) and np.isnan(got["p50_us"][1])
    m = measurement(it)
    m.iterations = None
    assert np.isnan(tails(m)["max_us"]).all()
