"""The b_eff communication patterns as compact descriptions (spec §4).

Nothing here holds a per-rank table: a pattern knows its communicator (a Cartesian grid or
a permutation of the world group) and derives any rank's send/receive steps on demand, so
a million ranks cost a few objects plus, on first use, one permutation per random ring.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from beff.patterns.dims import DimsCreate, balanced_dims, grid_dims
from beff.patterns.probing import random_permutation, worst_cyclic_permutation

Kind = Literal["ring", "random", "info"]
PermArray = npt.NDArray[np.int32]

N_RINGS = 6
N_RANDOM = 30
N_RANDOM_SHORT = 6
ALL_METHODS = (0, 1, 2)
SENDRECV_ONLY = (0,)
PINGPONG_LABEL = "one PingPong Pair"


@dataclass(frozen=True)
class Step:
    """One send/receive step: ranks in the pattern's communicator, None for MPI_PROC_NULL."""

    dest: int | None
    source: int | None
    tag: int


@dataclass(frozen=True)
class CartComm:
    """A Cartesian communicator (reorder allowed) over the first ``size`` world ranks.

    Row-major ranks, as MPI numbers Cartesian communicators.  Patterns with equal specs
    may share one communicator (the original builds one for the rings and one for the
    bi-section and ping-pong patterns).
    """

    dims: tuple[int, ...]
    periods: tuple[bool, ...]

    @property
    def size(self) -> int:
        """Number of ranks in the grid; world ranks beyond it get MPI_COMM_NULL."""
        return math.prod(self.dims)


class GroupComm:
    """A communicator made with ``Group.Incl(perm)`` of the world group.

    New rank j is world rank ``perm[j]``.  Random permutations are computed on first use
    and then kept (read-only).
    """

    __slots__ = ("nprocs", "_random_index", "_seed", "_perm")

    def __init__(self, nprocs: int, random_index: int | None = None, seed: int = 0) -> None:
        self.nprocs = nprocs
        self._random_index = random_index
        self._seed = seed
        self._perm: PermArray | None = None

    @property
    def size(self) -> int:
        """Number of ranks: all of the world."""
        return self.nprocs

    @property
    def is_computed(self) -> bool:
        """Whether the permutation has been computed yet."""
        return self._perm is not None

    @property
    def perm(self) -> PermArray:
        """``perm[j]`` = world rank of new rank j (int32, read-only)."""
        if self._perm is None:
            if self._random_index is None:
                perm = worst_cyclic_permutation(self.nprocs)
            else:
                perm = random_permutation(self.nprocs, self._random_index, self._seed)
            perm.setflags(write=False)
            self._perm = perm
        return self._perm

    def adopt(self, perm: PermArray) -> None:
        """Use a permutation computed elsewhere (rank 0 draws, the others receive it)."""
        if perm.shape != (self.nprocs,):
            raise ValueError(f"permutation of {perm.shape} for {self.nprocs} ranks")
        perm = np.asarray(perm, dtype=np.int32)
        perm.setflags(write=False)
        self._perm = perm

    def release(self) -> None:
        """Forget the permutation (P int32): a rank that has created the communicator needs
        it no more (read again, it is computed again, the same)."""
        self._perm = None

    def __repr__(self) -> str:
        what = "worst" if self._random_index is None else f"random {self._random_index}"
        return f"GroupComm(nprocs={self.nprocs}, {what}, seed={self._seed})"


# Raw steps before pong removal: (dest, source, message count of the step).
_Raw = tuple[int | None, int | None, int]


class Layout(Protocol):
    """Who talks to whom in one pattern."""

    def raw(self, rank: int) -> list[_Raw]:
        """Ping/pong steps of a member rank, pings at even positions."""

    def participation(self, rank: int) -> int:
        """1, or -1 for a member that only joins Alltoallv with zero counts."""


