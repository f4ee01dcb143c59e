"""``beff map``'s outlier rule as a pure function: slow nodes (a whole row or column) and
slow links (one entry) are named, and healthy noise is not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from beff.netmap.outliers import (
    ACROSS,
    BANDWIDTH,
    LATENCY,
    SPREAD,
    WITHIN,
    Rule,
    analyze,
    consequence,
    far_below,
    figures_judged,
    placement_note,
)
from beff.netmap.schedule import choose_shifts

GOOD = 1e9  # B/s


def all_pairs(P: int, shifts: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    shifts = list(range(1, P)) if shifts is None else shifts
    s = np.array([r for _ in shifts for r in range(P)])
    d = np.array([(r + k) % P for k in shifts for r in range(P)])
    return s, d


def noisy(n: int, seed: int = 0, spread: float = 0.15) -> np.ndarray:
    return GOOD * np.exp(np.random.default_rng(seed).normal(0.0, spread, n))


def named(found: list, kind: str) -> list[tuple[int, ...]]:  # type: ignore[type-arg]
    return [(f.rank,) if kind == "node" else (f.rank, f.peer) for f in found if f.kind == kind]


def test_spread_makes_the_better_half_mad_a_standard_deviation() -> None:
    x = np.random.default_rng(1).normal(size=400_000)
    top = x[x >= np.median(x)]
    assert math.isclose(SPREAD * np.median(np.abs(top - np.median(top))), 1.0, rel_tol=0.02)


def test_far_below_needs_both_the_ratio_and_the_deviations() -> None:
    tight = np.log(np.array([100.0, 101, 99, 100, 102, 98, 100, 101, 99, 100, 60]))
    mask, ref, cut = far_below(tight, Rule(threshold=4, min_ratio=2))
    assert not mask.any()  # 60 is many deviations away, but not 2x below
    assert math.isclose(math.exp(ref), 100.0)  # the median of the better half
    mask, _, _ = far_below(tight, Rule(threshold=4, min_ratio=1.5))
    assert list(np.flatnonzero(mask)) == [10]
    # a wide spread: 3x below is within the noise, 40x is not
    wide = np.log(np.array([100.0, 300, 30, 120, 40, 200, 80, 150, 60, 250, 2.5]))
    mask, _, _ = far_below(wide, Rule(threshold=4, min_ratio=2))
    assert list(np.flatnonzero(mask)) == [10]


def test_with_few_values_the_ratio_alone_decides() -> None:
    """Two or three values in the better half say nothing of the spread (SPREAD_MIN)."""
    few = np.log(np.array([350.0, 2200, 14, 1.1]))  # two healthy nodes far apart
    mask, ref, _ = far_below(few, Rule(threshold=4, min_ratio=15))
    assert list(mask) == [False, False, True, True]
    assert math.isclose(math.exp(ref), math.sqrt(350 * 2200))


def test_far_below_names_nothing_from_fewer_than_two_values() -> None:
    assert not far_below(np.array([1.0]), Rule())[0].any()
    assert not far_below(np.array([np.nan, np.nan, 0.0]), Rule())[0].any()


@pytest.mark.parametrize("seed", range(5))
def test_healthy_noise_names_nothing(seed: int) -> None:
    s, d = all_pairs(16)
    assert analyze(s, d, noisy(len(s), seed), 16, BANDWIDTH, Rule()) == []
    lat = 2e-6 * np.exp(np.random.default_rng(seed + 9).normal(0.0, 0.15, len(s)))
    assert analyze(s, d, lat, 16, LATENCY, Rule()) == []


def test_a_slow_sender_is_a_node_with_its_row_low() -> None:
    s, d = all_pairs(8)
    bw = noisy(len(s))
    bw[s == 5] /= 10  # node 5's egress throttled
    found = analyze(s, d, bw, 8, BANDWIDTH, Rule())
    assert [(f.kind, f.rank, f.side) for f in found] == [("node", 5, "send")]
    f = found[0]
    assert 8 < f.ratio < 13 and f.value < f.reference / 8 and f.scope == ACROSS


def test_a_slow_receiver_is_a_node_with_its_column_low() -> None:
    s, d = all_pairs(8)
    bw = noisy(len(s), 2)
    bw[d == 2] /= 5
    assert [(f.rank, f.side) for f in analyze(s, d, bw, 8, BANDWIDTH, Rule())] == \
        [(2, "receive")]


def test_two_of_four_nodes_slow_both_ways_are_both_named() -> None:
    """Half of the nodes slow: the median of all figures lies among the slow ones, the
    better half's does not."""
    s, d = all_pairs(4)
    lat = 15e-6 * np.exp(np.random.default_rng(3).normal(0.0, 0.1, len(s)))
    slow = np.isin(s, [1, 3]) | np.isin(d, [1, 3])
    lat[slow] += 1e-3  # hostB and hostD delayed
    found = analyze(s, d, lat, 4, LATENCY, Rule())
    assert [(f.kind, f.rank, f.side) for f in found] == [("node", 1, "both"),
                                                           ("node", 3, "both")]
    assert all(f.ratio > 20 for f in found)


