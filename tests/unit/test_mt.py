"""IMB-MT's pure parts: partners, options, the thread level, the reductions over threads and
the text layout against IMB 2021.11's own (tests/data/imb-samples/format-sample-mt-np2.txt)."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from beff import runner
from beff.core import suite as suites
from beff.core.config import build_config
from beff.core.errors import UsageError
from beff.imb.mt import job as mt_job
from beff.imb.mt import pairs
from beff.imb.mt.options import check_count, check_switch, threads_from_env
from beff.imb.mt.view import mt_block, mt_header
from beff.results import columns
from beff.results.model import OK, UNSUPPORTED, Measurement

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "imb-samples" / \
    "format-sample-mt-np2.txt"


def imb_lines(text: str) -> list[str]:
    """IMB's own output in a sample: without the recording's ``###`` lines and the blank
    lines around it."""
    lines = [ln for ln in text.split("\n") if not ln.startswith("### ")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def measurement(name: str, times_us: list[list[float]], counts: list[int], threads: int,
                kind: str, cols: tuple[str, ...], bw: float = 1.0, **attrs: object) -> Measurement:
    t = np.array(times_us) * 1e-6
    S, n = t.shape
    return Measurement(
        suite="mt", benchmark=name, kind=kind, nprocs=n // threads, ngroups=1, multi=None,
        idle=0, sizes=np.array(counts) * 4 * threads, repetitions=np.full(S, 100),
        status=[OK if np.isfinite(row).any() else UNSUPPORTED for row in t], times=t,
        group=np.zeros(n, dtype=int), world_ranks=np.repeat(np.arange(n // threads), threads),
        samples=t[:, :, None], batch_iters=np.ones((S, n, 1), dtype=int), bw_scale=bw,
        columns=cols,
        attrs={"threads": threads, "participants": int(np.isfinite(t[0]).sum()), **attrs})


def test_paired_ranks_as_imb_mts_set_stride() -> None:
    assert [pairs.pair(r, 2, 0) for r in range(2)] == [1, 0]
    assert [pairs.pair(r, 4, 0) for r in range(4)] == [2, 3, 0, 1]
    assert [pairs.pair(r, 4, 1) for r in range(4)] == [1, 0, 3, 2]
    # An incomplete trailing pair of groups sits out; so does everyone at P = 1 or s > P/2.
    assert [pairs.pair(r, 3, 0) for r in range(3)] == [1, 0, None]
    assert [pairs.pair(r, 5, 2) for r in range(5)] == [2, 3, 0, 1, None]
    assert pairs.pair(0, 1, 0) is None and pairs.pair(0, 4, 3) is None
    assert pairs.participants("PingPongMT", 3, 0) == [0, 1]
    assert pairs.participants("SendRecvMT", 3, 0) == [0, 1, 2]
    assert [pairs.first(r, 4, 1) for r in range(4)] == [True, False, True, False]
    assert pairs.ring(0, 4, 1) == (3, 1) and pairs.ring(0, 1, 0) == (0, 0)


def test_options_in_imbs_syntax() -> None:
    assert check_count("1, 2,64", "-count") == "1,2,64"
    assert check_count(8, "-count") == "8"
    for bad in ("", "1,x", "-1", str((1 << 28) + 1)):
        with pytest.raises(UsageError, match="-count expects element counts"):
            check_count(bad, "-count")
    assert check_switch("ON", "-check") is True and check_switch("disable", "-check") is False
    with pytest.raises(UsageError, match="-check expects one of"):
        check_switch("maybe", "-check")


def test_threads_come_from_omp_num_threads_as_openmp_reads_it() -> None:
    assert threads_from_env({"OMP_NUM_THREADS": "3"}) == (3, "OMP_NUM_THREADS")
    assert threads_from_env({"OMP_NUM_THREADS": "4,2"}) == (4, "OMP_NUM_THREADS")
    threads, source = threads_from_env({})
    assert threads >= 1 and source.startswith("the CPUs available")
    with pytest.raises(UsageError, match="OMP_NUM_THREADS='two'"):
        threads_from_env({"OMP_NUM_THREADS": "two"})


def test_only_mt_starts_mpi_with_thread_multiple() -> None:
    for suite in suites.suites():
        level = runner.thread_level(suite, {})
        assert level == ("multiple" if suite.name == "mt" else "single"), suite.name
    assert runner.thread_level(suites.get("mt"), {"thread_level": "single"}) == "multiple"


def fake_mpi(provided: int) -> types.ModuleType:
    mpi = types.ModuleType("fake_mpi")
    mpi.Query_thread = lambda: provided  # type: ignore[attr-defined]
    return mpi


@pytest.mark.parametrize("provided,name", [(0, "SINGLE"), (1, "FUNNELED"), (2, "SERIALIZED")])
def test_a_library_without_thread_multiple_is_refused_in_one_line(provided: int,
                                                                   name: str) -> None:
    suite = suites.get("mt")
    cfg = build_config({"suite": "mt", "argv": ["imb", "mt"]})
    with pytest.raises(UsageError) as err:
        mt_job.MTJob(suite).prepare(fake_mpi(provided), cfg)
    assert str(err.value) == ("IMB-MT needs MPI_THREAD_MULTIPLE, but this MPI library provides "
                              f"only MPI_THREAD_{name}")
    job = mt_job.MTJob(suite)
    job.prepare(fake_mpi(3), cfg)  # MPI_THREAD_MULTIPLE: accepted
    assert job.derived["thread_level"] == "multiple" and len(job.names()) == 10


def test_threads_run_at_once_and_errors_come_back() -> None:
    import threading

    meet = threading.Barrier(3, timeout=30)  # passes only if all three run at the same time
    assert mt_job.in_threads(3, lambda k: (meet.wait(), k)[1]) == [0, 1, 2]

    def fail(k: int) -> int:
        if k == 1:
            raise RuntimeError("thread 1 failed")
        return k

    with pytest.raises(RuntimeError, match="thread 1 failed"):
        mt_job.in_threads(2, fail)


def test_buffers_are_aligned_as_asked() -> None:
    for align in (1, 64, 4096, 100):
        buf = mt_job.aligned(1000, align)
        assert buf.ctypes.data % align == 0 and buf.size == 1000 and not buf.any()


def test_reductions_over_ranks_and_threads() -> None:
    # 2 ranks x 2 threads; column j = rank j // 2, thread j % 2.
    m = measurement("PingPongMT", [[1.0, 2.0, 3.0, 6.0]], [64], 2, "parallel_transfer",
                    ("bytes", "repetitions", "t_min", "t_max", "t_avg", "mbytes_per_sec"))
    v = columns.values(m, m.columns)
    assert v["bytes"][0] == 64 * 4 * 2  # IMB-MT's #bytes: count x sizeof(int) x threads
    assert (v["t_min"][0], v["t_max"][0], v["t_avg"][0]) == (1.0, 6.0, 3.0)
    assert v["mbytes_per_sec"][0] == pytest.approx(512 / 6.0)
    # A thread that sat out (NaN) is left out of every figure.
    m = measurement("PingPongMT", [[1.0, np.nan, 3.0, np.nan]], [64], 2, "parallel_transfer",
                    ("t_min", "t_avg"))
    assert columns.values(m, m.columns)["t_min"][0] == 1.0
    # UniBandMT: Mbytes/sec and Msg/sec summed over the pairs of threads.
    m = measurement("UniBandMT", [[2.0, 4.0, 2.0, 4.0]], [1024], 2,
                    "parallel_transfer_msg_rate",
                    ("bytes", "repetitions", "t_avg", "mt_mbytes_per_sec", "mt_msg_per_sec"),
                    window_size=64)
    v = columns.values(m, m.columns)
    pairs_of_threads = 2
    assert v["mt_mbytes_per_sec"][0] == pytest.approx(4096 * pairs_of_threads / 4.0)
    assert v["mt_msg_per_sec"][0] == pytest.approx(pairs_of_threads / 3.0e-6)


def test_text_layout_matches_the_sample_character_for_character() -> None:
    theirs = imb_lines(SAMPLE.read_text())
    pingpong = measurement("PingPongMT", [[10.11, 10.71], [12.90, 12.98]], [1, 64], 1,
                           "parallel_transfer", ("bytes", "repetitions", "t_min", "t_max",
                                                 "t_avg", "mbytes_per_sec"))
    barrier = measurement("BarrierMT", [[34.15, 34.19]], [0], 1, "sync",
                          ("repetitions", "t_min", "t_max", "t_avg"))
    ours = (mt_header({"versions": {"beff": "9.9"}}) + mt_block(pingpong) + mt_block(barrier)
            + "\n").rstrip("\n").split("\n")
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        if b.startswith("#    Intel(R) MPI Benchmarks 2021.11, MT part"):
            assert a == "#    beff 9.9 (Intel(R) MPI Benchmarks 2021.11 layout), MT part    "
        elif b.split()[:1] in (["4"], ["256"], ["100"]):  # rows: avg and bandwidth recomputed
            assert len(a) == len(b) and a.split()[:2] == b.split()[:2]
            assert [float(x) for x in a.split()[2:]] == pytest.approx(
                [float(x) for x in b.split()[2:]], abs=0.011, rel=5e-3)
        else:
            assert a == b


def test_no_successful_executions_block() -> None:
    m = measurement("PingPongMT", [[np.nan]], [1], 1, "parallel_transfer", ("bytes",))
    assert mt_block(m) == ("\n#" + "-" * 77 + "\n# Benchmarking PingPongMT\n"
                           "# NO SUCCESSFUL EXECUTIONS\n#" + "-" * 77 + "\n\n")
