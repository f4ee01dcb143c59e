"""Messages beyond a C int: element counts above 2^31 - 1 (``-msglog`` up to 34).

MPI's classic calls take ``int`` counts and displacements; MPI-4 added ``_c`` variants, which
MPICH has and the Open MPI 5.0 wheel lacks. beff instead sends such a message as one element
of a contiguous datatype that spans it (a block type, made per message size), which every
MPI supports and moves as plain contiguous bytes. Vector collectives then count and displace
in blocks. A predefined reduction (MPI_SUM) cannot work on a derived datatype, so a
reduction whose element count exceeds the limit is refused with the reason.
"""

from __future__ import annotations

from typing import Any

from beff.core import testhooks

INT_MAX = 2**31 - 1
CHUNK = 1 << 20  # elements per chunk inside a block type


def limit() -> int:
    """The largest count or displacement a call takes as is (lower under the test hook
    :func:`beff.core.testhooks.count_limit`, so that small messages take the block-type
    path)."""
    return testhooks.count_limit() or INT_MAX


def block_type(MPI: Any, dtype: Any, count: int) -> Any:
    """A committed datatype of ``count`` consecutive ``dtype`` elements (``count`` may exceed
    a C int); the caller frees it."""
    chunk_len = min(CHUNK, limit())
    q, r = divmod(count, chunk_len)
    chunk = dtype.Create_contiguous(chunk_len)
    body = chunk.Create_contiguous(q)
    if r:
        extent = dtype.Get_extent()[1]
        block = MPI.Datatype.Create_struct([1, r], [0, q * chunk_len * extent], [body, dtype])
        body.Free()
    else:
        block = body
    chunk.Free()
    block.Commit()
    return block


def too_large_reduction(count: int) -> str:
    """The reason a reduction of ``count`` elements cannot run."""
    return (f"{count} elements to reduce exceed the {limit()} a C int allows; MPI's reduction "
            "operations need a predefined datatype, so beff does not split them into blocks")
