"""``--check``: fill send buffers with a rank-dependent pattern and verify what arrived.

Verification runs after the timed loop (outside the timed region). Data movement is checked
byte by byte, reductions element by element in the reduction type; each mismatch counts as
one defect. The test-only hook :func:`beff.core.testhooks.corrupt` makes rank 0 corrupt the
last byte (for reductions: the last element) of its send pattern so the tests can prove that
defects are reported.
"""

from __future__ import annotations

import numpy as np

from beff.bench.ctx import Ctx
from beff.core import testhooks
from beff.core.buffers import BufferSet

# Reduction patterns hold small integers (1..RED_RANGE), so sums over ranks are exact in every
# reduction type; the injected corruption is far outside that range.
RED_RANGE = 8
RED_CORRUPTION = 64


def corrupting(ctx: Ctx) -> bool:
    """Whether this rank injects a defect (test hook, rank 0 of the group only)."""
    return ctx.rank == 0 and testhooks.corrupt()


def pattern(sender: int, nbytes: int, salt: int = 0) -> np.ndarray:
    """The bytes a rank sends in check mode: depends on the sender rank and the position."""
    period = ((np.arange(251) + 31 * sender + 7 * salt) % 251 + 1).astype(np.uint8)
    return np.resize(period, nbytes)  # periodic: no int64 array as large as the message


def fill_send(ctx: Ctx, bufs: BufferSet, salt: int = 0) -> None:
    """In check mode, write the rank's pattern into every send view."""
    if not ctx.cfg.check or bufs.nbytes == 0:
        return
    data = pattern(ctx.rank, bufs.nbytes, salt)
    if corrupting(ctx):
        data[-1] ^= 0xFF
    for view in bufs.views:
        view[:] = data


def count_defects(got: np.ndarray, expected: np.ndarray) -> int:
    return int(np.count_nonzero(got != expected))


def expected_bytes(ctx: Ctx, bufs: BufferSet, sender: int, salt: int = 0) -> None:
    """In check mode, compare the last-received view against ``sender``'s pattern."""
    if not ctx.cfg.check or bufs.nbytes == 0 or sender < 0:
        return
    ctx.defects += count_defects(bufs[0], pattern(sender, bufs.nbytes, salt))


def red_pattern(sender: int, count: int, dtype: np.dtype[np.generic]) -> np.ndarray:
    """The elements a rank contributes to a reduction in check mode (small integers)."""
    period = ((np.arange(RED_RANGE) + 3 * sender) % RED_RANGE + 1).astype(dtype)
    return np.resize(period, count)


def red_sum(nprocs: int, count: int, dtype: np.dtype[np.generic]) -> np.ndarray:
    """MPI_SUM of every rank's :func:`red_pattern`, in the reduction type."""
    total = np.zeros(count, dtype=dtype)
    for p in range(nprocs):
        total += red_pattern(p, count, dtype)
    return total


def fill_reduction(ctx: Ctx, bufs: BufferSet, dtype: np.dtype[np.generic]) -> None:
    """In check mode, write the rank's reduction pattern into every send view."""
    count = bufs.nbytes // dtype.itemsize
    if not ctx.cfg.check or count == 0:
        return
    data = red_pattern(ctx.rank, count, dtype)
    if corrupting(ctx):
        data[-1] += RED_CORRUPTION
    for view in bufs.views:
        view.view(dtype)[:] = data


def expect_bytes(ctx: Ctx, got: np.ndarray, expected: np.ndarray) -> None:
    """Add the number of bytes of ``got`` that differ from ``expected`` to the defects."""
    ctx.defects += count_defects(got, expected)


def expect_elements(ctx: Ctx, got: np.ndarray, expected: np.ndarray) -> None:
    """Add the number of reduction elements that differ (``got`` is the raw byte view)."""
    ctx.defects += count_defects(got.view(expected.dtype), expected)
