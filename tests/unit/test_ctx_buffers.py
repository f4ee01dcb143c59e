"""A kernel's buffers over the sizes of one benchmark (no MPI: buffers need none)."""

from __future__ import annotations

import types
from typing import Any

from beff.bench.ctx import Ctx
from beff.bench.registry import load_suite
from beff.core.config import RunConfig


def _ctx() -> Ctx:
    spec = load_suite("mpi1")["pingpong"]
    comm: Any = None
    return Ctx(types.ModuleType("MPI"), comm, RunConfig(), spec)


def test_each_size_lays_its_buffers_in_the_memory_of_the_one_before() -> None:
    ctx = _ctx()
    addresses = []
    for nbytes in (1 << 20, 4096, 0):
        ctx.begin_size()
        sb, rb = ctx.buffers(nbytes, fill=3), ctx.buffers(nbytes)
        addresses.append((sb.address, rb.address))
        assert (sb[0] == 3).all() and not rb[0].any() and sb.address != rb.address
    assert len(set(addresses)) == 1 and len(ctx.pool) == 2


def test_a_larger_size_gets_new_memory_and_keeps_it_for_the_next() -> None:
    ctx = _ctx()
    ctx.begin_size()
    small = ctx.buffers(100).address
    ctx.begin_size()
    big = ctx.buffers(1 << 20)
    ctx.begin_size()
    again = ctx.buffers(1 << 19)
    assert big.address != small and again.address == big.address and len(ctx.pool) == 1
