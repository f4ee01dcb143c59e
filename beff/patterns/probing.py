"""Random ring permutations by linear probing, drawn from a drand48 stream (spec §4.2).

b_eff seeds ``srand48`` with ``time(NULL)`` on rank 0 and, for each of the random patterns
in turn, draws one ``j = floor(drand48() * P)`` per world rank ``i = 0..P-1`` and puts
``perm[j] = i`` into the first free slot at or after j (cyclically).  This module rebuilds
the same stream (the 48-bit LCG of POSIX drand48, with jump-ahead) and the same probing
result, vectorized so that 30 permutations of a million ranks take seconds, not minutes.
"""

from __future__ import annotations

import functools
import time

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

# POSIX drand48: X' = (A X + C) mod 2^48; srand48(s) sets X = (s mod 2^32) << 16 | 0x330E.
_A = 0x5DEECE66D
_C = 0xB
_BITS = 48
_MASK = (1 << _BITS) - 1
_SEED_LOW = 0x330E
_BLOCK = 4096
# Below this many cars a plain loop beats numpy's per-call overhead.
_SEQUENTIAL_BELOW = 64


def time_seed() -> int:
    """A seed from the wall clock in seconds, like the original's ``srand48(time(NULL))``."""
    return int(time.time())


def _jump(steps: int) -> tuple[int, int]:
    """(A_k, C_k) with X_{n+k} = A_k X_n + C_k mod 2^48."""
    mult, inc = 1, 0
    base_mult, base_inc = _A, _C
    while steps:
        if steps & 1:
            mult, inc = (mult * base_mult) & _MASK, (inc * base_mult + base_inc) & _MASK
        base_inc = (base_inc * base_mult + base_inc) & _MASK
        base_mult = (base_mult * base_mult) & _MASK
        steps >>= 1
    return mult, inc


@functools.cache
def _block_coefficients() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """(A_k, C_k) for k = 1.._BLOCK as arrays (read-only, computed once)."""
    mults = np.empty(_BLOCK, dtype=np.uint64)
    incs = np.empty(_BLOCK, dtype=np.uint64)
    m, c = 1, 0
    for i in range(_BLOCK):
        m, c = (m * _A) & _MASK, (c * _A + _C) & _MASK
        mults[i], incs[i] = m, c
    mults.setflags(write=False)
    incs.setflags(write=False)
    return mults, incs


def drand48_state(seed: int) -> int:
    """The 48-bit state that ``srand48(seed)`` sets (glibc keeps the low 32 bits of seed)."""
    return ((seed & 0xFFFFFFFF) << 16) | _SEED_LOW


