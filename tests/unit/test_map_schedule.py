"""``beff map``'s schedule as pure functions: the mapped ranks, the shifts (all, or K drawn
from a stored seed in O(K)), each rank's partners, and the samples a budget allows."""

from __future__ import annotations

import math
import tracemalloc

import pytest

from beff.netmap import schedule
from beff.netmap.schedule import MIN_REPETITIONS, Stream, choose_shifts, partners


def test_splitmix64_is_the_published_generator() -> None:
    # SplitMix64 from seed 0: the first outputs of the reference implementation
    s = Stream(0)
    assert [s.next64() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                              0x06C45D188009454F]


def test_below_is_uniform_and_in_range() -> None:
    s = Stream(7)
    counts = [0] * 6
    for _ in range(6000):
        counts[s.below(6)] += 1
    assert all(900 < c < 1100 for c in counts), counts
    with pytest.raises(ValueError):
        s.below(0)


def test_all_shifts_in_order_when_k_is_zero_or_large() -> None:
    assert list(choose_shifts(5, 0, 1)) == [1, 2, 3, 4]
    assert list(choose_shifts(5, 4, 1)) == [1, 2, 3, 4]
    assert list(choose_shifts(5, 99, 1)) == [1, 2, 3, 4]
    assert list(choose_shifts(2, 0, 1)) == [1]
    assert list(choose_shifts(1, 0, 1)) == []
    assert isinstance(choose_shifts(10**6, 0, 1), range)  # all shifts: no list of P ints


def test_k_shifts_are_distinct_sorted_in_range_and_fixed_by_the_seed() -> None:
    a = choose_shifts(1000, 10, 42)
    assert len(a) == len(set(a)) == 10 and a == sorted(a)
    assert all(1 <= k <= 999 for k in a)
    assert choose_shifts(1000, 10, 42) == a  # the stored seed reproduces them
    assert choose_shifts(1000, 10, 43) != a


def test_a_stored_seed_gives_the_same_shifts_for_good() -> None:
    # pinned: a change of the generator or of Floyd's algorithm would change stored maps
    assert choose_shifts(1000, 5, 1) == [302, 406, 535, 572, 634]


def test_every_shift_is_equally_likely() -> None:
    hits = [0] * 10
    for seed in range(3000):
        for k in choose_shifts(11, 3, seed):
            hits[k - 1] += 1
    assert all(800 < h < 1000 for h in hits), hits  # 3000 * 3 / 10 = 900 each


def test_partners_form_the_shift_pattern() -> None:
    P = 7
    for k in range(1, P):
        dests = [partners(r, P, k)[0] for r in range(P)]
        srcs = [partners(r, P, k)[1] for r in range(P)]
        assert sorted(dests) == sorted(srcs) == list(range(P))  # a permutation
        for r in range(P):
            d, s = partners(r, P, k)
            assert partners(d, P, k)[1] == r and partners(s, P, k)[0] == r
            assert d != r
    # after all P - 1 shifts every rank has sent to every other
    assert {partners(0, P, k)[0] for k in range(1, P)} == set(range(1, P))


def test_mapped_ranks_follow_the_placement() -> None:
    local = [0, 1, 2, 0, 1, 0]  # nodes of 3, 2 and 1 ranks
    assert schedule.mapped_ranks(local, 1, False) == [0, 3, 5]
    assert schedule.mapped_ranks(local, 2, False) == [0, 1, 3, 4, 5]
    assert schedule.mapped_ranks(local, 1, True) == [0, 1, 2, 3, 4, 5]


def test_repetitions_fill_the_budget_between_three_and_the_most() -> None:
    assert schedule.repetitions(10.0, 10, 0.01, 20) == (20, False)  # 100 fit; capped
    assert schedule.repetitions(10.0, 10, 0.1, 20) == (10, False)
    assert schedule.repetitions(10.0, 100, 0.1, 20) == (MIN_REPETITIONS, True)  # 1 fits
    assert schedule.repetitions(10.0, 10, 0.0, 20) == (20, False)
    assert schedule.repetitions(10.0, 0, 0.1, 20) == (MIN_REPETITIONS, False)


def test_shift_count_and_what_rank_0_holds() -> None:
    assert schedule.shift_count(5, 0) == 4 and schedule.shift_count(5, 2) == 2
    assert schedule.shift_count(5, 9) == 4 and schedule.shift_count(1, 0) == 0
    assert all(schedule.shift_count(P, k) == len(choose_shifts(P, k, 3))
               for P in (1, 2, 7) for k in (0, 1, 3, 9))
    # 10^4 nodes, every shift, 6 samples: 14.4 GB; 100 shifts: 144 MB
    assert schedule.record_bytes(10**4, 10**4 - 1, 6) == 3 * 8 * (10**4 - 1) * 10**4 * 6
    assert schedule.record_bytes(10**4, 100, 6) == 144_000_000


def test_the_documented_cost_at_ten_thousand_nodes() -> None:
    """share/docs/map.md's table: 100 Gb/s, 2 us, default sizes, 5 samples."""
    full = schedule.estimate(10**4, 10**4 - 1, 5, 1 << 20, 8, 20, 12.5e9, 2e-6)
    assert round(full.sample_s * 1e3, 2) == 0.86 and round(full.total_s) == 43
    assert round(schedule.estimate(10**4, 100, 5, 1 << 20, 8, 20, 12.5e9, 2e-6).total_s,
                 1) == 0.4
    assert round(schedule.estimate(10**6, 10, 5, 1 << 20, 8, 20, 12.5e9, 2e-6).total_s,
                 2) == 0.05


def test_cost_grows_with_shifts_and_pairs() -> None:
    """The cost model's arithmetic (estimates from given bandwidth and latency; nothing is
    timed here)."""
    small = schedule.estimate(100, 99, 5, 1 << 20, 8, 20, 10e9, 2e-6)
    big = schedule.estimate(10**4, 10**4 - 1, 5, 1 << 20, 8, 20, 10e9, 2e-6)
    assert big.pairs == 10**4 * (10**4 - 1)
    assert big.total_s > 100 * small.total_s
    assert math.isclose(big.total_s, big.shift_s * (10**4 - 1))


@pytest.mark.parametrize("P", [10**4, 10**6])
def test_a_rank_builds_its_schedule_in_o_of_p_memory(P: int) -> None:
    """Choosing 100 shifts and a rank's partners never builds anything P x P: the memory is
    that of the ranks table a rank holds anyway (O(P)), well under P x P bytes."""
    local = [0] * P
    tracemalloc.start()
    mapped = schedule.mapped_ranks(local, 1, False)
    shifts = choose_shifts(len(mapped), 100, 1)
    dests = [partners(P - 1, len(mapped), k) for k in shifts]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(shifts) == 100 and len(dests) == 100
    assert peak < 64 * P  # a list of P ints and change; P x P would be P * P * 8 bytes


def test_k_shifts_take_o_of_k_whatever_p() -> None:
    """10^12 ranks: anything O(P) would not fit in memory (nor end within the test's
    time-out); K = 1000 shifts take well under a MiB."""
    tracemalloc.start()
    shifts = choose_shifts(10**12, 1000, 3)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(shifts) == 1000 and max(shifts) < 10**12
    assert peak < 1 << 20
