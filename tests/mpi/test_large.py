"""Messages beyond a C int count (beff.core.counts): block types, refused reductions, and one
real message above 2 GiB.

BEFF_TEST_COUNT_LIMIT lowers the count limit, so small messages take the very path that
messages above 2^31 - 1 bytes take.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from beff.results.archive import load
from beff.results.model import Measurement
from tests.mpirun import mpirun, runs

pytestmark = pytest.mark.mpi
LIMIT = 1000
DATA = ["PingPong", "PingPing", "Sendrecv", "Exchange", "Biband", "Allgatherv", "Gatherv",
        "Scatterv", "Alltoallv", "Bcast"]
SIZES = [0, 512, 1024, 2048, 4096]  # -msglog 9:12; 512 is below the limit
# fixed repetitions: no time budget to run out on a loaded node
FIXED = ["-msglog", "9:12", "-iter", "20", "-iter_policy", "off", "-time", "600", "--check"]


def run(nprocs: int, out: Path, suite: str, *args: str, corrupt: bool = False) -> list[Measurement]:
    env = {"BEFF_TEST_COUNT_LIMIT": str(LIMIT), **({"BEFF_TEST_CORRUPT": "1"} if corrupt else {})}
    r = mpirun(nprocs, "imb", suite, *FIXED, *args, "-o", str(out), env=env, timeout=180)
    assert r.returncode == 0, r.stderr
    return load(out).measurements


def test_messages_beyond_the_count_limit_move_as_blocks(tmp_path: Path) -> None:
    got = run(3, tmp_path / "blocks.h5", "mpi1", *DATA, "Allreduce")
    data = [m for m in got if m.benchmark != "Allreduce"]
    assert {m.benchmark for m in data} == set(DATA)
    assert any(m.nprocs == 3 for m in data)  # vector displacements (NP-1)*X pass the limit
    for m in data:
        assert m.sizes.tolist() == SIZES and m.status == ["ok"] * len(SIZES), m.benchmark
        assert m.defects is not None and int(m.defects.sum()) == 0, (m.benchmark, m.defects)
    # A reduction cannot use a block type: up to LIMIT floats it runs, then a failed row
    # with the reason ends it (later process counts included).
    (red,) = [m for m in got if m.benchmark == "Allreduce"]
    assert red.nprocs == 2 and red.sizes.tolist() == SIZES
    assert red.status == ["ok", "ok", "ok", "ok", "failed"]  # 4096 B = 1024 floats > LIMIT
    assert "1024 elements to reduce exceed the 1000" in red.attrs["failure"]


def test_check_sees_a_corrupted_block(tmp_path: Path) -> None:
    got = run(2, tmp_path / "corrupt.h5", "mpi1", "PingPong", "Alltoallv", corrupt=True)
    for m in got:
        assert m.defects is not None, m.benchmark
        big = m.sizes > LIMIT
        assert (m.defects[big] > 0).all(), (m.benchmark, m.defects)


def test_nonblocking_collectives_use_blocks_and_other_suites_refuse(tmp_path: Path) -> None:
    # one job (tests/mpi/runs_script.py), the one-sided suite first: its start sets Open MPI's
    # one-sided workaround, as a job of its own would
    both = runs(2, {name: ["imb", suite, *FIXED, *args] for name, (suite, args) in {
        "ext": ("ext", ["Unidir_Put", "-aggregate_mode", "aggregate"]),
        "nbc": ("nbc", ["Iallgatherv"])}.items()}, tmp_path,
        env={"BEFF_TEST_COUNT_LIMIT": str(LIMIT)})
    for name in ("ext", "nbc"):
        assert both[name].returncode == 0, both[name].stderr
    (nbc,) = load(both["nbc"].out).measurements
    assert nbc.status == ["ok"] * len(SIZES) and nbc.defects is not None
    assert int(nbc.defects.sum()) == 0
    ext = load(both["ext"].out).measurements
    assert ext
    for m in ext:  # the first size above the limit fails with the reason, and ends it
        below = int((m.sizes <= LIMIT).sum())
        assert m.status[:below] == ["ok"] * below and m.status[below] == "failed", m.status
        assert "not supported yet" in m.attrs["failure"]


def _available_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / (1 << 20)
    return 0.0


@pytest.mark.skipif(_available_gib() < 6, reason="needs 6 GiB of free memory (2 x 2 GiB "
                    "buffers, and room to spare)")
def test_a_real_message_above_2_gib(tmp_path: Path) -> None:
    """2^31 + 1 bytes: beyond a C int, and not a whole number of chunks, sent and received
    in one MPI_Sendrecv by one rank (its own partner): the block types of a real message,
    with one send and one receive buffer. (PingPong at 2 ranks faulted in 2 x 4 GiB: 24 s
    and 20 CPU-s on the 2-core machine, nearly all the kernel's; this takes about 4 s.)"""
    out = tmp_path / "big.h5"
    size = 2**31 + 1
    r = mpirun(1, "imb", "mpi1", "-msgsize", str(size), "-mem", "5", "-iter", "1",
               "-iter_policy", "off", "-time", "600", "--hugepages", "Sendrecv", "-o", str(out),
               timeout=300)
    assert r.returncode == 0, r.stderr
    (m,) = load(out).measurements
    assert m.nprocs == 1 and m.sizes.tolist() == [size] and m.status == ["ok"]
    # 2 GiB copied: far above a tiny message's microseconds
    assert m.times.min() > 1e-3
