"""IMB-MT (``beff imb mt``) under mpiexec, at 1 and 2 ranks with 1 and 2 threads per rank:
IMB-MT's layout against its own output, every format, the thread axis in the file, the
thread level obtained, --check and -check, and bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from beff.results.archive import load
from tests.mpirun import Runs, beff, beff_lines, mpirun, runs

pytestmark = [pytest.mark.mpi, pytest.mark.openmpi]  # also in the Open MPI tier of the tests
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "imb-samples" / \
    "format-sample-mt-np2.txt"
ALL = ["AllReduceMT", "BarrierMT", "BcastMT", "BiBandMT", "ExchangeMT", "PingPingMT",
       "PingPongMT", "ReduceMT", "SendRecvMT", "UniBandMT"]
PAIRED = {"BiBandMT", "PingPingMT", "PingPongMT", "UniBandMT"}
QUICK = ["-count", "1,16", "-repeat", "20", "-warmup", "2", "-window_size", "4"]


def _normalize(line: str) -> str:
    return re.sub(r" +", " ", re.sub(r"\d+(\.\d+)?", "0", line)).rstrip()


def _imb_lines(text: str) -> list[str]:
    lines = [ln for ln in text.split("\n") if not ln.startswith("### ")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """The sample's own command, with OMP_NUM_THREADS=1 as the sample ran (threads: 1), and
    -threads 2 (which OMP_NUM_THREADS does not override): one job at 2 ranks
    (tests/mpi/runs_script.py)."""
    return runs(2, {"sample": ["imb", "mt", "-thread_level", "multiple", "-count", "1,64",
                               "-repeat", "100", "-warmup", "10", "PingPongMT", "BarrierMT",
                               "--format", "imb"],
                    "threads": ["imb", "mt", *QUICK, "-threads", "2", "--check", "--format",
                                "json"]},
                tmp_path_factory.mktemp("mt"), env={"OMP_NUM_THREADS": "1"})


def test_imb_text_matches_the_sample_line_for_line(two_ranks: Runs) -> None:
    r = two_ranks["sample"]
    assert r.returncode == 0, r.stderr
    ours, theirs = _imb_lines(r.stdout), _imb_lines(SAMPLE.read_text())
    assert len(ours) == len(theirs), r.stdout
    for a, b in zip(ours, theirs, strict=True):
        if b.startswith("#    Intel(R) MPI Benchmarks"):
            assert a.startswith("#    beff ") and a.endswith(
                " (Intel(R) MPI Benchmarks 2021.11 layout), MT part    ")
        elif b and b[0] == " ":  # table rows and titles: fixed width, numbers aside
            assert len(a) == len(b) and _normalize(a) == _normalize(b)
        else:
            assert a == b
    record = load(r.out)
    assert record.attrs["derived"]["threads"] == 1
    assert record.attrs["derived"]["threads_from"] == "OMP_NUM_THREADS"


def test_two_threads_per_rank_keep_a_thread_axis_in_the_file(two_ranks: Runs) -> None:
    r = two_ranks["threads"]
    out = r.out
    assert r.returncode == 0, r.stderr
    shown = beff("show", str(out), "--format", "json")
    assert shown.returncode == 0 and shown.stdout == r.stdout
    record = load(out)
    assert record.attrs["mpi"]["thread_level"] == "multiple"  # obtained, not only asked for
    assert record.attrs["derived"]["threads"] == 2
    got = {m.benchmark: m for m in record.measurements}
    assert list(got) == ALL  # IMB-MT's order with no names given
    for name, m in got.items():
        S = 1 if name == "BarrierMT" else 2
        assert m.times.shape == (S, 4) and np.all(m.times > 0), name  # 2 ranks x 2 threads
        # -repeat 20 as 10 timed batches of 2, whose sum is the time IMB-MT reports
        assert m.samples.shape == (S, 4, 10) and np.all(m.batch_iters == 2), name
        np.testing.assert_allclose(m.times, m.samples.sum(axis=2) / 20 * m.time_scale)
        assert list(m.world_ranks) == [0, 0, 1, 1] and m.attrs["threads"] == 2, name
        # each column is a (rank, thread) pair, the thread stored as its own coordinate
        assert m.thread is not None and list(m.thread) == [0, 1, 0, 1] and m.threads == 2
        assert m.defects is not None and not m.defects.any(), (name, m.defects)
        if name != "BarrierMT":
            assert list(m.sizes) == [1 * 4 * 2, 16 * 4 * 2], name  # count x int x threads
        assert m.attrs["placement_groups"][0]["ranks"] == [0, 1]
    assert got["UniBandMT"].attrs["window_size"] == 4
    assert got["PingPongMT"].time_scale == 0.5 and got["UniBandMT"].time_scale == 0.25
    doc = json.loads(r.stdout)
    uni = next(e for e in doc["results"] if e["benchmark"] == "UniBandMT")
    m = got["UniBandMT"]
    t_max = np.max(m.times, axis=1)  # IMB-MT: one thread's message x 2 pairs of threads
    assert [row["mbytes_per_sec"] for row in uni["rows"]] == pytest.approx(
        list(m.sizes / 2 * 2 / t_max / 1e6))
    assert uni["threads"] == 2
    for row in uni["rows"]:  # batches give every IMB-MT row an interval
        assert row["batches"] == 10 and \
            row["t_avg_ci_low_us"] <= row["t_avg_us"] <= row["t_avg_ci_high_us"], row


def test_one_rank_two_threads_finds_corruption_in_table_format(tmp_path: Path) -> None:
    out = tmp_path / "one.h5"
    r = mpirun(1, "imb", "mt", *QUICK, "-threads", "2", "-check", "on", "-o", str(out),
               env={"BEFF_TEST_CORRUPT": "1"}, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "MT SendRecvMT — 1 process × 2 threads each" in r.stdout
    for name in sorted(PAIRED):
        assert f"{name} not run on 1 process: no rank has a partner" in r.stderr
    got = {m.benchmark: m for m in load(out).measurements}
    for name, m in got.items():
        if name in PAIRED:
            assert m.unsupported, name
        elif name in ("BarrierMT", "BcastMT"):  # no data, or no receiver besides the root
            assert m.defects is not None and not m.defects.any(), name
        else:  # each thread of rank 0 received (or reduced) its own corrupted element
            per_thread = 2 if name == "ExchangeMT" else 1  # from the left and the right
            assert m.defects is not None and list(m.defects) == [2 * per_thread] * 2, name
    shown = beff("show", str(out), "--format", "imb")
    assert shown.returncode == 0
    assert shown.stdout.count("# NO SUCCESSFUL EXECUTIONS") == 4
    assert "# #processes = 1 (threads: 2)" in shown.stdout


def test_two_ranks_one_thread_finds_corruption_in_csv_format(tmp_path: Path) -> None:
    out = tmp_path / "two.h5"
    r = mpirun(2, "imb", "mt", *QUICK, "-threads", "1", "--check", "-barrier", "special",
               "-o", str(out), "--format", "csv", env={"BEFF_TEST_CORRUPT": "1"}, timeout=180)
    assert r.returncode == 0, r.stderr
    shown = beff("show", str(out), "--format", "csv")
    assert shown.returncode == 0 and shown.stdout == r.stdout
    rows = r.stdout.splitlines()
    assert rows[0].startswith("suite,benchmark,") and len(rows) == 1 + 9 * 2 + 1
    for m in load(out).measurements:
        if m.benchmark == "BarrierMT":
            continue
        # Rank 1 receives rank 0's corrupted element (ExchangeMT: from both sides;
        # AllReduceMT: both ranks get the corrupted sum).
        expected = 2 if m.benchmark in ("ExchangeMT", "AllReduceMT") else 1
        assert m.defects is not None and list(m.defects) == [expected] * 2, m.benchmark


@pytest.mark.parametrize("args,message", [
    (["-count", "1,x"], "-count expects element counts"),
    (["-barrier", "sometimes"], "-barrier expects one of on|off|special"),
    (["-threads", "0.5"], "-threads expects an integer"),
    (["Frobnicate"], "unknown benchmark 'Frobnicate' in suite mt"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str],
                                          message: str) -> None:
    """The option syntax, refused before MPI starts, so without a launcher; what rank 0
    decides after MPI_Init (the thread level, -check of chars, the flags MT lacks):
    tests/mpi/test_bad_input.py."""
    out = tmp_path / "never.h5"
    r = beff("imb", "mt", *args, "-o", str(out))
    assert r.returncode == 2, (r.stdout, r.stderr)
    (line,) = beff_lines(r.stderr)
    assert line.startswith("beff: error: ") and message in line, r.stderr
    assert not out.exists()


def test_list_help_and_describe() -> None:
    listed = beff("imb", "mt", "-list")
    assert listed.returncode == 0, listed.stderr
    for name in ALL:
        assert name in listed.stdout
    helped = beff("imb", "mt", "-help")
    assert helped.returncode == 0 and helped.stdout.startswith(
        "usage: mpiexec -n P beff imb mt [flags] [benchmark names]\n\nIMB-MT")
    assert "-window_size N: messages in flight" in helped.stdout
    assert "-aggregate_mode" not in helped.stdout  # IMB-MT has no such flag
    described = beff("describe", "UniBandMT", "--suite", "mt")
    assert described.returncode == 0 and "-window_size" in described.stdout


def test_the_python_backend_runs_the_threads_too(tmp_path: Path) -> None:
    out = tmp_path / "py.h5"
    r = mpirun(1, "imb", "mt", *QUICK, "-threads", "2", "--check", "--backend", "python",
               "SendRecvMT", "AllReduceMT", "BarrierMT", "-o", str(out), "--format", "imb",
               timeout=120)
    assert r.returncode == 0, r.stderr
    assert "the threads hold the interpreter lock between MPI calls" in r.stderr
    for m in load(out).measurements:
        assert m.attrs["backend"] == "python" and m.times.shape[1] == 2, m.benchmark
        assert np.all(m.times > 0) and (m.defects is None or not m.defects.any()), m.benchmark
