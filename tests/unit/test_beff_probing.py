"""The drand48 stream and the linear-probing permutations of the random rings (spec §4.2)."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from beff.patterns.probing import (
    drand48_values,
    park,
    park_sequential,
    probe_hashes,
    probe_permutation,
    random_permutation,
    random_permutations,
    worst_cyclic_permutation,
)

A, C, MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1


def _plain_drand48(seed: int, count: int) -> list[float]:
    """POSIX drand48 written out: srand48 sets (seed mod 2^32) << 16 | 0x330E."""
    x = ((seed & 0xFFFFFFFF) << 16) | 0x330E
    out = []
    for _ in range(count):
        x = (A * x + C) & MASK
        out.append(x / 2.0**48)
    return out


def _original_loop(nprocs: int, count: int, draw: list[float]) -> list[list[int]]:
    """The C loop of b_eff 3.6, one draw per rank, probing to the next empty slot."""
    perms = []
    it = iter(draw)
    for _ in range(count):
        ranks = [-1] * nprocs
        for i in range(nprocs):
            j = int(next(it) * nprocs)
            while ranks[j] != -1:
                j = (j + 1) % nprocs
            ranks[j] = i
        perms.append(ranks)
    return perms


@pytest.mark.parametrize("seed", [0, 1, 1763775389, -5, 2**40 + 7])
def test_vectorized_stream_equals_plain_drand48(seed: int) -> None:
    plain = _plain_drand48(seed, 9000)
    assert drand48_values(seed, 0, 9000).tolist() == plain
    # Jump-ahead to any draw number.
    assert drand48_values(seed, 4321, 4000).tolist() == plain[4321:8321]
    assert drand48_values(seed, 8999, 1).tolist() == plain[8999:]


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    lib = ctypes.CDLL(name)
    if not hasattr(lib, "drand48"):
        return None
    lib.drand48.restype = ctypes.c_double
    lib.srand48.argtypes = [ctypes.c_long]
    return lib


def test_stream_equals_the_c_library_drand48() -> None:
    lib = _libc()
    if lib is None:
        pytest.skip("no C library with drand48")
    lib.srand48(1763775389)
    values = [lib.drand48() for _ in range(3000)]
    assert drand48_values(1763775389, 0, 3000).tolist() == values


def test_permutations_equal_the_original_loop_on_the_c_library() -> None:
    lib = _libc()
    if lib is None:
        pytest.skip("no C library with drand48")
    nprocs, count, seed = 97, 4, 1763775400
    lib.srand48(seed)
    draws = [lib.drand48() for _ in range(nprocs * count)]
    expected = _original_loop(nprocs, count, draws)
    assert random_permutations(nprocs, count, seed).tolist() == expected


@pytest.mark.parametrize("nprocs", [2, 3, 64, 65, 1000, 4099])
def test_permutations_equal_the_original_loop(nprocs: int) -> None:
    seed = 1700000000 + nprocs
    expected = _original_loop(nprocs, 3, _plain_drand48(seed, 3 * nprocs))
    got = random_permutations(nprocs, 3, seed)
    assert got.dtype == np.int32
    assert got.tolist() == expected


def _cases() -> list[tuple[np.ndarray, int]]:
    rng = np.random.default_rng(2024)
    cases: list[tuple[np.ndarray, int]] = []
    for trial in range(240):
        mode = trial % 6
        # Clustered starts cost quadratic work in any FCFS probing: keep those small.
        nslots = int(rng.integers(1, 300 if mode in (1, 3, 5) else 1200))
        ncars = int(rng.integers(0, nslots + 1)) if trial % 4 else nslots
        if mode == 0:
            h = rng.integers(0, nslots, ncars)
        elif mode == 1:
            h = np.full(ncars, nslots - 1)  # one start, wrapping around
        elif mode == 2:
            h = np.sort(rng.integers(0, nslots, ncars))[::-1].copy()
        elif mode == 3:
            h = (rng.integers(0, 5, ncars) + nslots - 3) % nslots
        elif mode == 4:
            h = np.sort(rng.integers(0, nslots, ncars))
        else:
            h = rng.integers(0, max(1, nslots // 50), ncars) * 50 % nslots
        cases.append((h, nslots))
    return cases


def test_vectorized_probing_equals_sequential_probing() -> None:
    for h, nslots in _cases():
        assert np.array_equal(park(h, nslots), park_sequential(h, nslots)), (h, nslots)


def test_vectorized_probing_on_a_large_table() -> None:
    h = probe_hashes(60_013, 5, 99)
    assert np.array_equal(park(h, h.size), park_sequential(h, h.size))


def test_every_random_pattern_is_a_permutation() -> None:
    perms = random_permutations(10_007, 30, 1234567)
    assert perms.shape == (30, 10_007)
    ranks = np.arange(10_007)
    for perm in perms:
        assert np.array_equal(np.sort(perm), ranks)
    assert len({p.tobytes() for p in perms}) == 30
    assert np.array_equal(perms[17], random_permutation(10_007, 17, 1234567))


def test_seeds_reproduce() -> None:
    a = random_permutations(500, 6, 42)
    assert np.array_equal(a, random_permutations(500, 6, 42))
    assert not np.array_equal(a, random_permutations(500, 6, 43))
    # Pattern k uses draws k*P+1 .. (k+1)*P: the first rows do not depend on the count.
    assert np.array_equal(a[:3], random_permutations(500, 3, 42))


def test_probing_is_not_fisher_yates_but_a_full_permutation() -> None:
    perm = probe_permutation([0, 0, 0, 0])
    assert perm.tolist() == [0, 1, 2, 3]
    assert probe_permutation([3, 3, 0, 1]).tolist() == [1, 2, 3, 0]


def test_worst_cyclic_permutation() -> None:
    assert worst_cyclic_permutation(5).tolist() == [0, 4, 1, 3, 2]
    assert worst_cyclic_permutation(6).tolist() == [0, 5, 1, 4, 2, 3]
    assert worst_cyclic_permutation(2).tolist() == [0, 1]


def test_too_many_cars_are_rejected() -> None:
    with pytest.raises(ValueError):
        park([0, 1, 2], 2)
    with pytest.raises(ValueError):
        park_sequential([0, 1, 2], 2)
