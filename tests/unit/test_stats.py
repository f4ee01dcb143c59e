"""IMB's time and bandwidth arithmetic on synthetic samples."""

import numpy as np
import pytest

from beff.results import stats
from beff.results.model import OK, Measurement


def make(times_us: list[list[float]], sizes: list[int], kind: str = "single_transfer",
         groups: list[int] | None = None, bw_scale: float = 1.0, rate: float = 0.0,
         multi: int | None = None) -> Measurement:
    t = np.asarray(times_us, dtype=float) * 1e-6
    S, R = t.shape
    g = np.asarray(groups if groups is not None else [0] * R)
    return Measurement(
        suite="mpi1", benchmark="X", kind=kind, nprocs=2, ngroups=int(g.max()) + 1, multi=multi,
        idle=0, sizes=np.asarray(sizes), repetitions=np.full(S, 10), status=[OK] * S, times=t,
        group=g, world_ranks=np.arange(R), samples=np.zeros((S, R, 1)),
        batch_iters=np.ones((S, R, 1), dtype=int), bw_scale=bw_scale, msgrate_factor=rate,
    )


def test_bandwidth_uses_t_max_and_decimal_megabytes() -> None:
    m = make([[1.0, 2.0]], [1_000_000])
    s = stats.summarize(m)
    assert s.t_min[0] == pytest.approx(1.0) and s.t_max[0] == pytest.approx(2.0)
    assert s.t_avg[0] == pytest.approx(1.5)
    # 10^6 bytes in 2 us = 5e11 B/s = 500000 MB/s (MB = 10^6 B).
    assert s.mbytes_per_sec[0] == pytest.approx(500000.0)


def test_exchange_counts_four_times_the_bytes() -> None:
    m = make([[4.0, 4.0]], [1000], kind="parallel_transfer", bw_scale=4.0)
    assert stats.summarize(m).mbytes_per_sec[0] == pytest.approx(4 * 1000 / 4e-6 / 1e6)


def test_message_rate_and_its_bandwidth() -> None:
    # Uniband at 2 processes, window 256: 256 * 1 messages per iteration.
    m = make([[100.0, 100.0]], [1024], kind="parallel_transfer_msg_rate", rate=256.0)
    s = stats.summarize(m)
    assert s.msg_per_sec[0] == pytest.approx(256 / 100e-6)
    assert s.mbytes_per_sec[0] == pytest.approx(256 / 100e-6 * 1024 / 1e6)


def test_groups_are_separate_and_pooled_over_all() -> None:
    m = make([[1.0, 2.0, 5.0, 6.0]], [8], groups=[0, 0, 1, 1], multi=1)
    assert stats.summarize(m, 0).t_max[0] == pytest.approx(2.0)
    assert stats.summarize(m, 1).t_min[0] == pytest.approx(5.0)
    pooled = stats.summarize(m)
    assert (pooled.t_min[0], pooled.t_max[0]) == pytest.approx((1.0, 6.0))


def test_unmeasured_sizes_are_nan_not_zero() -> None:
    m = make([[1.0, 1.0], [np.nan, np.nan]], [1, 2])
    s = stats.summarize(m)
    assert np.isnan(s.t_max[1]) and np.isnan(s.mbytes_per_sec[1])
    assert s.mbytes_per_sec[0] > 0


@pytest.mark.parametrize("shape", [(22, 2000), (1, 2000), (5, 7), (3, 1)])
@pytest.mark.parametrize("qs", [stats.expanded_levels(10), (0.0, 1.0), (0.5, 0.25, 0.75)])
def test_row_quantiles_are_numpys_to_the_last_bit(shape: tuple[int, int],
                                                  qs: tuple[float, ...]) -> None:
    x = np.random.default_rng(shape[1]).random(shape) * 1e-5
    assert np.array_equal(stats.row_quantiles(x, qs), np.quantile(x, qs, axis=1))
    x[0, 0] = np.nan
    assert np.array_equal(stats.row_quantiles(x, qs), np.quantile(x, qs, axis=1),
                          equal_nan=True)
