"""Message buffers: alignment, hugepage advice and -off_cache slots."""

import numpy as np

from beff.core.buffers import HUGEPAGE, BufferSet, aligned, off_cache_slots, untouched


def test_small_buffers_are_cache_line_aligned_and_filled() -> None:
    b = aligned(1000, fill=7)
    assert b.ctypes.data % 64 == 0 and b.size == 1000 and (b == 7).all()
    assert b.flags.writeable


def test_large_buffers_start_on_a_hugepage_boundary() -> None:
    b = aligned(1 << 20)
    assert b.ctypes.data % HUGEPAGE == 0 and b.size == 1 << 20
    b[:] = 3
    assert int(b.sum()) == 3 << 20


def test_off_cache_slots_follow_imb() -> None:
    # 1 KiB messages, 64 B lines: stride = (16 + 1) lines; slots cover 2 x 8 MiB, capped by n0.
    stride, count = off_cache_slots(1024, 8 << 20, 64, 1000)
    assert stride == 17 * 64 and count == 1000
    stride, count = off_cache_slots(1 << 20, 8 << 20, 64, 1000)
    assert count == -(-(16 << 20) // stride)


def test_buffer_set_views_are_disjoint() -> None:
    s = BufferSet(100, (0.01, 64), n0=50)
    assert s.cycling and s.count > 1
    addresses = [v.ctypes.data for v in s.views]
    assert len(set(addresses)) == s.count
    assert all(np.diff(addresses) >= 100)


def test_imb_buffers_below_the_mmap_threshold_start_on_a_cache_line() -> None:
    """Where numpy's heap puts them (16 B past a line), MPICH's nonblocking reductions ran
    at half IMB's speed at 64 KiB (see BufferSet)."""
    for nbytes in (1, 1000, 65536, (128 << 10) - 1):
        sets = [BufferSet(nbytes, fill=5) for _ in range(4)]
        assert all(s.address % 64 == 0 and (s[0] == 5).all() for s in sets)
    big = BufferSet(1 << 20)  # mapped as malloc would: page-aligned, no hugepage advice
    assert big.address % 4096 == 0


def _resident_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def test_b_eff_buffers_stay_untouched_until_written() -> None:
    """As the original's malloc leaves them: zero, and no page resident before a write."""
    before = _resident_kib()
    buf = untouched(64 << 20)
    assert _resident_kib() - before < 8 << 10  # far below the 64 MiB a fill would fault in
    assert buf.size == 64 << 20 and buf.flags.c_contiguous and buf.dtype == np.uint8
    assert not buf[:: 1 << 20].any()
    buf[:] = 1
    assert _resident_kib() - before > 56 << 10  # writing brings the pages in
    assert not untouched(100).any()