def test_one_slow_link_is_a_link_and_no_node() -> None:
    s, d = all_pairs(6)
    bw = noisy(len(s), 4)
    bw[(s == 1) & (d == 4)] /= 6
    found = analyze(s, d, bw, 6, BANDWIDTH, Rule())
    assert named(found, "node") == [] and named(found, "link") == [(1, 4)]
    assert 4 < found[0].ratio < 8


def test_links_of_a_named_node_are_not_named_again() -> None:
    s, d = all_pairs(6)
    bw = noisy(len(s), 5)
    bw[s == 3] /= 10
    bw[(s == 3) & (d == 0)] /= 3  # even slower, but the node explains it
    found = analyze(s, d, bw, 6, BANDWIDTH, Rule())
    assert named(found, "node") == [(3,)] and named(found, "link") == []


def test_a_slow_node_is_named_from_few_random_shifts() -> None:
    P = 200
    s, d = all_pairs(P, choose_shifts(P, 4, 11))
    bw = noisy(len(s), 6)
    bw[(s == 17) | (d == 17)] /= 8
    found = analyze(s, d, bw, P, BANDWIDTH, Rule())
    assert [(f.kind, f.rank, f.side) for f in found] == [("node", 17, "both")]


def test_two_ranks_cannot_tell_the_sender_from_the_receiver() -> None:
    """With one partner each, a slow direction is its sender's whole row and its receiver's
    whole column: both are named (share/docs/map.md: three ranks at least to tell)."""
    found = analyze(np.array([0, 1]), np.array([1, 0]), np.array([GOOD, GOOD / 4]), 2,
                    BANDWIDTH, Rule())
    assert [(f.kind, f.rank, f.side) for f in found] == [("node", 0, "receive"),
                                                           ("node", 1, "send")]


def test_unmeasured_pairs_are_ignored_and_the_scope_is_kept() -> None:
    s, d = all_pairs(5)
    bw = noisy(len(s), 7)
    bw[::3] = np.nan
    bw[s == 2] /= 10
    found = analyze(s, d, bw, 5, BANDWIDTH, Rule(), WITHIN)
    assert [(f.rank, f.scope) for f in found] == [(2, WITHIN)]


def test_the_rule_says_what_it_does() -> None:
    text = Rule(3.5, 2.5).describe()
    assert "2.5x worse" in text and "3.5 robust deviations" in text and "better half" in text
    assert "per pair: the median of its samples, as in the matrices" in text


@pytest.mark.parametrize("nodes, oversubscribed, words", [
    (4, False, ()),
    (1, False, ("one node", "shares that node's memory")),
    (4, True, ("oversubscribed", "share cores")),
    (1, True, ("one node", "oversubscribed")),
])
def test_one_node_or_shared_cores_judge_no_link(nodes: int, oversubscribed: bool,
                                                words: tuple[str, ...]) -> None:
    note = placement_note(nodes, oversubscribed)
    assert bool(note) == bool(words)
    assert all(w in note for w in words)
    if note:
        assert note.startswith("pair figures here do not judge links: ")


@pytest.mark.parametrize("choice, shared, figures", [
    ("auto", False, "both"), ("auto", True, "none"),  # auto: nothing where links are not judged
    ("both", True, "both"), ("latency", True, "latency"),  # asked for: named anyway
    ("bandwidth", False, "bandwidth"), ("none", False, "none"),
])
def test_auto_names_no_outlier_where_links_are_not_judged(choice: str, shared: bool,
                                                          figures: str) -> None:
    note = placement_note(1, False) if shared else ""
    assert figures_judged(choice, note) == figures


def test_the_consequence_says_what_is_named() -> None:
    note = placement_note(1, True)
    assert consequence(note, "none") == f"{note}; no outliers are named (--outliers both " \
        "names them anyway)"
    assert consequence(note, "both").endswith("the outliers named (by bandwidth and latency) "
                                              "tell that, not slow links")
