"""Reductions to b_eff on synthetic data (spec §9)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from beff.patterns.pattern import build_patterns
from beff.patterns.reduce import (
    LOGAVG_ERROR,
    final_line,
    info_paths,
    logavg,
    mode_tag,
    pattern_bandwidth,
    reduce_beff,
    step_latency_us,
)

LENGTHS = [1, 2, 4, 8]
KINDS = ["ring", "ring", "random", "random", "random", "info"]


def _b(fill: float = 1e6) -> np.ndarray:
    return np.full((3, len(LENGTHS), len(KINDS), 3), fill)


def test_logavg() -> None:
    assert logavg([4.0, 9.0]) == pytest.approx(6.0)
    assert logavg([2.0]) == pytest.approx(2.0)
    assert logavg(np.array([[1.0, 10.0], [100.0, 1000.0]])) == pytest.approx(10 ** 1.5)
    for bad in ([1.0, 0.0], [1.0, -2.0], [math.nan, 1.0], []):
        with pytest.raises(ValueError):
            logavg(bad)


def test_constant_bandwidth_gives_that_bandwidth() -> None:
    r = reduce_beff(_b(5e8), nprocs=4, kinds=KINDS, lengths=LENGTHS, pingpong_index=5)
    assert r.b_eff == pytest.approx(5e8)
    assert r.b_eff_per_process == pytest.approx(1.25e8)
    assert r.b_ring == pytest.approx(5e8) and r.b_random == pytest.approx(5e8)
    assert r.latency_us == pytest.approx(4 / 5e8 * 1e6)
    assert r.latency_ring_us == pytest.approx(4 / 5e8 * 1e6)
    assert r.latency_ring_text_us == pytest.approx(1 / 5e8 * 1e6)
    assert r.pingpong_latency_us == pytest.approx(1e6 / 5e8)
    assert r.pingpong_bandwidth == pytest.approx(5e8)
    assert r.warnings == ()


def test_max_over_reps_and_methods_mean_over_lengths_gm_over_patterns() -> None:
    b = _b(0.0)
    # ring 0: best values 1, 2, 3, 6 over the lengths, hidden in different reps/methods.
    for i, (rep, m, v) in enumerate([(0, 2, 1.0), (1, 0, 2.0), (2, 1, 3.0), (0, 0, 6.0)]):
        b[rep, i, 0, m] = v
        b[(rep + 1) % 3, i, 0, (m + 1) % 3] = v / 2
    b[:, :, 1, :] = 3.0  # ring 1
    b[:, :, 2, :] = 2.0
    b[:, :, 3, :] = 4.0
    b[:, :, 4, :] = 8.0
    b[:, :, 5, :] = 1e9  # information only: ignored
    r = reduce_beff(b, nprocs=2, kinds=KINDS, lengths=LENGTHS)
    assert r.b_pattern.tolist()[:5] == [3.0, 3.0, 2.0, 4.0, 8.0]
    assert r.b_pattern_length[:, 0].tolist() == [1.0, 2.0, 3.0, 6.0]
    assert r.b_ring == pytest.approx(3.0)
    assert r.b_random == pytest.approx(4.0)
    assert r.b_eff == pytest.approx(math.sqrt(12.0))
    assert r.ring_length.tolist() == pytest.approx([math.sqrt(3), math.sqrt(6), 3.0,
                                                    math.sqrt(18)])
    assert r.random_length.tolist() == pytest.approx([4.0] * 4)
    assert r.b_eff_lmax == pytest.approx(math.sqrt(math.sqrt(18) * 4))
    assert r.ring_lmax == pytest.approx(math.sqrt(18))
    assert r.latency_us == pytest.approx(1e6 * 2 / math.sqrt(math.sqrt(3) * 4))
    assert r.pingpong_latency_us == 0.0 and r.pingpong_bandwidth == 0.0


def test_pingpong_uses_method_0_only() -> None:
    b = _b(1e6)
    b[:, :, 5, 0] = 0.0
    b[1, 0, 5, 0] = 2e5
    b[2, -1, 5, 0] = 3e9
    b[:, :, 5, 1:] = 9e9
    r = reduce_beff(b, nprocs=4, kinds=KINDS, lengths=LENGTHS, pingpong_index=5)
    assert r.pingpong_latency_us == pytest.approx(5.0)
    assert r.pingpong_bandwidth == pytest.approx(3e9)


def test_failed_logavg_is_flagged_with_the_original_value() -> None:
    b = _b(1e6)
    b[:, :, 1, :] = 0.0  # a ring pattern never measured
    r = reduce_beff(b, nprocs=2, kinds=KINDS, lengths=LENGTHS)
    assert r.b_ring == LOGAVG_ERROR
    assert r.b_random == pytest.approx(1e6)
    assert r.b_eff == pytest.approx(math.sqrt(LOGAVG_ERROR * 1e6))  # as the original
    assert r.warnings and "999999999" in r.warnings[0]


def test_nan_counts_as_not_measured() -> None:
    b = _b(1e6)
    b[0, :, :, 1] = np.nan
    b[1, :, :, 2] = 2e6
    r = reduce_beff(b, nprocs=2, kinds=KINDS, lengths=LENGTHS)
    assert r.b_eff == pytest.approx(2e6)


def test_shape_checks() -> None:
    with pytest.raises(ValueError):
        reduce_beff(np.ones((3, 4, 6)), nprocs=2, kinds=KINDS, lengths=LENGTHS)
    with pytest.raises(ValueError):
        reduce_beff(_b(), nprocs=2, kinds=KINDS[:-1], lengths=LENGTHS)
    with pytest.raises(ValueError):
        reduce_beff(_b(), nprocs=2, kinds=KINDS, lengths=LENGTHS[:-1])
    with pytest.raises(ValueError):
        reduce_beff(_b(), nprocs=2, kinds=["info"] * 6, lengths=LENGTHS)


def test_pattern_bandwidth_applies_rank_0_scales() -> None:
    ps = build_patterns(4, seed=0)
    minbw = np.ones((3, 21, len(ps), 3))
    b = pattern_bandwidth(minbw, ps.scales())
    assert b[0, 0, :37, 0].tolist() == [4.0] * 37  # rings and random: P
    assert b[2, 20, 37, 1] == 2.0  # bi-section: 4 messages / 2 steps
    assert b[1, 3, 39, 2] == 1.0  # ping-pong pair: 2 / 2


def test_info_paths() -> None:
    b = _b(1.0)
    b[:, :, :, 1] = 2.0
    b[2, :, :, 2] = 5.0
    b[0, 0, :, 0] = 20.0
    paths = info_paths(b, kinds=KINDS)
    assert paths.by_method.shape == (6, 4)
    # avg_L(max_rep b) per method: method 0 has 20 at one of 4 lengths.
    assert paths.by_method[0].tolist() == pytest.approx([23 / 4, 2.0, 5.0, 5.75])
    assert paths.by_method_means.ring.tolist() == pytest.approx([23 / 4, 2.0, 5.0, 5.75])
    assert paths.by_repetition.shape == (6, 4)
    assert paths.by_repetition[0].tolist() == pytest.approx([(20 + 6) / 4, 2.0, 5.0, 6.5])
    assert paths.by_method_length.shape == (5, 6, 3)
    assert paths.by_method_length[0, 0].tolist() == [20.0, 2.0, 5.0]
    assert paths.by_method_length[4, 0].tolist() == pytest.approx([23 / 4, 2.0, 5.0])
    assert paths.by_method_length_means.final.shape == (5, 3)
    assert paths.warnings == ()


def test_step_latency() -> None:
    assert step_latency_us(1e6, 2.0) == pytest.approx(2.0)
    assert math.isnan(step_latency_us(0.0, 2.0))


def test_final_line_matches_the_original_format() -> None:
    uname = ("Linux", "vm", "6.18.44-fc-v669", "#1 SMP PREEMPT_DYNAMIC @0", "x86_64")
    assert final_line(1716.621e6, 2, 64, uname) == (
        "b_eff =   1716.621 MB/s = 858.311 *   2 PEs with  64 MB/PE on "
        "Linux vm 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0 x86_64")
    line = final_line(65.99180e6, 4, 64, uname, tag=mode_tag(short=True))
    assert line.startswith("b_effSHORT =     65.992 MB/s =  16.498 *   4 PEs with  64 MB/PE")
    assert mode_tag() == "" and mode_tag(test=True) == "TEST"
    assert mode_tag(short=True, test=True) == "SHORT&TEST"
