"""IMB-P2P's partners, neighbours, repetitions and options: pure functions, no MPI."""

from __future__ import annotations

import types

import numpy as np
import pytest

from beff.core import capi
from beff.core.errors import UsageError
from beff.imb.p2p import options, partners

MASK64 = (1 << 64) - 1


def imb_draws(seed: int, count: int) -> list[int]:
    """IMB-P2P's get_next_random (imb_p2p.h), with the full 64-bit state."""
    out, s = [], seed
    for _ in range(count):
        s = (s * 7560690468208412377 + 4343336064253945357) & MASK64
        out.append((s >> 24) & 0xFFFFFFFF)
    return out


@pytest.mark.parametrize("seed", [0, 1, 12345, (1 << 62) + 17])
def test_the_63_bit_state_draws_what_imbs_64_bit_generator_draws(seed: int) -> None:
    state, ours = seed, []
    for _ in range(2000):
        state, draw = partners.lcg_next(state)
        assert 0 <= state < 1 << 63
        ours.append(draw)
    assert ours == imb_draws(seed, 2000)
    assert imb_draws(0, 1) == [1184965489]


def test_random_pairs_follow_imbs_rule_and_the_seed() -> None:
    P, steps = 5, 400
    pairs = partners.random_pairs(P, steps, seed=0)
    draws = iter(imb_draws(0, 10 * steps))
    for rank0, rank1 in pairs:  # rank0 = draw mod P, rank1 drawn again until it differs
        assert rank0 == next(draws) % P
        r = next(draws) % P
        while r == rank0:
            r = next(draws) % P
        assert rank1 == r != rank0
    assert np.array_equal(pairs, partners.random_pairs(P, steps, seed=0))
    assert not np.array_equal(pairs, partners.random_pairs(P, steps, seed=1))
    assert set(np.unique(pairs)) == set(range(P))


def test_random_rings_are_permutations_and_neighbours_agree() -> None:
    for P in (2, 3, 4, 7):
        rings = partners.random_rings(P, 50, seed=3)
        for ring in rings:
            assert sorted(ring) == list(range(P))
            for rank in range(P):
                left, right = partners.ring_neighbours(ring, rank)
                assert partners.ring_neighbours(ring, right)[0] == rank
                assert partners.ring_neighbours(ring, left)[1] == rank
        assert len({tuple(r) for r in rings}) > 1 or P == 2
    first = partners.random_rings(4, 1, seed=0)[0]  # IMB's shuffle: swap ring[i], ring[j]
    ring, draws = list(range(4)), imb_draws(0, 4)
    for i in range(4):
        j = draws[i] % 4
        ring[i], ring[j] = ring[j], ring[i]
    assert list(first) == ring


def test_the_helpers_compiled_by_numba_draw_the_same() -> None:
    numba = pytest.importorskip("numba")
    ns = types.ModuleType("compiled")  # as beff.core.capi binds helpers for a timed loop
    for func in partners.HELPERS:
        setattr(ns, func.__name__, numba.njit(capi._rebind(func, ns)))
    pair, shuffle = ns.random_pair, ns.shuffle_ring
    state_py = state_jit = (1 << 62) + 5
    for _ in range(500):
        a, b = partners.random_pair(state_py, 6), pair(state_jit, 6)
        assert a == tuple(b)
        state_py, state_jit = a[0], b[0]
    ring_py, ring_jit = np.arange(5, dtype=np.int64), np.arange(5, dtype=np.int64)
    s1, s2 = 9, 9
    for _ in range(100):
        s1, s2 = partners.shuffle_ring(s1, ring_py), shuffle(s2, ring_jit)
        assert s1 == s2 and np.array_equal(ring_py, ring_jit)


def test_pairs_of_pingpong() -> None:
    assert [partners.pair_partner(r, 4) for r in range(4)] == [2, 3, 0, 1]
    assert [partners.pair_partner(r, 2) for r in range(2)] == [1, 0]


@pytest.mark.parametrize("P,dims", [(2, None), (3, None), (4, (2, 2)), (5, None), (6, (3, 2)),
                                    (8, (2, 4)), (9, (3, 3)), (12, (4, 3)), (16, (4, 4))])
def test_2d_decomposition_as_imb(P: int, dims: tuple[int, int] | None) -> None:
    assert partners.dims2d(P) == dims
    assert bool(partners.invalid("Stencil2D", P)) == (dims is None)