def drand48_states(seed: int, start: int, count: int) -> npt.NDArray[np.uint64]:
    """States X_{start+1} .. X_{start+count}: what the draws number start+1.. return, times 2^48."""
    if start < 0 or count < 0:
        raise ValueError("start and count must be non-negative")
    out = np.empty(count, dtype=np.uint64)
    if count == 0:
        return out
    mult, inc = _jump(start)
    x0 = (mult * drand48_state(seed) + inc) & _MASK
    block = min(count, _BLOCK)
    mults, incs = (a[:block] for a in _block_coefficients())
    # Row starts are `block` steps apart; rows then fan out by the coefficients.
    nrows = -(-count // block)
    row_mult, row_inc = _jump(block)
    starts = np.empty(nrows, dtype=np.uint64)
    x = x0
    for r in range(nrows):
        starts[r] = x
        x = (row_mult * x + row_inc) & _MASK
    mask = np.uint64(_MASK)
    # uint64 products wrap mod 2^64, which is exact mod 2^48 after masking.
    table = (starts[:, None] * mults[None, :] + incs[None, :]) & mask
    out[:] = table.reshape(-1)[:count]
    return out


def drand48_values(seed: int, start: int, count: int) -> npt.NDArray[np.float64]:
    """The doubles that draws number start+1 .. start+count of ``drand48()`` return."""
    # X < 2^48 converts exactly; scaling by a power of two is exact, as in glibc.
    return drand48_states(seed, start, count).astype(np.float64) * (2.0**-_BITS)


def probe_hashes(nprocs: int, pattern: int, seed: int) -> IntArray:
    """The start slots ``floor(drand48() * P)`` of random pattern number ``pattern`` (0-based)."""
    values = drand48_values(seed, pattern * nprocs, nprocs)
    # Same double product and truncation as the C cast (int)(drand48() * size).
    return (values * float(nprocs)).astype(np.int64)


def park_sequential(hashes: npt.ArrayLike, nslots: int) -> IntArray:
    """Slot of each car under first-come-first-served linear probing (plain reference loop)."""
    h = np.asarray(hashes, dtype=np.int64)
    if h.size > nslots:
        raise ValueError(f"{h.size} cars do not fit into {nslots} slots")
    taken = bytearray(nslots)
    out = np.empty(h.size, dtype=np.int64)
    for car, start in enumerate(h.tolist()):
        slot = int(start) % nslots
        while taken[slot]:
            slot = slot + 1 if slot + 1 < nslots else 0
        taken[slot] = 1
        out[car] = slot
    return out


def _deferred_acceptance(h: IntArray, nslots: int) -> IntArray:
    """FCFS linear probing of the cars ``h`` (at most half a table) by deferred acceptance.

    Cars propose to slots along their probe sequence and every slot keeps the lowest car
    index it has been offered.  All slots rank cars the same way, so the stable matching
    is unique and equals serial dictatorship, i.e. sequential first-come-first-served
    probing; deferred acceptance reaches it whatever the order of the proposals, here
    all open proposals at once per round.  Few rounds are needed at load <= 1/2.
    """
    ncars = h.size
    nobody = ncars
    holder = np.full(nslots, nobody, dtype=np.int64)
    active = np.arange(ncars, dtype=np.int64)
    slots = h.copy()
    while active.size >= _SEQUENTIAL_BELOW:
        before = holder[slots]
        np.minimum.at(holder, slots, active)
        win = holder[slots] == active
        # Each slot has one winner at most; what it held before is displaced.
        displaced = before[win]
        again = displaced != nobody
        lose = ~win
        active = np.concatenate((active[lose], displaced[again]))
        slots = np.concatenate((slots[lose], slots[win][again]))
        slots += 1
        slots[slots == nslots] = 0
    # A few cars still walking: the same proposals, one car at a time.
    for car, slot in zip(active.tolist(), slots.tolist(), strict=True):
        while True:
            current_car = int(holder[slot])
            if car < current_car:
                holder[slot] = car
                if current_car == nobody:
                    break
                car = current_car
            slot = slot + 1 if slot + 1 < nslots else 0
    taken = np.flatnonzero(holder != nobody)
    placed = np.empty(ncars, dtype=np.int64)
    placed[holder[taken]] = taken
    return placed


def park(hashes: npt.ArrayLike, nslots: int) -> IntArray:
    """Slot of each car under first-come-first-served linear probing, vectorized.

    Exactly :func:`park_sequential`: the first half-table's worth of cars is placed by
    deferred acceptance; the remaining cars can only use the free slots, and probing over
    the free slots in order is the same problem on a table half as big, each car starting
    at the first free slot at or after its own start.  As for the plain loop, the work
    grows with the total probe length: small for uniform starts (drand48), quadratic if
    all cars start at one slot.
    """
    h = np.asarray(hashes, dtype=np.int64)
    if h.ndim != 1:
        raise ValueError("hashes must be one-dimensional")
    if h.size > nslots:
        raise ValueError(f"{h.size} cars do not fit into {nslots} slots")
    if h.size < _SEQUENTIAL_BELOW:
        return park_sequential(h, nslots)
    h = h % nslots
    first = min(h.size, nslots // 2)
    placed = _deferred_acceptance(h[:first], nslots)
    if first == h.size:
        return placed
    free_mask = np.ones(nslots, dtype=bool)
    free_mask[placed] = False
    free = np.flatnonzero(free_mask)
    # Free slots before s = compressed index of the first free slot at or after s.
    before = np.cumsum(free_mask) - free_mask
    start = before[h[first:]]
    start[start == free.size] = 0
    return np.concatenate((placed, free[park(start, free.size)]))


def probe_permutation(hashes: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """perm with ``perm[slot of car i] = i`` for a full table (as many cars as slots)."""
    h = np.asarray(hashes, dtype=np.int64)
    perm = np.empty(h.size, dtype=np.int32)
    perm[park(h, h.size)] = np.arange(h.size, dtype=np.int32)
    return perm


def random_permutation(nprocs: int, pattern: int, seed: int) -> npt.NDArray[np.int32]:
    """The permutation of random pattern number ``pattern`` (0-based) for ``nprocs`` ranks."""
    return probe_permutation(probe_hashes(nprocs, pattern, seed))


def random_permutations(nprocs: int, count: int, seed: int) -> npt.NDArray[np.int32]:
    """The permutations of ``count`` random patterns: row k, new rank j is world rank perm[j].

    Rank 0 of the original draws them from one drand48 stream seeded once, P draws per
    pattern, so the same seed gives the same patterns as b_eff 3.6 on a glibc system.
    """
    if nprocs < 1 or count < 0:
        raise ValueError("need nprocs >= 1 and count >= 0")
    perms = np.empty((count, nprocs), dtype=np.int32)
    for k in range(count):
        perms[k] = random_permutation(nprocs, k, seed)
    return perms


def worst_cyclic_permutation(nprocs: int) -> npt.NDArray[np.int32]:
    """The fixed permutation of worst-cyc-1dim: 0, P-1, 1, P-2, 2, ..."""
    slot = np.arange(nprocs, dtype=np.int64)
    perm = np.where(slot % 2 == 0, slot // 2, nprocs - 1 - slot // 2)
    return perm.astype(np.int32)
