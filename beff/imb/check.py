"""``--check``: fill send buffers with a rank-dependent pattern and verify what arrived.

Verification runs after the timed loop (outside the timed region); each mismatching byte of a
received message counts as one defect. ``BEFF_TEST_CORRUPT=1`` (a test-only hook) makes rank 0
corrupt one byte of its send pattern so the tests can prove that defects are reported.
"""

from __future__ import annotations

import os

import numpy as np

from beff.buffers import BufferSet
from beff.measure import Ctx


def pattern(sender: int, nbytes: int, salt: int = 0) -> np.ndarray:
    """The bytes a rank sends in check mode: depends on the sender rank and the position."""
    return ((np.arange(nbytes, dtype=np.int64) + 31 * sender + 7 * salt) % 251 + 1).astype(
        np.uint8
    )


def fill_send(ctx: Ctx, bufs: BufferSet, salt: int = 0) -> None:
    """In check mode, write the rank's pattern into every send view."""
    if not ctx.cfg.check or bufs.nbytes == 0:
        return
    data = pattern(ctx.rank, bufs.nbytes, salt)
    if ctx.rank == 0 and os.environ.get("BEFF_TEST_CORRUPT") == "1":
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
