"""Clock models for synchronised starts: each rank's clock as an affine function of a
reference clock, fitted from ping-pongs, and the arithmetic of a window start policy. Pure
functions (no MPI): the measuring side exchanges the time stamps, this module turns them
into models, and the tests drive it with a simulated clock.

Method (the JK / HCA family: Jones and Koenig, "Clock synchronization in high-end computing
environments", 2013; Hunold and Carpen-Amarie, "On the impact of synchronizing clocks and
processes on benchmarking MPI collectives", EuroMPI 2015, and their HCA papers to 2018):

* **One pair.** A client times ``rounds`` ping-pongs with its reference and keeps the one
  with the shortest round trip (the least queueing); from its send time ``s``, the
  reference's stamp ``r`` and its receive time ``e``, the offset at the local time
  ``(s + e) / 2`` is ``(s + e) / 2 - r``, wrong by at most half the asymmetry of that round
  trip. ``fitpoints`` such offsets, spread over a while, are fitted by least squares with a
  line: the offset and the drift (the line's slope). The residual (the RMS distance of the
  points from the line) is the achieved synchronisation error a run stores per rank.
* **Many ranks.** Pairs are formed in ceil(log2 P) rounds of a binary tree, each round's
  pairs disjoint, so they run at once (HCA's hierarchical scheme): in round k, rank
  ``r + 2^k`` (for r a multiple of 2^(k+1)) fits its clock to rank r's. Models compose
  along the tree (:meth:`Affine.then`), so every rank ends with a model of rank 0's clock.
  :func:`hierarchical_rounds` does this first among node leaders, then within every node
  at once: the slow inter-node rounds are log2(nodes), not log2(P).

Times are seconds of float64: from a recent origin (a clock since boot, or MPI_Wtime
since start) they resolve 1e-13 s; counted from 1970 only 2.4e-7 s, too coarse for a
sub-microsecond model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Affine:
    """``reference = alpha + beta * local``: a clock's time on the reference clock."""

    alpha: float = 0.0
    beta: float = 1.0

    def __call__(self, local: float) -> float:
        return self.alpha + self.beta * local

    def inverse(self, reference: float) -> float:
        """The local time that shows ``reference`` on the reference clock."""
        return (reference - self.alpha) / self.beta

    def then(self, outer: Affine) -> Affine:
        """This model followed by ``outer`` (a client's model of its parent, then the
        parent's of the root): the client's model of the root."""
        return Affine(outer.alpha + outer.beta * self.alpha, outer.beta * self.beta)


@dataclass(frozen=True)
class Fit:
    """A client's fitted model of its reference's clock, and how well it fits."""

    model: Affine
    offset: float  # the local clock's offset at local time 0, seconds (ahead: positive)
    drift: float  # its rate error, seconds per second (ahead faster: positive)
    residual: float  # RMS distance of the fit points from the line, seconds
    min_rtt: float  # the shortest round trip kept, seconds
    drift_error: float = 0.0  # standard error of the drift, s/s (0: one fit point)
    # the longest of the round trips kept (one per fit point): an asymmetry of the link can
    # have moved each fit point's offset by up to half its round trip, so the line by up to
    # half this
    max_rtt: float = 0.0


def offset_point(send: float, stamp: float, receive: float) -> tuple[float, float]:
    """One ping-pong: (local midpoint, offset of the local clock there)."""
    mid = 0.5 * (send + receive)
    return mid, mid - stamp


def best_exchange(exchanges: npt.ArrayLike) -> tuple[float, float, float]:
    """Of ``rounds`` ping-pongs (rows: local send, reference stamp, local receive), the one
    with the shortest round trip."""
    ex = np.asarray(exchanges, dtype=np.float64).reshape(-1, 3)
    i = int(np.argmin(ex[:, 2] - ex[:, 0]))
    return float(ex[i, 0]), float(ex[i, 1]), float(ex[i, 2])


