"""Grid shapes of the 2-D and 3-D Cartesian information patterns (spec §4.3)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

DimsCreate = Callable[[int, int], Sequence[int]]


def _divisors(n: int) -> list[int]:
    """All divisors of n, largest first."""
    small: list[int] = []
    large: list[int] = []
    f = 1
    while f * f <= n:
        if n % f == 0:
            small.append(f)
            if f * f != n:
                large.append(n // f)
        f += 1
    return sorted(small + large, reverse=True)


def balanced_dims(nnodes: int, ndims: int) -> list[int]:
    """``MPI_Dims_create(nnodes, ndims)`` with all dims free, in pure Python.

    Mirrors the balanced factorization of MPI: the non-increasing factorization with the
    smallest difference between the largest and the smallest factor; among equals the
    one with the larger leading factors (what MPICH 4/5 returns, e.g. 360 = 10*6*6, not
    9*8*5).  Checked against MPICH for ndims 2 and 3; the MPI layer should prefer the
    library's own ``Compute_dims`` and may pass it to :func:`grid_dims`.
    """
    if nnodes < 1 or ndims < 1:
        raise ValueError(f"need nnodes >= 1 and ndims >= 1, got {nnodes}, {ndims}")
    divisors = _divisors(nnodes)
    best: list[int] = []
    best_spread = nnodes

    def search(rest: int, left: int, cap: int, prefix: list[int]) -> None:
        nonlocal best, best_spread
        if left == 1:
            if rest <= cap:
                spread = (prefix[0] if prefix else rest) - rest
                if not best or spread < best_spread:
                    best, best_spread = prefix + [rest], spread
            return
        for f in divisors:
            if f > cap or rest % f:
                continue
            if f**left < rest:
                break  # the largest remaining factor is at least the left-th root
            search(rest // f, left - 1, f, prefix + [f])

    search(nnodes, ndims, nnodes, [])
    return best


def grid_dims(nprocs: int, ndims: int, dims_create: DimsCreate = balanced_dims) -> list[int]:
    """Dims of the b_eff grid: the largest n <= P whose grid has last extent > 1 (or n < 8 even,
    or n < 4)."""
    if nprocs < 1:
        raise ValueError(f"need at least one process, got {nprocs}")
    n = nprocs
    while True:
        dims = [int(d) for d in dims_create(n, ndims)]
        if dims[-1] > 1 or (n < 8 and n % 2 == 0) or n < 4:
            return dims
        n -= 1
