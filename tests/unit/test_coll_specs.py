"""The IMB-MPI1 collective definitions as data: names, order, flags and buffer sizes (no MPI)."""

from __future__ import annotations

import numpy as np
import pytest

from beff.bench import check
from beff.bench.ctx import Tally
from beff.bench.plan import buffer_bytes, sizes_for
from beff.bench.registry import Kind, load_suite, resolve
from beff.core import suite as suites
from beff.core.config import RunConfig, build_config

# IMB 2021.11 `IMB-MPI1 -list`: the default benchmarks in run order.
IMB_DEFAULTS = [
    "PingPong", "PingPing", "Sendrecv", "Exchange", "Allreduce", "Reduce", "Reduce_local",
    "Reduce_scatter", "Reduce_scatter_block", "Allgather", "Allgatherv", "Gather", "Gatherv",
    "Scatter", "Scatterv", "Alltoall", "Alltoallv", "Bcast", "Barrier",
]
COLLECTIVES = IMB_DEFAULTS[4:]

# name: (rooted, reduction, send_np, recv_np), from IMB's HAS_ROOT/REDUCTION flags and its
# SENDBUF_SIZE_NUM_PROC_I/RECVBUF_SIZE_NUM_PROC_I buffer factors.
FLAGS = {
    "Allreduce": (False, True, False, False),
    "Reduce": (True, True, False, False),
    "Reduce_local": (False, True, False, False),
    "Reduce_scatter": (False, True, True, False),
    "Reduce_scatter_block": (False, True, True, False),
    "Allgather": (False, False, False, True),
    "Allgatherv": (False, False, False, True),
    "Gather": (True, False, False, True),
    "Gatherv": (True, False, False, True),
    "Scatter": (True, False, True, False),
    "Scatterv": (True, False, True, False),
    "Alltoall": (False, False, True, True),
    "Alltoallv": (False, False, True, True),
    "Bcast": (True, False, False, False),
}


def cfg_of(suite: str = "mpi1", **values: object) -> RunConfig:
    """A validated config of ``suite`` with ``values`` as if given by flags."""
    return build_config(values, suite=suites.get(suite))


def test_default_list_is_imbs_19_in_order() -> None:
    assert [s.name for s in resolve("mpi1", [], [], [])] == IMB_DEFAULTS
    table = load_suite("mpi1")
    assert [s.name for s in table.values() if s.default] == IMB_DEFAULTS


def test_names_match_case_insensitively() -> None:
    assert [s.name for s in resolve("mpi1", ["reduce_SCATTER_block", "BARRIER"], [], [])] == [
        "Reduce_scatter_block", "Barrier"]


@pytest.mark.parametrize("name", list(FLAGS))
def test_collective_flags(name: str) -> None:
    spec = load_suite("mpi1")[name.lower()]
    assert spec.kind is Kind.COLLECTIVE
    assert (spec.rooted, spec.reduction, spec.send_np, spec.recv_np) == FLAGS[name]
    assert (spec.sendbuf, spec.recvbuf) == (1.0, 1.0)
    assert spec.procs is None and spec.time_scale == 1.0 and not spec.has_bandwidth
    assert "Timed" in spec.description and spec.bytes_counted


def test_barrier_is_sync_without_buffers() -> None:
    spec = load_suite("mpi1")["barrier"]
    assert spec.kind is Kind.SYNC and not spec.rooted and not spec.reduction
    assert (spec.sendbuf, spec.recvbuf) == (0.0, 0.0)
    assert buffer_bytes(spec, 1 << 22, 4, cfg_of(), 1000) == 0
    assert len(sizes_for(spec, cfg_of())) == 1


def test_buffer_sizes_follow_imb_factors() -> None:
    table, cfg, x, p = load_suite("mpi1"), cfg_of(), 1024, 4
    need = {name: buffer_bytes(table[name.lower()], x, p, cfg, 1000) for name in FLAGS}
    assert need["Allreduce"] == need["Bcast"] == 2 * x
    assert need["Gather"] == need["Scatter"] == need["Reduce_scatter"] == x + p * x
    assert need["Alltoall"] == need["Alltoallv"] == 2 * p * x
    # IMB counts at least 4 bytes per buffer (init_size = max(X, 4)).
    assert buffer_bytes(table["allgather"], 0, p, cfg, 1000) == 4 + p * 4


def test_reduction_sizes_are_multiples_of_the_reduction_type() -> None:
    table = load_suite("mpi1")
    cfg = cfg_of(msglog_min=0, msglog_max=5)
    for name in COLLECTIVES[:-1]:
        sizes = sizes_for(table[name.lower()], cfg)
        if FLAGS[name][1]:
            assert sizes == [0, 4, 8, 16, 32]
        else:
            assert sizes == [0, 1, 2, 4, 8, 16, 32]
    dbl = cfg_of(msglog_min=0, msglog_max=5, red_data_type="double", data_type="int")
    assert sizes_for(table["allreduce"], dbl) == [0, 8, 16, 32]
    assert sizes_for(table["gather"], dbl) == [0, 4, 8, 16, 32]


def test_tally_counts_slot_uses() -> None:
    t = Tally()
    assert t.last == -1
    t.runs += [1, 10, 7]
    assert t.last == 6
    assert [t.uses(j, 4) for j in range(4)] == [1 + 3 + 2, 3 + 2, 2 + 2, 2 + 1]
    assert sum(t.uses(j, 4) for j in range(4)) == 18


@pytest.mark.parametrize("dtype", ["int8", "int32", "float32", "float64"])
def test_reduction_pattern_sums_are_exact(dtype: str) -> None:
    dt = np.dtype(dtype)
    total = check.red_sum(64, 100, dt)
    exact = np.sum([check.red_pattern(p, 100, np.dtype(np.int64)) for p in range(64)], axis=0)
    assert np.array_equal(total, exact.astype(dt))  # int8 wraps like C's char arithmetic
    assert check.red_pattern(0, 100, dt).min() >= 1
