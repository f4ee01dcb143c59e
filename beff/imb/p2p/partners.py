"""Who talks to whom in IMB-P2P, and how often: pure functions (no MPI).

* Pairs (PingPong, PingPing): rank r and rank (r + P/2) mod P, for even P.
* Random pairs (Unirandom, Birandom): IMB-P2P's 64-bit linear congruential generator
  ``s <- s * 7560690468208412377 + 4343336064253945357 (mod 2^64)``, each draw being bits
  24..55 of the new state; a pair is ``rank0 = draw mod P``, then ``rank1 = draw mod P``
  drawn again until it differs from rank0. Every rank draws the same sequence, so all agree
  on the pair of each step without communicating.
* Random ring (Corandom): starting from the identity, each step swaps ``ring[i]`` with
  ``ring[draw mod P]`` for i = 0 .. P-1; a rank receives from its left and sends to its right
  neighbour on that ring.
* Stencils: IMB-P2P's 2-D (ly x lx) and 3-D (lz x ly x lx) decompositions of P, periodic;
  rank r sits at x = r mod lx, y = r div lx (3-D: z = r div (lx ly) first).
* Repetitions: n = round(numerator / size), at most max, at least 1 (size 0: max);
  warm-up n div 10, at least 1 when n > 1.

The generator keeps its state modulo 2^63 instead of 2^64: the bits of an LCG's state depend
only on the same and lower bits of the previous state, so bits 24..55 (the draw) are the same
as IMB's. The product is formed from 31- and 32-bit pieces so that no intermediate value
exceeds a signed 64-bit integer: numba compiles signed arithmetic on the assumption that it
never overflows, so a wrapping product would not be reliable there. The same functions thus
run in Python and, compiled by numba, inside the timed loops (:func:`beff.core.capi.helper`);
they call each other as ``C.<name>``, which is this module in Python and the compiled helpers
in a loop.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

MULTIPLIER = 7560690468208412377
INCREMENT = 4343336064253945357
STATE_MASK = (1 << 63) - 1
DRAW_MASK = 0xFFFFFFFF
LOW31 = (1 << 31) - 1
LOW32 = (1 << 32) - 1
MUL_LOW = MULTIPLIER & LOW31  # MULTIPLIER = MUL_HIGH * 2^31 + MUL_LOW
MUL_HIGH = MULTIPLIER >> 31
DEFAULT_SEED = 0  # IMB-P2P starts every size's warm-up and timed loop from 0

# Messages each rank starts per iteration, counted as IMB-P2P counts them (its
# number_of_messages summed over the ranks and halved, over n iterations and P ranks).
MESSAGES_PER_ITERATION = {"PingPong": 1, "PingPing": 1, "Unirandom": 1, "Birandom": 2,
                          "Corandom": 1, "Stencil2D": 4, "Stencil3D": 6,
                          "SendRecv_Replace": 1}


def add63(x: int, y: int) -> int:
    """(x + y) mod 2^63 for 0 <= x, y < 2^63, without overflow."""
    room = STATE_MASK - y
    return x - room - 1 if x > room else x + y


def lcg_next(state: int) -> tuple[int, int]:
    """(new state, draw): one step of IMB-P2P's generator (state kept modulo 2^63)."""
    low = state & LOW31  # state = high * 2^31 + low
    high = state >> 31
    # state * MULTIPLIER mod 2^63 = low * MUL_LOW + 2^31 (high * MUL_LOW + low * MUL_HIGH)
    #                                + 2^62 (high * MUL_HIGH), each term reduced first.
    cross = ((high * MUL_LOW) & LOW32) + ((low * MUL_HIGH) & LOW32)
    state = C.add63(low * MUL_LOW, (cross & LOW32) << 31)
    state = C.add63(state, (high & MUL_HIGH & 1) << 62)
    state = C.add63(state, INCREMENT)
    return state, (state >> 24) & DRAW_MASK


def random_pair(state: int, nranks: int) -> tuple[int, int, int]:
    """(new state, rank0, rank1) of one Unirandom/Birandom step: two different ranks."""
    state, draw = C.lcg_next(state)
    rank0 = draw % nranks
    rank1 = rank0
    while rank1 == rank0:
        state, draw = C.lcg_next(state)
        rank1 = draw % nranks
    return state, rank0, rank1


def shuffle_ring(state: int, ring: np.ndarray) -> int:
    """One Corandom step: swap ``ring[i]`` with ``ring[draw mod P]`` for i = 0 .. P-1, in
    place; returns the new state."""
    nranks = ring.shape[0]
    for i in range(nranks):
        state, draw = C.lcg_next(state)
        j = draw % nranks
        r = ring[i]
        ring[i] = ring[j]
        ring[j] = r
    return state


def ring_neighbours(ring: np.ndarray, rank: int) -> tuple[int, int]:
    """(left, right) of ``rank`` on ``ring``: it receives from left and sends to right."""
    nranks = ring.shape[0]
    i = 0
    while ring[i] != rank:
        i += 1
    return int(ring[(i + nranks - 1) % nranks]), int(ring[(i + 1) % nranks])