@dataclass(frozen=True)
class _BlockRings:
    """Disjoint bidirectional rings of consecutive ranks (first group, then second group)."""

    nprocs: int
    first_size: int
    first_count: int
    second_size: int

    def raw(self, rank: int) -> list[_Raw]:
        edge = self.first_count * self.first_size
        if rank < edge:
            size, base = self.first_size, rank // self.first_size * self.first_size
        else:
            size = self.second_size
            base = (rank - edge) // size * size + edge
        nxt = (rank - base + 1) % size + base
        prev = (rank - base + size - 1) % size + base
        return [(nxt, prev, self.nprocs), (prev, nxt, self.nprocs)]

    def participation(self, rank: int) -> int:
        return 1


@dataclass(frozen=True)
class _Pairs:
    """Ping-pong pairs by Send/Recv: best or worst bi-section, or only ranks 0 and 1."""

    used: int
    worst: bool = False

    def raw(self, rank: int) -> list[_Raw]:
        if rank >= self.used:
            return []
        half = self.used // 2
        if self.worst:
            partner, pinger = self.used - 1 - rank, rank < half
        else:
            partner, pinger = rank ^ 1, rank % 2 == 0
        if pinger:
            return [(partner, None, half), (None, partner, half)]
        return [(None, partner, half), (partner, None, half)]

    def participation(self, rank: int) -> int:
        return 1 if rank < self.used else -1


@dataclass(frozen=True)
class _Grid:
    """Ping-pong with the +1 neighbour along the given directions of a Cartesian grid."""

    dims: tuple[int, ...]
    periodic: bool
    directions: tuple[int, ...]

    def raw(self, rank: int) -> list[_Raw]:
        size = math.prod(self.dims)
        coords = []
        rest = rank
        for extent in reversed(self.dims):
            coords.append(rest % extent)
            rest //= extent
        coords.reverse()
        steps: list[_Raw] = []
        for d in self.directions:
            extent = self.dims[d]
            stride = math.prod(self.dims[d + 1:])
            c = coords[d]
            dest: int | None
            source: int | None
            if self.periodic:
                dest = rank + stride * (1 if c + 1 < extent else 1 - extent)
                source = rank - stride * (1 if c > 0 else 1 - extent)
            else:
                dest = rank + stride if c + 1 < extent else None
                source = rank - stride if c > 0 else None
            count = (extent - 1 + int(self.periodic)) * size // extent
            steps += [(dest, source, count), (source, dest, count)]
        return steps

    def participation(self, rank: int) -> int:
        return 1


def _remove_pongs(raw: list[_Raw]) -> tuple[list[_Raw], int]:
    """Drop each pong that goes to the ping's destination; return kept steps, removed count.

    One Alltoallv carries one message per peer pair, so a ring of two (or a periodic
    extent of two) keeps only the ping, for all methods (spec §4.5).  Like the original,
    this compares the raw destinations, MPI_PROC_NULL included.
    """
    kept: list[_Raw] = []
    removed = 0
    for i in range(0, len(raw) - 1, 2):
        ping, pong = raw[i], raw[i + 1]
        kept.append(ping)
        if ping[0] == pong[0]:
            removed += ping[2]
        else:
            kept.append(pong)
    return kept, removed


