"""b_eff_io (``beff io``) under real MPI at 1-4 ranks, on the disk and on a tmpfs: the quick
mode, b_eff_io recomputed independently from the raw data of the result file, --check with
an injected defect, a file system that fills up, bad input. After every test the I/O
directory holds no files."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from beff.io.plan import default_partitions
from beff.results.archive import load
from tests.mpirun import (
    assert_failed_without_files,
    assert_watchdog_fired,
    beff,
    launcher,
    mpirun,
    stop_a_rank_of,
)
from tests.scratch import emptied, scratch_dir

pytestmark = pytest.mark.mpi

FINAL = re.compile(r"^ b_eff_io = +[\d.]+ MB/s on \d+ processes with +\d+ MByte/PE, scheduled "
                   r"time=\d+\.\d Min, on \S+ ", re.M)


def run_quick(nprocs: int, io_dir: Path, out: Path, *args: str,
              env: dict[str, str | None] | None = None) -> dict[str, Any]:
    r = mpirun(nprocs, "io", "--quick", "--dir", str(io_dir), "-o", str(out), "--format",
               "json", *args, env=env, timeout=240)
    assert r.returncode == 0, r.stderr
    (summary,) = json.loads(r.stdout)["results"]
    assert summary["suite"] == "beffio"
    return summary


def recompute(path: Path) -> tuple[float, int, list[float]]:
    """b_eff_io from the raw datasets alone (h5py, no beff code): per type its bytes over all
    ranks / (open + patterns + close), the averages with type 0 twice, WR with type 0's
    rewrite, the geometric mean with the read average, the maximum over partitions."""
    with h5py.File(path, "r") as f:
        g = f["beffio"]
        parts = g["partitions"][()]
        call, reps, t_pat = g["call"][()], g["repetitions"][()], g["t_pattern"][()]
        t_open, t_close, ptype = g["t_open"][()], g["t_close"][()], g["ptype"][()]
        rewrite_all = bool(g.attrs["rewrite_all"])
    per_partition = []
    for i, n in enumerate(parts):
        bw = np.zeros((3, 5))
        for a in range(3):
            for t in range(5):
                if a == 1 and t > 0 and not rewrite_all:
                    continue
                sel = ptype == t
                nbytes = (call[i, sel] * reps[a, i, sel]).sum() * n
                bw[a, t] = nbytes / (t_open[a, i, t] + t_pat[a, i, sel].sum() + t_close[a, i, t])
        wr = (bw[0].sum() + bw[1, 0]) / 6
        read = (2 * bw[2, 0] + bw[2, 1:].sum()) / 6
        per_partition.append(math.sqrt(wr * read) / 1e6)
    best = int(np.argmax(per_partition))
    return per_partition[best], int(parts[best]), per_partition


# -T: the scheduled time in seconds (--quick's own, 2 s per partition, at 1 and 2 ranks)
@pytest.mark.parametrize("nprocs, kind, T", [(1, "disk", None), (2, "tmpfs", None),
                                             (3, "disk", 1), (4, "tmpfs", 1)])
def test_quick_at_1_to_4_ranks(nprocs: int, kind: str, T: int | None, tmp_path: Path) -> None:
    out = tmp_path / "q.h5"
    with emptied(scratch_dir(kind, tmp_path)) as io_dir:
        doc = run_quick(nprocs, io_dir, out, *(["--check"] if nprocs == 2 else []),
                        *(["-T", str(T)] if T else []))
    assert doc["mode"] == "quick" and doc["partitions"] == default_partitions(nprocs)
    assert doc["scheduled_time_s"] == (T or 2.0 * len(doc["partitions"]))
    assert doc["lmax_bytes"] == 2 << 20
    for part in doc["per_partition"]:
        assert part["complete"] and part["errors"] == 0
        assert part["b_eff_io_MBps"] > 0 and not part["valid"]
        assert part["criteria"] == {"scheduled_time": False, "shared_file_pointer": True,
                                    "no_errors": True}
        assert part["defects"] == (0 if nprocs == 2 else None)
        # Every pattern of every type ran, with one cell per table row.
        assert all(len(cells) == 8 if t == "scatter" else len(cells) == 7
                   for t, cells in part["patterns_MBps"]["write"].items())
        assert list(part["patterns_MBps"]["rewrite"]) == ["scatter"]
    assert FINAL.match(doc["final_line"]) and doc["final_line"].endswith(
        "NOT VALID (see above), QUICK (beff io --quick: a first look)")
    value, n, per_partition = recompute(out)
    # The JSON keeps 6 decimals of MB/s.
    assert doc["b_eff_io_MBps"] == pytest.approx(value, abs=1e-6)
    assert doc["nprocs_at_max"] == n
    assert [p["b_eff_io_MBps"] for p in doc["per_partition"]] == pytest.approx(per_partition,
                                                                                abs=1e-6)
    record = load(out)
    assert record.attrs["status"] == "complete" and record.result("beffio") is not None
    assert record.attrs["io"]["file_system"]["fstype"] == ("tmpfs" if kind == "tmpfs" else
                                                          record.attrs["io"]["file_system"]
                                                          ["fstype"])
    rec = record.result("beffio")
    # Rewrite and read replay the write phase's repetitions; types 3/4 fill whole MiB.
    done = rec.repetitions[0] >= 0
    assert np.array_equal(rec.repetitions[2][done], rec.repetitions[0][done])
    assert np.all(rec.segment % (1 << 20) == 0) and np.all(rec.segment > 0)
    # Every member rank's parts are stored; ranks outside a partition have none.
    for i, size in enumerate(rec.partitions):
        parts = rec.parts[0, i, 0]
        assert np.all(np.isfinite(parts[:size])) and np.all(np.isnan(parts[size:]))


@pytest.mark.parametrize("io_dir", ["tmpfs"], indirect=True)  # the layout: one file system
def test_show_renders_the_sum_layout_and_the_final_line(io_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.h5"
    doc = run_quick(2, io_dir, out, "--rewrite", "-N", "2", "-T", "1")
    assert doc["partitions"] == [2] and doc["rewrite_all"]
    assert set(doc["per_partition"][0]["patterns_MBps"]["rewrite"]) == {
        "scatter", "shared", "separated", "segmented", "seg_coll"}
    text = beff("show", str(out), "--format", "sum").stdout
    assert "Summary of file I/O bandwidth accumulated on   2 processes" in text
    assert re.search(r"^   2 PEs 7  2097152 rewrite( +\d+\.\d{3}){5}$", text, re.M)
    assert text.rstrip().endswith(doc["final_line"].rstrip())
    live = mpirun(1, "io", "--quick", "-T", "1", "--dir", str(io_dir), "-o",
                  str(tmp_path / "l.h5"), "--format", "sum", timeout=120)
    assert live.returncode == 0, live.stderr
    assert "Summary of file I/O bandwidth accumulated on   1 processes" in live.stdout
    assert FINAL.search(live.stdout)
    table = beff("show", str(out)).stdout
    assert "b_eff_io of these measurements" in table and doc["final_line"] in table.replace(
        "\n", "")


def test_check_finds_injected_defect(tmp_path: Path) -> None:
    """Rank 0 writes one wrong double per call (not a stamp): --check sees it (a run
    without --check counts no defects: test_quick_at_1_to_4_ranks at 1, 3 and 4 ranks)."""
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    env: dict[str, str | None] = {"BEFF_TEST_CORRUPT": "1"}
    doc = run_quick(2, io_dir, tmp_path / "c.h5", "--check", "-N", "2", "-T", "1", env=env)
    part = doc["per_partition"][0]
    assert part["errors"] == 0 and part["defects"] > 0
    assert list(io_dir.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_full_file_system(tmp_path: Path) -> None:
    """A 6 MiB tmpfs fills up in the write phase: every rank ends cleanly with 'disk full'
    (exit 1, no hang), the result file is readable, and no file is left."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        out = tmp_path / "full.h5"
        r = mpirun(2, "io", "--quick", "--dir", str(mnt), "-o", str(out), timeout=240,
                   env={"BEFF_TEST_NO_SPACE_CHECK": "1"})
        assert r.returncode == 1, r.stderr
        assert "disk full" in r.stderr and "Traceback" not in r.stderr
        record = load(out)
        assert record.attrs["status"] == "failed"
        result = record.result("beffio")
        assert result is not None and "disk full" in result.failure
        assert list(mnt.iterdir()) == []
        # Without the test hook the space check refuses before writing.
        r = mpirun(2, "io", "--quick", "--dir", str(mnt), "--memory-per-proc", "2GiB",
                   "-o", str(tmp_path / "nospace.h5"), timeout=240)
        assert r.returncode == 1 and "skipped: it needs" in r.stderr, r.stderr
        assert "64 MiB are kept free there for the result file" in r.stderr, r.stderr
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)])