def pair_partner(rank: int, nranks: int) -> int:
    """PingPong/PingPing: the partner of ``rank`` (the lower half sends first)."""
    return (rank + nranks // 2) % nranks


def random_pairs(nranks: int, steps: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """[step, 2]: the (rank0, rank1) of ``steps`` Unirandom/Birandom steps."""
    out = np.zeros((steps, 2), dtype=np.int64)
    state = seed & STATE_MASK
    for s in range(steps):
        state, out[s, 0], out[s, 1] = random_pair(state, nranks)
    return out


def random_rings(nranks: int, steps: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """[step, P]: the Corandom ring after each of ``steps`` steps."""
    ring = np.arange(nranks, dtype=np.int64)
    out = np.zeros((steps, nranks), dtype=np.int64)
    state = seed & STATE_MASK
    for s in range(steps):
        state = shuffle_ring(state, ring)
        out[s] = ring
    return out


def _square(n: int) -> tuple[int, int]:
    """IMB-P2P's 2-D split of n: (ly, lx), grown from 2 x 2 until it covers n, then ly
    lowered to a divisor of n (lx = n div ly); not necessarily valid."""
    lx = ly = 2
    while lx * ly < n:
        lx += 1
        ly += 1
    if lx * ly > n:
        while ly > 1 and n % ly:
            ly -= 1
        lx = n // ly
    return ly, lx


def dims2d(nranks: int) -> tuple[int, int] | None:
    """Stencil2D's (ly, lx), or None where IMB-P2P finds none (a side below 2)."""
    ly, lx = _square(nranks)
    return (ly, lx) if lx >= 2 and ly >= 2 and lx * ly == nranks else None


def dims3d(nranks: int) -> tuple[int, int, int] | None:
    """Stencil3D's (lz, ly, lx), or None where IMB-P2P finds none (a side below 2)."""
    lx = ly = lz = 2
    while lx * ly * lz < nranks:
        lx += 1
        ly += 1
        lz += 1
    while lx * ly * lz > nranks:
        lz -= 1
        while lz > 1 and nranks % lz:
            lz -= 1
        n = nranks // lz if lz != 0 else 0
        y, x = _square(n)
        if y >= lz:
            lx, ly = x, y
    ok = lx >= 2 and ly >= 2 and lz >= 2 and lx * ly * lz == nranks
    return (lz, ly, lx) if ok else None


def stencil2d_neighbours(rank: int, dims: tuple[int, int]) -> list[int]:
    """Stencil2D's 4 neighbours of ``rank``: x-1, x+1, y-1, y+1 (periodic)."""
    ly, lx = dims
    y, x = divmod(rank, lx)

    def at(x: int, y: int) -> int:
        return lx * (y % ly) + x % lx

    return [at(x - 1, y), at(x + 1, y), at(x, y - 1), at(x, y + 1)]


def stencil3d_neighbours(rank: int, dims: tuple[int, int, int]) -> list[int]:
    """Stencil3D's 6 neighbours of ``rank``: x-1, x+1, y-1, y+1, z-1, z+1 (periodic)."""
    lz, ly, lx = dims
    z, rest = divmod(rank, lx * ly)
    y, x = divmod(rest, lx)

    def at(x: int, y: int, z: int) -> int:
        return lx * ly * (z % lz) + lx * (y % ly) + x % lx

    return [at(x - 1, y, z), at(x + 1, y, z), at(x, y - 1, z), at(x, y + 1, z),
            at(x, y, z - 1), at(x, y, z + 1)]


def invalid(name: str, nranks: int) -> str:
    """Why IMB-P2P does not run benchmark ``name`` on ``nranks`` processes ("" = it runs)."""
    if nranks < 2:
        return "it needs at least 2 processes"
    if name in ("PingPong", "PingPing") and nranks % 2:
        return "it needs an even number of processes"
    if name == "Stencil2D" and dims2d(nranks) is None:
        return "no 2-D decomposition with both sides at least 2"
    if name == "Stencil3D" and dims3d(nranks) is None:
        return "no 3-D decomposition with every side at least 2"
    return ""


def decomposition(name: str, nranks: int) -> str:
    """The grid IMB-P2P names in a stencil's header, e.g. "2 x 2" ("" for the others)."""
    dims: tuple[int, ...] | None = None
    if name == "Stencil2D":
        dims = dims2d(nranks)
    elif name == "Stencil3D":
        dims = dims3d(nranks)
    return " x ".join(map(str, dims)) if dims else ""


def iterations(size: int, max_iter: int, numerator: int) -> tuple[int, int]:
    """(repetitions, warm-up repetitions) at ``size`` bytes; ``numerator`` in bytes."""
    if size > 0:
        n = min(int(numerator / size + 0.5), max_iter)  # C's round() of a positive value
        n = max(n, 1)
    else:
        n = max_iter
    w = n // 10
    if w == 0 and n > 1:
        w = 1
    return n, w


# The functions the timed loops call, in the order they depend on each other.
HELPERS = (add63, lcg_next, random_pair, shuffle_ring, ring_neighbours)
C: Any = sys.modules[__name__]  # in a compiled loop: the backend's helpers