@pytest.mark.parametrize("P,dims", [(4, None), (6, None), (7, None), (8, (2, 2, 2)),
                                    (12, (2, 3, 2)), (16, (2, 2, 4)), (27, (3, 3, 3))])
def test_3d_decomposition_as_imb(P: int, dims: tuple[int, int, int] | None) -> None:
    assert partners.dims3d(P) == dims
    assert partners.decomposition("Stencil3D", P) == (" x ".join(map(str, dims)) if dims else "")


@pytest.mark.parametrize("P", [4, 6, 8, 9, 12])
def test_2d_neighbours_pair_up(P: int) -> None:
    dims = partners.dims2d(P)
    assert dims is not None
    nbrs = [partners.stencil2d_neighbours(r, dims) for r in range(P)]
    for r in range(P):  # my x-1 has me as its x+1, my y-1 has me as its y+1
        assert nbrs[nbrs[r][0]][1] == r and nbrs[nbrs[r][1]][0] == r
        assert nbrs[nbrs[r][2]][3] == r and nbrs[nbrs[r][3]][2] == r
    assert partners.stencil2d_neighbours(0, (2, 2)) == [1, 1, 2, 2]
    assert partners.stencil2d_neighbours(3, (3, 2)) == [2, 2, 1, 5]


@pytest.mark.parametrize("P", [8, 12, 27])
def test_3d_neighbours_pair_up(P: int) -> None:
    dims = partners.dims3d(P)
    assert dims is not None
    nbrs = [partners.stencil3d_neighbours(r, dims) for r in range(P)]
    for r in range(P):
        for d in (0, 2, 4):
            assert nbrs[nbrs[r][d]][d + 1] == r and nbrs[nbrs[r][d + 1]][d] == r
    assert partners.stencil3d_neighbours(0, (2, 2, 2)) == [1, 1, 2, 2, 4, 4]


def test_which_benchmarks_run_where() -> None:
    assert partners.invalid("PingPong", 3) and partners.invalid("PingPing", 1)
    assert not partners.invalid("PingPong", 4)
    assert not partners.invalid("Unirandom", 3) and partners.invalid("SendRecv_Replace", 1)


def test_repetitions_and_warm_up() -> None:
    num = 800 << 20
    assert partners.iterations(1, 100000, num) == (100000, 10000)
    assert partners.iterations(4 << 20, 100000, num) == (200, 20)
    assert partners.iterations(0, 100000, num) == (100000, 10000)
    assert partners.iterations(8 << 30, 100000, num) == (1, 0)  # at least 1, no warm-up
    assert partners.iterations(4, 1000, 10) == (3, 1)  # round(2.5) = 3 as C's round
    assert partners.iterations(1, 5, 1 << 20) == (5, 1)


def test_options_in_imb_p2p_syntax() -> None:
    assert options.check_iter("50", "-iter") == "50,800"
    assert options.check_iter("10,2", "-iter") == "10,2"
    assert options.parse_iter("10,2") == (10, 2)
    for bad in ("0", "-1", "1,2,3", "a", "5,0", ""):
        with pytest.raises(UsageError, match="-iter expects max"):
            options.check_iter(bad, "-iter")
    assert options.parse_msglog(options.check_msglog("3", "-msglog")) == [0, 1, 2, 4, 8]
    assert options.parse_msglog(options.check_msglog("2:4", "-msglog")) == [4, 8, 16]
    for bad in ("5:3", "-1", "x", "1:2:3", "35"):
        with pytest.raises(UsageError):
            options.check_msglog(bad, "-msglog")
    assert options.check_msgsz("4097,5k,2M", "-msgsz") == "4097,5120,2097152"
    with pytest.raises(UsageError):
        options.check_msgsz("5x", "-msgsz")
    assert options.check_switch("disable", "-msgrd") is False
    assert options.check_switch("YES", "-msgrd") is True
    with pytest.raises(UsageError):
        options.check_switch("maybe", "-msgrd")


def test_message_sizes(tmp_path: object) -> None:
    o = {o.key: o.default for o in options.OPTIONS}
    assert options.message_sizes(o, set()) == [0] + [1 << e for e in range(23)]
    assert options.message_sizes({**o, "msgsz": "3,5"}, {"msgsz"}) == [3, 5]
    assert options.message_sizes({**o, "msglog": "1:2", "msgsz": "3"},
                                 {"msglog", "msgsz"}) == [2, 4, 3]
    with pytest.raises(UsageError, match="cannot be combined"):
        options.message_sizes({**o, "msglen": "x"}, {"msglen", "msglog"})