@pytest.mark.parametrize("rank", [0, 1])
def test_an_exception_on_a_rank_removes_every_ranks_files(rank: int, tmp_path: Path) -> None:
    """One rank fails with its own file of the "separated" type open; the other rank goes on
    until MPI_Abort ends it. No file of the run is left, and the file says aborted."""
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    out = tmp_path / "f.h5"
    r = mpirun(2, "io", "--quick", "-T", "1", "--dir", str(io_dir), "-o", str(out),
               env={"BEFF_TEST_FAIL": f"{rank}:b_eff_io/separated"}, timeout=120)
    assert_failed_without_files(r, rank, io_dir, out)


def test_a_stopped_rank_trips_the_watchdog(tmp_path: Path) -> None:
    """SIGSTOP one rank in the write phase: rank 0's guard fires within --stall-timeout,
    aborts the job and removes the scratch files."""
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    out = tmp_path / "stopped.h5"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "io", "-T", "60", "-N", "2",
           "--memory-per-proc", "256MiB", "--stall-timeout", "4", "--dir", str(io_dir),
           "-o", str(out), "--no-progress"]
    # stop a rank once the write phase has begun
    proc, err, waited = stop_a_rank_of(cmd, str(out), ready=lambda: any(io_dir.iterdir()))
    assert_watchdog_fired(proc, err, waited, 4)
    assert list(io_dir.iterdir()) == []
    assert load(out).attrs["status"] == "aborted"
