"""Messages beyond a C int: element counts above 2^31 - 1 (``-msglog`` up to 34).

MPI's classic calls take ``int`` counts and displacements; MPI-4 added ``_c`` variants, which
MPICH has and the Open MPI 5.0 wheel lacks. beff instead sends such a message as one element
of a contiguous datatype that spans it (a block type, made per message size), which every
MPI supports and moves as plain contiguous bytes. Vector collectives then count and displace
in blocks. A predefined reduction (MPI_SUM) cannot work on a derived datatype, so a
reduction whose element count exceeds the limit is refused with the reason.
"""

from __future__ import annotations

import os
from typing import Any

INT_MAX = 2**31 - 1
CHUNK = 1 << 20  # elements per chunk inside a block type
# Test-only hook: a lower limit, so that small messages take the block-type path.
LIMIT_ENV = "BEFF_TEST_COUNT_LIMIT"
# The suites whose kernels honour the limit (MPI-1 point-to-point and collectives, and the
# nonblocking and persistent collectives built on them); others refuse such sizes.
SUITES = frozenset({"mpi1", "nbc", "mpi4"})


def limit() -> int:
    """The largest count or displacement a call takes as is."""
    value = os.environ.get(LIMIT_ENV)
    return max(1, int(value)) if value else INT_MAX


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