def fit(points: npt.ArrayLike) -> Fit:
    """The least-squares line through fit points (rows of ``exchanges``: per fit point,
    its rounds of local send, reference stamp, local receive; shape [fitpoints, rounds,
    3]). One fit point gives an offset and no drift."""
    ex = np.asarray(points, dtype=np.float64)
    if ex.ndim == 2:
        ex = ex[:, None, :]
    best = [best_exchange(p) for p in ex]
    pts = np.array([offset_point(*b) for b in best])
    mids, offs = pts[:, 0], pts[:, 1]
    rtt = min(e - s for s, _, e in best)
    longest = max(e - s for s, _, e in best)
    if len(best) == 1:
        o = float(offs[0])
        return Fit(Affine(-o, 1.0), o, 0.0, 0.0, rtt, max_rtt=longest)
    # offset(local) = a + b * local, centred for accuracy (times are ~1e9 s since the epoch)
    centre = float(mids.mean())
    x = mids - centre
    b = float(np.dot(x, offs - offs.mean()) / np.dot(x, x)) if np.dot(x, x) > 0 else 0.0
    a_c = float(offs.mean())
    residual = float(np.sqrt(np.mean((offs - (a_c + b * x)) ** 2)))
    a = a_c - b * centre  # offset at local time 0
    n = len(best)
    spread = float(np.dot(x, x))
    drift_error = (residual * math.sqrt(n / (n - 2)) / math.sqrt(spread)
                   if n > 2 and spread > 0 else 0.0)
    # reference = local - offset(local) = -a + (1 - b) * local
    return Fit(Affine(-a, 1.0 - b), a, b, residual, rtt, drift_error, longest)


def tree_rounds(n: int) -> list[list[tuple[int, int]]]:
    """Pairs (reference, client) of indices 0..n-1, in ceil(log2 n) rounds of disjoint
    pairs: every index but 0 is a client exactly once, of an index below it."""
    rounds = []
    k = 1
    while k < n:
        rounds.append([(r, r + k) for r in range(0, n - k, 2 * k)])
        k *= 2
    return rounds[::-1]  # the widest strides first: a client's parent is never its child


def parents(n: int) -> list[int]:
    """Each index's reference in :func:`tree_rounds` (-1 for index 0)."""
    out = [-1] * n
    for pairs in tree_rounds(n):
        for ref, client in pairs:
            out[client] = ref
    return out


def hierarchical_rounds(node_of: Sequence[int]) -> list[list[tuple[int, int]]]:
    """Rounds of (reference, client) world ranks: first a tree among the node leaders (each
    node's lowest rank), then a tree within every node, all nodes at once. Rank 0 is the
    root (a leader)."""
    members: dict[int, list[int]] = {}
    for rank, node in enumerate(node_of):
        members.setdefault(int(node), []).append(rank)
    leaders = [ranks[0] for ranks in members.values()]
    outer = [[(leaders[a], leaders[b]) for a, b in pairs] for pairs in
             tree_rounds(len(leaders))]
    inner: list[list[tuple[int, int]]] = []
    for ranks in members.values():
        for i, pairs in enumerate(tree_rounds(len(ranks))):
            while len(inner) <= i:
                inner.append([])
            inner[i] += [(ranks[a], ranks[b]) for a, b in pairs]
    return outer + inner


def compose(fits: dict[int, Affine], parent: Sequence[int]) -> list[Affine]:
    """Every rank's model of rank 0's clock, from each client's model of its reference
    (``fits[client]``) and the references (``parent[client]``, -1 for the root)."""
    out: list[Affine | None] = [None] * len(parent)

    def of(rank: int) -> Affine:
        known = out[rank]
        if known is not None:
            return known
        model = Affine() if parent[rank] < 0 else fits[rank].then(of(parent[rank]))
        out[rank] = model
        return model

    return [of(r) for r in range(len(parent))]


# ----------------------------------------------------------------------------- windows


def window_start(t0: float, width: float, k: int) -> float:
    """Repetition ``k``'s common start on the reference clock."""
    return t0 + k * width


def window_duration(ends: npt.ArrayLike, start: float) -> float:
    """A repetition's time under the window policy: the latest end over the ranks, on the
    reference clock, less the common start."""
    return float(np.max(np.asarray(ends, dtype=np.float64))) - start


def late(arrivals: npt.ArrayLike, start: float) -> bool:
    """Whether any rank reached the repetition after its start (the repetition is invalid:
    counted, stored, left out)."""
    return bool(np.any(np.asarray(arrivals, dtype=np.float64) > start))


def barrier_duration(starts: npt.ArrayLike, ends: npt.ArrayLike) -> float:
    """A repetition's time as IMB takes it: each rank's own clock from its barrier exit to
    its end, the maximum over ranks (t_max)."""
    return float(np.max(np.asarray(ends, dtype=np.float64)
                        - np.asarray(starts, dtype=np.float64)))


def resync_after(drift_error: float, bound: float) -> float:
    """Seconds until a drift known to within ``drift_error`` (s/s) can have moved a model
    ``bound`` seconds off: when the window policy must fit the clocks again."""
    return math.inf if drift_error <= 0 else bound / drift_error