@dataclass(frozen=True, eq=False)
class Pattern:
    """One b_eff pattern; ``rank`` arguments are ranks in the pattern's communicator."""

    index: int
    label: str
    kind: Kind
    comm: CartComm | GroupComm
    participate_cnt: int
    methods: tuple[int, ...]
    layout: Layout
    initial_msg_cnt: int

    def _member(self, rank: int | None) -> bool:
        if rank is None:
            return False
        if not 0 <= rank < self.comm.size:
            raise ValueError(f"rank {rank} is not in 0..{self.comm.size - 1} of {self.label}")
        return True

    def participation(self, rank: int | None) -> int:
        """1 = takes part; 0 = not in the communicator (None: MPI_COMM_NULL); -1 = idle
        member (skips Sendrecv and non-blocking, calls Alltoallv with zero counts)."""
        if not self._member(rank):
            return 0
        assert rank is not None
        return self.layout.participation(rank)

    def steps(self, rank: int | None) -> list[Step]:
        """The rank's steps in order, tag = step index, after pong removal."""
        if not self._member(rank):
            return []
        assert rank is not None
        kept, _ = _remove_pongs(self.layout.raw(rank))
        return [Step(dest, source, tag) for tag, (dest, source, _) in enumerate(kept)]

    def sr_count(self, rank: int | None) -> int:
        """Number of steps of the rank (its ``sr_count``)."""
        return len(self.steps(rank))

    def all_msg_cnt_at(self, rank: int | None) -> int:
        """The rank's own ``all_msg_cnt``: messages in the pattern less its removed pongs
        (the unreduced count for a rank outside the communicator)."""
        if not self._member(rank):
            return self.initial_msg_cnt
        assert rank is not None
        _, removed = _remove_pongs(self.layout.raw(rank))
        return self.initial_msg_cnt - removed

    @property
    def all_msg_cnt(self) -> int:
        """Messages per iteration as rank 0 counts them; used for the rescaling."""
        return self.all_msg_cnt_at(0)

    def scale_at(self, rank: int) -> float:
        """``all_msg_cnt / sr_count`` of a rank: turns its per-process rate into b."""
        return self.all_msg_cnt_at(rank) / self.sr_count(rank)

    @property
    def scale(self) -> float:
        """``all_msg_cnt / sr_count`` of rank 0, by which b_eff 3.6 rescales (spec §7).

        Ranks may differ (P=5, pattern 0 mixes rings of 2 and 3); rank 0's values apply.
        """
        return self.scale_at(0)

    @property
    def perm(self) -> PermArray | None:
        """For Group.Incl: new rank j is world rank perm[j]; None for Cartesian patterns."""
        return self.comm.perm if isinstance(self.comm, GroupComm) else None

    @property
    def dims(self) -> tuple[int, ...] | None:
        """For Create_cart: the grid dims; None for permutation patterns."""
        return self.comm.dims if isinstance(self.comm, CartComm) else None

    @property
    def periods(self) -> tuple[bool, ...] | None:
        """For Create_cart: periodic per dimension; None for permutation patterns."""
        return self.comm.periods if isinstance(self.comm, CartComm) else None


@dataclass(frozen=True)
class RingSizes:
    """How ring pattern k splits P ranks into rings (spec §4.1)."""

    count: int
    first_size: int
    first_count: int
    second_size: int
    second_count: int

    @property
    def label(self) -> str:
        """``ring-<R>*<first size><fix|&+1|&-1>`` as the original prints it."""
        if self.second_count == 0:
            suffix = "fix"
        else:
            suffix = "&+1" if self.second_size > self.first_size else "&-1"
        return f"ring-{self.count}*{self.first_size}{suffix}"


