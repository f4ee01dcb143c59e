# ruff: noqa: E741 - l and L are the original's names for the chunk and call sizes
"""b_eff_io's 43 patterns, partition sizes and time schedule (b_eff_io.c 2.1, no MPI here).

A pattern writes (or reads) ``L`` bytes per process per call, in contiguous chunks of ``l``
bytes on disk. Its weight ``U`` is its share of the scheduled time; ``part`` says whether it
opens (0), continues (1) or closes (2) its type's file; ``pos`` is its row in the summary
table (1..7, 0: not tabulated, 8: the scatter pattern with l = 1 MiB, L = 2 MiB, shown apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

KIB, MIB = 1 << 10, 1 << 20
ETYPE = 8  # MPI_DOUBLE: every size is a multiple of 8 bytes
LMAX = -1  # the largest chunk, from the memory per process
SAME = -1  # L = l
FILL = -2  # types 3 and 4's last pattern: what is left of the segment

# (type, l, L, U, part, pos), in the original's order.
PATTERNS: tuple[tuple[int, int, int, int, int, int], ...] = (
    (0, MIB, MIB, 0, 0, 0),
    (0, LMAX, SAME, 4, 1, 7),
    (0, MIB, 2 * MIB, 4, 1, 8),
    (0, MIB, MIB, 4, 1, 5),
    (0, 32 * KIB, MIB, 2, 1, 3),
    (0, KIB, MIB, 2, 1, 1),
    (0, 32 * KIB + 8, MIB + 256, 2, 1, 4),
    (0, KIB + 8, MIB + 8 * KIB, 2, 1, 2),
    (0, MIB + 8, MIB + 8, 2, 2, 6),
    *((t, l, SAME, u, part, pos) for t, u1, u2, ul in ((1, 2, 2, 4), (2, 2, 2, 2))
      for l, u, part, pos in (
          (MIB, 0, 0, 0), (LMAX, ul, 1, 7), (MIB, u1, 1, 5), (32 * KIB, 1, 1, 3),
          (KIB, 1, 1, 1), (32 * KIB + 8, 1, 1, 4), (KIB + 8, 1, 1, 2), (MIB + 8, u2, 2, 6))),
    *((t, l, SAME, u, part, pos) for t in (3, 4) for l, u, part, pos in (
        (MIB, 0, 0, 0), (LMAX, 2, 1, 7), (MIB, 2, 1, 5), (32 * KIB, 1, 1, 3), (KIB, 1, 1, 1),
        (32 * KIB + 8, 1, 1, 4), (KIB + 8, 1, 1, 2), (MIB + 8, 2, 1, 6), (FILL, 0, 2, 0))),
)
NPATTERNS = len(PATTERNS)
TYPE_START = tuple(next(i for i, p in enumerate(PATTERNS) if p[0] == t) for t in range(5))
NTYPES = 5
POSITIONS = 8  # table rows 1..7; 8 holds the extra scatter pattern
ROW_CHUNKS = (KIB, KIB + 8, 32 * KIB, 32 * KIB + 8, MIB, MIB + 8, LMAX)  # rows 1..7


def row_key(chunk: int) -> str:
    """A table row's name in the summary: its chunk size in bytes, or ``Lmax``."""
    return "Lmax" if chunk == LMAX else str(chunk)


def lmax_from_memory(memory_per_proc: int) -> int:
    """The largest chunk: memory per process / 128, at least 2 MiB and at most 1 GiB (in whole
    MiB of memory, as the original's -MB)."""
    mib = memory_per_proc // MIB
    return MIB // 128 * max(2 * 128, min(mib, 1024 * 128))


def default_partitions(nprocs: int) -> list[int]:
    """The original's partition sizes: {1}, {1, 2}, or 2^round(0.35 log2 N), 2^round(0.70
    log2 N), N (with 1 as the first for N = 3 and 3 as the second for N = 4)."""
    if nprocs == 1:
        return [1]
    if nprocs == 2:
        return [1, 2]
    lg = math.log(nprocs) / math.log(2.0)
    small = int(0.5 + 2.0 ** int(0.5000001 + lg * 0.35))
    medium = int(0.5 + 2.0 ** int(0.5000001 + lg * 0.70))
    return [1 if nprocs == 3 else small, 3 if nprocs == 4 else medium, nprocs]


def usum(rewrite_all: bool) -> int:
    """The weights of every pattern of every access phase that runs (150, or 192)."""
    per_access = sum(p[3] for p in PATTERNS)
    rewrite = per_access if rewrite_all else sum(p[3] for p in PATTERNS if p[0] == 0)
    return 2 * per_access + rewrite


@dataclass(frozen=True)
class Sizes:
    """Bytes per process: ``l[p]`` on disk per chunk, ``L[p]`` per call (before the fill-up
    chunks of types 3 and 4 are known, which :func:`segment` adds)."""

    l: list[int]
    L: list[int]


def sizes(lmax: int) -> Sizes:
    ls, Ls = [], []
    for _, l, L, *_ in PATTERNS:
        l = lmax if l == LMAX else (0 if l == FILL else l)
        ls.append(l)
        Ls.append(l if L == SAME else L)
    return Sizes(ls, Ls)


def derived_repetitions(reps: list[int], sz: Sizes) -> tuple[list[int], int]:
    """Types 3 and 4 replay what types 0-2 achieved: for each chunk size the minimum of type
    0's chunks (repetitions x L/l), 10 x type 1's and type 2's repetitions. Returns the
    repetitions (``reps`` with types 3 and 4 filled in, each fill-up pattern once) and the
    segment per process in bytes: their bytes rounded up to whole MiB."""
    out = list(reps)
    s3, s4 = TYPE_START[3], TYPE_START[4]
    out[s3] = out[s4] = 1
    used = sz.L[s3] // ETYPE
    for k in range(1, 8):
        p0 = TYPE_START[0] + (k if k <= 1 else k + 1)  # skips scatter's l=1 MiB, L=2 MiB
        chunks = out[p0] * (sz.L[p0] // ETYPE // (sz.l[p0] // ETYPE))
        out[s3 + k] = out[s4 + k] = min(chunks, 10 * out[TYPE_START[1] + k],
                                        out[TYPE_START[2] + k])
        used += out[s3 + k] * (sz.L[s3 + k] // ETYPE)
    per_mib = MIB // ETYPE
    seg = ((used - 1) // per_mib + 1) * per_mib
    out[s3 + 8] = out[s4 + 8] = 1
    return out, seg * ETYPE


def with_fill(sz: Sizes, segment: int, reps: list[int]) -> Sizes:
    """The sizes with the fill-up chunk of types 3 and 4 (segment minus what the other
    patterns of the type write)."""
    s3 = TYPE_START[3]
    used = sum(reps[s3 + k] * sz.L[s3 + k] for k in range(8))
    fill = segment - used
    ls, Ls = list(sz.l), list(sz.L)
    for start in (TYPE_START[3], TYPE_START[4]):
        ls[start + 8] = Ls[start + 8] = fill
    return Sizes(ls, Ls)
