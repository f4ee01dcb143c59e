"""Message buffers: numpy arrays, 2 MiB aligned when large, and IMB's ``-off_cache`` cycling."""

from __future__ import annotations

import mmap

import numpy as np

HUGEPAGE = 2 << 20
SMALL_ALIGN = 64
MMAP_THRESHOLD = 128 << 10  # glibc's malloc maps blocks from this size on


def aligned(nbytes: int, fill: int = 0) -> np.ndarray:
    """A zero-copy-usable uint8 array of ``nbytes``.

    Buffers of at least 1 MiB are anonymous mappings that start on a 2 MiB boundary and are
    advised MADV_HUGEPAGE, so transparent hugepages back them even where THP is in "madvise"
    mode (numpy asks for hugepages only from 4 MiB on); without hugepages, bandwidth at
    >= 1 MiB drops measurably. Smaller buffers start on a cache line.
    """
    align = HUGEPAGE if nbytes >= (1 << 20) else SMALL_ALIGN
    if align == HUGEPAGE:
        mm = mmap.mmap(-1, nbytes + align, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mm, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
            mm.madvise(mmap.MADV_HUGEPAGE)
        raw = np.frombuffer(mm, dtype=np.uint8)  # keeps the mapping alive
    else:
        raw = np.empty(nbytes + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    buf = raw[offset : offset + nbytes]
    buf.fill(fill)
    return buf


def malloc_like(nbytes: int, fill: int = 0) -> np.ndarray:
    """A buffer laid out as C's malloc would give it: large ones are plain anonymous mappings
    with no hugepage advice (glibc maps blocks of >= 128 KiB with mmap).

    b_eff uses this so that its numbers compare with the original C program's, whose
    buffers come from malloc.
    """
    if nbytes >= MMAP_THRESHOLD:
        mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        buf = np.frombuffer(mm, dtype=np.uint8)
    else:
        buf = np.empty(nbytes, dtype=np.uint8)
    buf.fill(fill)
    return buf


def untouched(nbytes: int) -> np.ndarray:
    """Zeroed memory that no one has touched yet, as b_eff 3.6 gets its two buffers from
    malloc and leaves them: large ones are anonymous mappings whose pages come into being
    when the benchmark first writes them (or the MPI library copies into them).

    beff used to fill its b_eff buffers at allocation; with every page faulted in
    beforehand, MPICH's kernel-assisted copies (8 KiB and up) ran 3-10 % faster than the
    original's, which made b_eff read high at the large lengths (share/docs/beff.md).
    """
    if nbytes >= MMAP_THRESHOLD:
        mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        return np.frombuffer(mm, dtype=np.uint8)
    return np.zeros(nbytes, dtype=np.uint8)


def off_cache_slots(nbytes: int, cache_bytes: int, line: int, n0: int) -> tuple[int, int]:
    """(slot stride, slot count) for ``-off_cache``, as IMB 2021 computes them.

    Consecutive messages start ``ceil(len/line) + 1`` cache lines apart, and the slots span
    about twice the cache, but there are never more slots than repetitions (n0).
    """
    stride = (-(-nbytes // line) + 1) * line
    count = max(1, min(n0, -(-2 * cache_bytes // stride)))
    return stride, count


class BufferSet:
    """The send or receive buffers of one kernel at one message size.

    ``views`` holds one view per off-cache slot (a single view when off_cache is off); a
    kernel cycles through them so that consecutive iterations touch different memory.

    Large buffers are laid out as C's malloc would give them (IMB allocates with
    MPI_Alloc_mem, which is malloc in MPICH and Open MPI), or 2 MiB-aligned and
    hugepage-advised with ``hugepages`` (``--hugepages``). Buffers below the mmap threshold
    start on a cache line: where numpy's heap put them (16 bytes past a line), MPICH's
    nonblocking reductions at 64 KiB took twice IMB's time, and on cache lines they take
    IMB's (MPICH 5.0.2, 2 ranks, minima over 5 launches: Iallreduce 26.9 vs 25.7 µs, was
    49.6; Ireduce 24.7 vs 24.4 µs, was 45.2).
    """

    def __init__(self, nbytes: int, off_cache: tuple[float, int] | None = None,
                 fill: int = 0, n0: int = 1, hugepages: bool = False) -> None:
        self.nbytes = nbytes
        per_copy = max(nbytes, 1)
        if off_cache is None:
            self.stride, self.count = per_copy, 1
        else:
            cache_mb, line = off_cache
            self.stride, self.count = off_cache_slots(per_copy, int(cache_mb * (1 << 20)), line,
                                                      n0)
        total = self.stride * self.count
        alloc = aligned if hugepages or total < MMAP_THRESHOLD else malloc_like
        self.base = alloc(total, fill)
        self.views = [
            self.base[i * self.stride : i * self.stride + nbytes] for i in range(self.count)
        ]

    @property
    def cycling(self) -> bool:
        return self.count > 1

    @property
    def address(self) -> int:
        """Address of slot 0; slot i starts ``stride`` bytes after slot i - 1."""
        return int(self.base.ctypes.data)

    @property
    def slots(self) -> tuple[int, int, int]:
        """(address, count, stride): what a compiled loop needs to cycle through the slots."""
        return self.address, self.count, self.stride

    def __getitem__(self, i: int) -> np.ndarray:
        return self.views[i % self.count]
