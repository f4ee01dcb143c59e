"""``beff map``'s schedule, as pure functions: which ranks are mapped, which shifts are
measured, each rank's partners in a shift, and how many samples the time budget allows.

Every rank computes the same schedule from the same inputs (the seed and the mapped count),
without communicating: each rank knows from its own node-local rank whether it is mapped
(rank 0 applies the same rule to the ranks table, for the record), choosing K shifts is O(K)
(Floyd's algorithm), and a rank's partners in a shift are two additions. Nothing here is
P x P.

Shifts (mpiGraph's scheme): the P mapped ranks form a ring; in shift k (1 <= k <= P-1) every
rank sends to ``(r + k) % P`` and receives from ``(r - k) % P`` at the same time, so after
all P-1 shifts every rank has sent to and received from every other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MASK64 = (1 << 64) - 1
MIN_REPETITIONS = 3  # samples per pair, at least: a spread needs three


class Stream:
    """SplitMix64 (Steele, Lea and Flood, 2014): 64-bit numbers fixed by the seed alone, on
    every platform and every Python or numpy version, so a stored seed gives the same shifts
    for good (numpy's generators promise no such thing across versions)."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in [0, n) (rejection: no modulo bias)."""
        if n <= 0:
            raise ValueError("n must be positive")
        limit = (1 << 64) - (1 << 64) % n
        while True:
            x = self.next64()
            if x < limit:
                return x % n


def choose_shifts(nmapped: int, count: int, seed: int) -> Sequence[int]:
    """The shifts to measure among 1 .. P-1, ascending: all of them when ``count`` is 0 or at
    least P-1 (a range: no list of P Python ints on every mapped rank), else ``count``
    distinct ones drawn from ``seed`` by Floyd's algorithm (O(count) time and memory,
    whatever P)."""
    n = nmapped - 1
    if n <= 0:
        return range(0)
    if count <= 0 or count >= n:
        return range(1, nmapped)
    rng = Stream(seed)
    chosen: set[int] = set()
    for j in range(n - count, n):
        t = rng.below(j + 1)
        chosen.add(j if t in chosen else t)
    return sorted(s + 1 for s in chosen)


def shift_count(nmapped: int, count: int) -> int:
    """How many shifts :func:`choose_shifts` gives."""
    n = max(0, nmapped - 1)
    return n if count <= 0 or count >= n else count


def record_bytes(nmapped: int, nshifts: int, reps: int) -> int:
    """What rank 0 holds of samples: send, receive and latency times, K x P x R doubles each
    (the P x P matrices, up to 1024 mapped ranks, come on top: 24 MiB at most)."""
    return 3 * 8 * nshifts * nmapped * reps


def partners(rank: int, nmapped: int, shift: int) -> tuple[int, int]:
    """(the rank ``rank`` sends to, the rank it receives from) in ``shift``."""
    return (rank + shift) % nmapped, (rank - shift) % nmapped


def mapped_ranks(local_rank: Sequence[int], per_node: int, all_ranks: bool) -> list[int]:
    """The world ranks that are mapped, in world order: the first ``per_node`` ranks of each
    node (node-local ranks below it; the placement decides what a node is), or every rank."""
    if all_ranks:
        return list(range(len(local_rank)))
    return [r for r, lr in enumerate(local_rank) if lr < per_node]


def repetitions(budget_s: float, nshifts: int, sample_s: float, most: int) -> tuple[int, bool]:
    """Samples per pair: as many as the budget allows for ``nshifts`` shifts when one sample
    (a bandwidth and a latency sample of one shift) takes ``sample_s``, at least
    MIN_REPETITIONS and at most ``most``; and whether the minimum exceeds the budget."""
    if nshifts <= 0:
        return MIN_REPETITIONS, False
    fits = math.inf if sample_s <= 0 else budget_s / (nshifts * sample_s)
    reps = most if fits >= most else int(fits)
    return max(MIN_REPETITIONS, min(most, reps)), fits < MIN_REPETITIONS


@dataclass(frozen=True)
class Cost:
    """What a map costs, from a model of one sample (see :func:`estimate`)."""

    sample_s: float  # one bandwidth sample plus one latency sample of one shift
    shift_s: float  # one shift: ``reps`` of each
    total_s: float  # every measured shift
    pairs: int  # ordered pairs measured: K * P


def estimate(nmapped: int, nshifts: int, reps: int, size: int, window: int, rounds: int,
             bandwidth_Bps: float, latency_s: float) -> Cost:
    """The time a map takes on a network of ``bandwidth_Bps`` per link and ``latency_s`` per
    message: a sample is two barriers (about 2 log2(P) latencies each), ``window`` messages
    of ``size`` bytes, and ``rounds`` round trips; K shifts of ``reps`` samples each."""
    barrier = 2.0 * max(1.0, math.log2(max(2, nmapped))) * latency_s
    sample = 2 * barrier + window * size / bandwidth_Bps + 2 * rounds * latency_s
    shift = reps * sample
    return Cost(sample, shift, nshifts * shift, nshifts * nmapped)
