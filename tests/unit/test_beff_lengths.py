"""Lmax and the 21 message lengths of b_eff (spec §2, §3)."""

from __future__ import annotations

import pytest

from beff.patterns.lengths import (
    MIB,
    geometric_factor,
    lmax_from_memory,
    memory_mib,
    message_lengths,
)

POWERS = [1 << i for i in range(13)]


@pytest.mark.parametrize(
    ("mib", "lmax"),
    [(1, 8192), (16, 128 << 10), (64, 512 << 10), (128, 1 << 20), (1024, 8 << 20),
     (16383, 16383 * 8192), (16384, 128 << 20), (65536, 128 << 20)],
)
def test_lmax_is_one_128th_of_memory_capped_at_128_mib(mib: int, lmax: int) -> None:
    assert lmax_from_memory(mib * MIB) == lmax


def test_memory_is_taken_in_whole_mib_like_the_original() -> None:
    assert memory_mib(64 * MIB + MIB - 1) == 64
    assert lmax_from_memory(64 * MIB + 12345) == 512 << 10
    with pytest.raises(ValueError):
        lmax_from_memory(MIB - 1)


def test_lengths_for_64_mib_match_the_observed_list() -> None:
    # SECTION-HEAD of the reference .prot: msglng= ...
    assert message_lengths(lmax_from_memory(64 * MIB)) == POWERS + [
        7512, 13777, 25268, 46341, 84990, 155872, 285870, 524288]


def test_lengths_for_16_mib_match_the_spec() -> None:
    assert message_lengths(lmax_from_memory(16 * MIB))[12:] == [
        4096, 6317, 9742, 15024, 23170, 35734, 55109, 84990, 131072]


def test_128_mib_gives_pure_powers_of_two() -> None:
    assert geometric_factor(1 << 20) == 2.0
    assert message_lengths(1 << 20) == [1 << i for i in range(21)]


def test_geometric_factor_and_rounding_of_the_running_product() -> None:
    lmax = lmax_from_memory(64 * MIB)
    a = geometric_factor(lmax)
    assert a == pytest.approx(1.83401, abs=1e-5)
    lengths = message_lengths(lmax)
    assert len(lengths) == 21
    assert lengths[-1] == lmax
    x = 4096.0
    for i in range(13, 21):
        x *= a
        assert lengths[i] == int(x + 0.5)


def test_smallest_memory_still_gives_increasing_lengths() -> None:
    lengths = message_lengths(lmax_from_memory(MIB))
    assert lengths == sorted(set(lengths))
    assert lengths[-1] == 8192


def test_lmax_below_4096_is_rejected() -> None:
    with pytest.raises(ValueError):
        message_lengths(4095)