def medium_ring_sizes(nprocs: int) -> list[int]:
    """The medium ring sizes 2, 4, 8, max(16, P/4), max(32, P/2), P, each clipped to P."""
    sizes = [2, 4, 8, max(16, nprocs // 4), max(32, nprocs // 2), nprocs]
    return [min(m, nprocs) for m in sizes]


def ring_sizes(nprocs: int, medium: int) -> RingSizes:
    """Ring split for one medium size: about P/M rings (+0.4 rounding, at most P/2)."""
    count = max(1, min(int(1.0 * nprocs / medium + 0.4), nprocs // 2))
    low = nprocs // count
    high_count = nprocs - low * count
    low_count = count - high_count
    if low % 2 and high_count > 0:
        return RingSizes(count, low + 1, high_count, low, low_count)
    return RingSizes(count, low, low_count, low + 1, high_count)


@dataclass(frozen=True, eq=False)
class PatternSet:
    """All patterns of one run, in b_eff's order (rings, random, information-only)."""

    nprocs: int
    seed: int
    n_random: int
    patterns: tuple[Pattern, ...]
    dims2: tuple[int, ...]
    dims3: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.patterns)

    def __iter__(self) -> Iterator[Pattern]:
        return iter(self.patterns)

    def __getitem__(self, index: int) -> Pattern:
        return self.patterns[index]

    @property
    def kinds(self) -> tuple[Kind, ...]:
        """Kind of every pattern, by index."""
        return tuple(p.kind for p in self.patterns)

    @property
    def labels(self) -> tuple[str, ...]:
        """Label of every pattern, by index."""
        return tuple(p.label for p in self.patterns)

    @property
    def ring_indices(self) -> range:
        """Indices of the ring patterns (ring average of b_eff)."""
        return range(N_RINGS)

    @property
    def random_indices(self) -> range:
        """Indices of the random patterns (random average of b_eff)."""
        return range(N_RINGS, N_RINGS + self.n_random)

    @property
    def pingpong_index(self) -> int:
        """Index of the "one PingPong Pair" pattern."""
        return self.labels.index(PINGPONG_LABEL)

    def scales(self) -> npt.NDArray[np.float64]:
        """``all_msg_cnt / sr_count`` of rank 0 for every pattern: b = minbw * scale."""
        return np.array([p.scale for p in self.patterns], dtype=np.float64)

    def materialize(self) -> None:
        """Compute every random permutation now instead of on first use."""
        for p in self.patterns:
            if isinstance(p.comm, GroupComm):
                p.comm.perm  # noqa: B018 - computes and caches


def build_patterns(nprocs: int, n_random: int = N_RANDOM, *, seed: int,
                   dims_create: DimsCreate = balanced_dims) -> PatternSet:
    """All b_eff patterns for ``nprocs`` ranks: 6 rings, ``n_random`` random rings (30, or 6
    with SHORT), worst-cyc-1dim, best/worst bi-section, one ping-pong pair and the 2-D/3-D
    Cartesian patterns.

    ``seed`` is the drand48 seed of the random rings (the original takes ``time(NULL)``,
    see :func:`beff.patterns.probing.time_seed`); the same seed gives the same patterns.
    ``dims_create`` may be the MPI library's ``Compute_dims``.
    """
    if nprocs < 2:
        raise ValueError(f"b_eff needs at least 2 processes, got {nprocs}")
    if n_random < 1:
        raise ValueError(f"need at least one random pattern, got {n_random}")
    patterns: list[Pattern] = []
    ring_comm = CartComm((nprocs,), (True,))

    def add(label: str, kind: Kind, comm: CartComm | GroupComm, layout: Layout,
            msg_cnt: int, participate: int, methods: tuple[int, ...] = ALL_METHODS) -> None:
        patterns.append(Pattern(len(patterns), label, kind, comm, participate, methods,
                                layout, msg_cnt))

    for medium in medium_ring_sizes(nprocs):
        sizes = ring_sizes(nprocs, medium)
        layout = _BlockRings(nprocs, sizes.first_size, sizes.first_count, sizes.second_size)
        add(sizes.label, "ring", ring_comm, layout, 2 * nprocs, nprocs)
    cycle = _BlockRings(nprocs, nprocs, 1, nprocs)
    for k in range(n_random):
        add("random-cyc-1dim", "random", GroupComm(nprocs, k, seed), cycle, 2 * nprocs, nprocs)
    add("worst-cyc-1dim", "info", GroupComm(nprocs), cycle, 2 * nprocs, nprocs)

    pair_comm = CartComm((nprocs,), (True,))
    even = nprocs // 2 * 2
    add("best  bi-section", "info", pair_comm, _Pairs(even), even, even)
    add("worst bi-section", "info", pair_comm, _Pairs(even, worst=True), even, even)
    add(PINGPONG_LABEL, "info", pair_comm, _Pairs(2), 2, 2, SENDRECV_ONLY)

    grids = {nd: tuple(grid_dims(nprocs, nd, dims_create)) for nd in (2, 3)}
    for periodic in (False, True):
        for nd, dims in grids.items():
            comm = CartComm(dims, (periodic,) * nd)
            size = comm.size
            name = "cyclic" if periodic else "acyclic"
            used = tuple(d for d in range(nd) if dims[d] > 1)
            if periodic:
                for d in used:
                    grid = _Grid(dims, True, (d,))
                    add(f"{name}-{nd}dim-{'xyz'[d]}", "info", comm, grid,
                        _grid_msg_cnt(grid), size)
            grid = _Grid(dims, periodic, used)
            add(f"{name}-{nd}dim-all", "info", comm, grid, _grid_msg_cnt(grid), size)
    return PatternSet(nprocs, seed, n_random, tuple(patterns), grids[2], grids[3])


def _grid_msg_cnt(grid: _Grid) -> int:
    """Messages of a grid pattern before pong removal: ping and pong of every direction."""
    return sum(count for _, _, count in grid.raw(0))
