"""The b_eff patterns: ring sizing, random rings, information-only patterns (spec §4)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from beff.patterns.dims import balanced_dims, grid_dims
from beff.patterns.pattern import (
    CartComm,
    GroupComm,
    Step,
    build_patterns,
    medium_ring_sizes,
    ring_sizes,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "beff-3.6-reference"

# Spec §4.1, worked examples (P=4 was observed).
RING_EXAMPLES = {
    2: ["ring-1*2fix"] * 6,
    3: ["ring-1*3fix"] * 6,
    4: ["ring-2*2fix"] + ["ring-1*4fix"] * 5,
    5: ["ring-2*2&+1"] + ["ring-1*5fix"] * 5,
    8: ["ring-4*2fix", "ring-2*4fix"] + ["ring-1*8fix"] * 4,
    16: ["ring-8*2fix", "ring-4*4fix", "ring-2*8fix"] + ["ring-1*16fix"] * 3,
    64: ["ring-32*2fix", "ring-16*4fix", "ring-8*8fix", "ring-4*16fix", "ring-2*32fix",
         "ring-1*64fix"],
    100: ["ring-50*2fix", "ring-25*4fix", "ring-12*8&+1", "ring-4*25fix", "ring-2*50fix",
          "ring-1*100fix"],
}


@pytest.mark.parametrize("nprocs", sorted(RING_EXAMPLES))
def test_ring_labels_match_the_worked_examples(nprocs: int) -> None:
    ps = build_patterns(nprocs, seed=1)
    assert list(ps.labels[:6]) == RING_EXAMPLES[nprocs]
    assert all(p.kind == "ring" for p in ps.patterns[:6])


def test_ring_sizing_formula_details() -> None:
    assert medium_ring_sizes(100) == [2, 4, 8, 25, 50, 100]
    assert medium_ring_sizes(3) == [2, 3, 3, 3, 3, 3]
    # P=100, M=8: R = min(int(12.5 + 0.4), 50) = 12, lo = 8 (even) -> 8 rings of 8 first.
    r = ring_sizes(100, 8)
    assert (r.count, r.first_size, r.first_count, r.second_size, r.second_count) == (
        12, 8, 8, 9, 4)
    # Odd low size with larger rings present: the larger rings come first.
    r = ring_sizes(11, 4)
    assert (r.count, r.first_size, r.first_count, r.second_size, r.second_count) == (
        3, 4, 2, 3, 1)
    assert r.label == "ring-3*4&-1"
    r = ring_sizes(7, 2)
    assert (r.count, r.first_size, r.first_count, r.second_size, r.second_count) == (
        3, 2, 2, 3, 1)
    assert ring_sizes(5, 2).label == "ring-2*2&+1"


@pytest.mark.parametrize("nprocs", [2, 3, 4, 5, 6, 7, 8, 11, 16, 30, 64, 100, 129])
def test_rings_partition_all_ranks_into_bidirectional_blocks(nprocs: int) -> None:
    ps = build_patterns(nprocs, seed=1)
    for pattern in ps.patterns[:6]:
        sizes = ring_sizes(nprocs, medium_ring_sizes(nprocs)[pattern.index])
        assert sizes.first_size * sizes.first_count + sizes.second_size * sizes.second_count \
            == nprocs
        for rank in range(nprocs):
            steps = pattern.steps(rank)
            assert [s.tag for s in steps] == list(range(len(steps)))
            ping = steps[0]
            assert ping.dest is not None and ping.source is not None
            # The right neighbour's left neighbour is this rank.
            assert pattern.steps(ping.dest)[0].source == rank
            if len(steps) == 2:
                assert steps[1] == Step(ping.source, ping.dest, 1)
            else:
                assert ping.dest == ping.source  # ring of two: pong removed


def test_pattern_counts_match_the_spec_and_the_reference() -> None:
    assert len(build_patterns(2, seed=1)) == 46
    assert len(build_patterns(4, seed=1)) == 48
    assert len(build_patterns(2, 6, seed=1)) == 22  # SHORT
    assert max(len(build_patterns(p, seed=1)) for p in range(2, 200)) <= 52


def test_pattern_order_and_kinds() -> None:
    ps = build_patterns(16, seed=3)
    assert list(ps.ring_indices) == list(range(6))
    assert list(ps.random_indices) == list(range(6, 36))
    assert ps.kinds[:6] == ("ring",) * 6
    assert ps.kinds[6:36] == ("random",) * 30
    assert set(ps.kinds[36:]) == {"info"}
    assert ps.labels[36:40] == ("worst-cyc-1dim", "best  bi-section", "worst bi-section",
                                "one PingPong Pair")
    assert ps.pingpong_index == 39
    assert [p.index for p in ps] == list(range(len(ps)))
    assert ps[39].methods == (0,)
    assert all(p.methods == (0, 1, 2) for p in ps if p.index != 39)
    short = build_patterns(16, 6, seed=3)
    assert short.pingpong_index == 15
    assert list(short.random_indices) == list(range(6, 12))


def _reference_patterns(run: str) -> list[tuple[str, int, int, str, str, int]]:
    text = (DATA / run / "b_eff.short").read_text()
    block = text[text.index("SECTION-PATTERN-BEGIN"):text.index("SECTION-PATTERN-END")]
    rows = []
    for line in block.splitlines():
        if re.match(r"^ p\d\d ", line):
            label = line[5:22].rstrip()
            sr, msgs, per_node, per_call, unused = line[22:].split("(")[0].split()
            rows.append((label, int(sr), int(msgs), per_node, per_call, int(unused)))
    return rows


@pytest.mark.parametrize(("run", "nprocs"), [("np2-run1", 2), ("np2-run2", 2), ("np4", 4)])
def test_structure_matches_section_pattern_of_the_reference(run: str, nprocs: int) -> None:
    ps = build_patterns(nprocs, seed=0)
    rows = _reference_patterns(run)
    assert len(rows) == len(ps)
    for pattern, (label, sr, msgs, per_node, per_call, unused) in zip(ps, rows, strict=True):
        assert pattern.label == label
        assert pattern.sr_count(0) == sr
        assert pattern.all_msg_cnt == msgs
        assert f"{msgs / pattern.participate_cnt:.2f}" == per_node
        assert f"{msgs / (pattern.participate_cnt * sr):.2f}" == per_call
        assert nprocs - pattern.participate_cnt == unused


@pytest.mark.parametrize(("run", "nprocs"), [("np2-run1", 2), ("np4", 4)])
def test_grid_sizes_match_the_reference_header(run: str, nprocs: int) -> None:
    text = (DATA / run / "b_eff.prot").read_text()
    two = re.search(r"2-dim-patterns: size = (.*)", text)
    three = re.search(r"3-dim-patterns: size = (.*)", text)
    assert two and three
    ps = build_patterns(nprocs, seed=0)
    assert " * ".join(map(str, ps.dims2)) == two.group(1).strip()
    assert " * ".join(map(str, ps.dims3)) == three.group(1).strip()


def test_pong_removal_and_all_msg_cnt() -> None:
    two = build_patterns(2, seed=1)
    for p in list(two.patterns[:36]) + [two[36]]:
        assert p.sr_count(0) == 1 and p.all_msg_cnt == 2 and p.scale == 2.0
        assert p.steps(0) == [Step(1, 1, 0)] and p.steps(1) == [Step(0, 0, 0)]
    four = build_patterns(4, seed=1)
    assert (four[0].sr_count(0), four[0].all_msg_cnt) == (1, 4)
    assert (four[1].sr_count(0), four[1].all_msg_cnt) == (2, 8)
    assert all(p.scale == 4.0 for p in four.patterns[:37])
    # Non-periodic extent 2 keeps its pong; periodic extent 2 loses it.
    acyclic = four.labels.index("acyclic-2dim-all")
    assert four[acyclic].sr_count(0) == 4
    assert four[four.labels.index("cyclic-2dim-all")].sr_count(0) == 2


def test_p5_mixed_rings_use_rank_0_for_scaling() -> None:
    ring = build_patterns(5, seed=1)[0]
    assert ring.label == "ring-2*2&+1"
    assert [ring.sr_count(r) for r in range(5)] == [1, 1, 2, 2, 2]
    assert [ring.all_msg_cnt_at(r) for r in range(5)] == [5, 5, 10, 10, 10]
    assert ring.all_msg_cnt == 5
    assert ring.scale == 5.0
    assert ring.steps(0) == [Step(1, 1, 0)]
    assert ring.steps(2) == [Step(3, 4, 0), Step(4, 3, 1)]
    assert ring.steps(4) == [Step(2, 3, 0), Step(3, 2, 1)]


def test_bisection_and_pingpong_pairs() -> None:
    ps = build_patterns(7, seed=1)
    best, worst, pair = ps[37], ps[38], ps[39]
    assert best.steps(2) == [Step(3, None, 0), Step(None, 3, 1)]
    assert best.steps(3) == [Step(None, 2, 0), Step(2, None, 1)]
    assert worst.steps(1) == [Step(4, None, 0), Step(None, 4, 1)]
    assert worst.steps(4) == [Step(None, 1, 0), Step(1, None, 1)]
    # Odd P: the last rank idles (-1) but stays in the communicator.
    assert [best.participation(r) for r in range(7)] == [1] * 6 + [-1]
    assert best.steps(6) == [] and best.all_msg_cnt == 6 and best.participate_cnt == 6
    assert [pair.participation(r) for r in range(7)] == [1, 1] + [-1] * 5
    assert pair.steps(0) == [Step(1, None, 0), Step(None, 1, 1)]
    assert pair.steps(1) == [Step(None, 0, 0), Step(0, None, 1)]
    assert (pair.all_msg_cnt, pair.sr_count(0), pair.scale) == (2, 2, 1.0)
    assert isinstance(pair.comm, CartComm) and pair.comm.dims == (7,)


def test_cartesian_patterns_neighbours_and_participation() -> None:
    ps = build_patterns(13, seed=1)  # 13 is prime: grids of 12 = 4*3 and 3*2*2
    assert ps.dims2 == (4, 3) and ps.dims3 == (3, 2, 2)
    acyc = ps[ps.labels.index("acyclic-2dim-all")]
    assert acyc.comm == CartComm((4, 3), (False, False))
    assert acyc.dims == (4, 3) and acyc.periods == (False, False) and acyc.perm is None
    assert acyc.participation(None) == 0
    assert acyc.steps(None) == []
    with pytest.raises(ValueError):
        acyc.steps(12)
    # rank 4 = (1, 1): x neighbours 7 / 1, y neighbours 5 / 3.
    assert acyc.steps(4) == [Step(7, 1, 0), Step(1, 7, 1), Step(5, 3, 2), Step(3, 5, 3)]
    # rank 0 = (0, 0): borders are MPI_PROC_NULL.
    assert acyc.steps(0) == [Step(3, None, 0), Step(None, 3, 1), Step(1, None, 2),
                             Step(None, 1, 3)]
    assert acyc.all_msg_cnt == 2 * (3 * 3) + 2 * (2 * 4)
    cyc_y = ps[ps.labels.index("cyclic-2dim-y")]
    assert cyc_y.steps(2) == [Step(0, 1, 0), Step(1, 0, 1)]  # (0, 2): wraps to (0, 0)
    cyc3 = ps[ps.labels.index("cyclic-3dim-all")]
    # extents 3, 2, 2: the y and z pongs are removed (periodic extent 2).
    assert cyc3.sr_count(0) == 4
    assert cyc3.all_msg_cnt == 2 * 12 + 12 + 12
    assert cyc3.participate_cnt == 12
    labels = [lab for lab in ps.labels if "dim-" in lab and "cyc-1dim" not in lab]
    assert labels == ["acyclic-2dim-all", "acyclic-3dim-all", "cyclic-2dim-x",
                      "cyclic-2dim-y", "cyclic-2dim-all", "cyclic-3dim-x", "cyclic-3dim-y",
                      "cyclic-3dim-z", "cyclic-3dim-all"]


def test_balanced_dims_mirrors_mpi() -> None:
    # Values of MPI_Dims_create (MPICH 5.0.2), including its tie-break at 360.
    assert balanced_dims(12, 2) == [4, 3]
    assert balanced_dims(16, 3) == [4, 2, 2]
    assert balanced_dims(100, 3) == [5, 5, 4]
    assert balanced_dims(360, 3) == [10, 6, 6]
    assert balanced_dims(7, 2) == [7, 1]
    assert balanced_dims(1, 3) == [1, 1, 1]
    assert balanced_dims(10**6, 3) == [100, 100, 100]
    for n in range(1, 200):
        for nd in (2, 3):
            dims = balanced_dims(n, nd)
            assert int(np.prod(dims)) == n and dims == sorted(dims, reverse=True)


@pytest.mark.parametrize(
    ("nprocs", "two", "three"),
    [(2, [2, 1], [2, 1, 1]), (3, [3, 1], [3, 1, 1]), (4, [2, 2], [2, 2, 1]),
     (5, [2, 2], [2, 2, 1]), (7, [3, 2], [3, 2, 1]), (9, [3, 3], [2, 2, 2]),
     (17, [4, 4], [4, 2, 2]), (10**6, [1000, 1000], [100, 100, 100])],
)
def test_grid_size_rule(nprocs: int, two: list[int], three: list[int]) -> None:
    assert grid_dims(nprocs, 2) == two
    assert grid_dims(nprocs, 3) == three


def test_dims_create_can_be_injected() -> None:
    calls: list[tuple[int, int]] = []

    def fake(n: int, nd: int) -> list[int]:
        calls.append((n, nd))
        return balanced_dims(n, nd)

    ps = build_patterns(11, seed=1, dims_create=fake)
    assert (11, 2) in calls and (10, 2) in calls and ps.dims2 == (5, 2)


def test_random_patterns_are_rings_over_permutations() -> None:
    ps = build_patterns(50, seed=12345)
    perms = [p.perm for p in ps.patterns[6:36]]
    for perm in perms:
        assert perm is not None
        assert sorted(perm.tolist()) == list(range(50))
        assert not perm.flags.writeable
    assert len({perm.tobytes() for perm in perms if perm is not None}) == 30
    random0 = ps[6]
    assert random0.steps(0) == [Step(1, 49, 0), Step(49, 1, 1)]
    assert random0.steps(49) == [Step(0, 48, 0), Step(48, 0, 1)]
    assert random0.all_msg_cnt == 100 and random0.dims is None and random0.periods is None
    worst = ps[36]
    assert worst.perm is not None and worst.perm[:6].tolist() == [0, 49, 1, 48, 2, 47]


def test_same_seed_same_patterns_other_seed_other_patterns() -> None:
    a = build_patterns(64, seed=1700000000)
    b = build_patterns(64, seed=1700000000)
    c = build_patterns(64, seed=1700000001)
    for k in a.random_indices:
        pa, pb, pc = a[k].perm, b[k].perm, c[k].perm
        assert pa is not None and pb is not None and pc is not None
        assert np.array_equal(pa, pb)
        assert not np.array_equal(pa, pc)


def test_random_permutations_are_lazy() -> None:
    ps = build_patterns(1000, seed=7)
    comm = ps[6].comm
    assert isinstance(comm, GroupComm) and not comm.is_computed
    ps.materialize()
    assert comm.is_computed


def test_a_million_ranks_without_dense_tables() -> None:
    ps = build_patterns(10**6, seed=42)
    assert len(ps) == 49
    assert ps.dims2 == (1000, 1000) and ps.dims3 == (100, 100, 100)
    assert ps.labels[:6] == ("ring-500000*2fix", "ring-250000*4fix", "ring-125000*8fix",
                             "ring-4*250000fix", "ring-2*500000fix", "ring-1*1000000fix")
    assert ps[5].steps(999_999) == [Step(0, 999_998, 0), Step(999_998, 0, 1)]
    cyc3 = ps[ps.labels.index("cyclic-3dim-all")]
    assert cyc3.steps(0)[:2] == [Step(10_000, 990_000, 0), Step(990_000, 10_000, 1)]
    assert not any(isinstance(p.comm, GroupComm) and p.comm.is_computed for p in ps)


def test_rejects_a_single_process() -> None:
    with pytest.raises(ValueError):
        build_patterns(1, seed=0)
