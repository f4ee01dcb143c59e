"""IMB-IO under real MPI at 1-4 ranks, on the disk and on a tmpfs: every benchmark, --check
(clean and with an injected defect), a file system that fills up mid-run, bad --io-dir, the
removal of a killed or failed run's files, and the IMB layout. After every test the I/O
directory holds no files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from beff.bench.registry import load_suite
from beff.results.archive import load
from beff.results.model import FAILED, OK
from tests.mpirun import assert_failed_without_files, mpirun

pytestmark = pytest.mark.mpi

IO = load_suite("io")


def nonblocking(name: str) -> bool:
    return name.split("_")[1].startswith("I")
# Small and quick, and no time budget to run out on a loaded node: fixed repetitions (I* pay
# IMB-IO's 10 ms CPU kernel per transfer).
QUICK = ["-msglog", "0:3", "-iter", "10,1,5", "-iter_policy", "off", "-time", "600"]
# The fewest: 2 sizes, 2 repetitions.
FEWEST = ["-msglog", "0:0", "-iter", "2,1,1", "-iter_policy", "off", "-time", "600"]


def run_io(nprocs: int, io_dir: Path, out: Path, *args: str,
           env: dict[str, str | None] | None = None, timeout: float = 300,
           quick: list[str] = QUICK) -> dict:
    r = mpirun(nprocs, "imb", "io", *quick, "--io-dir", str(io_dir), *args, "-o", str(out),
               "--format", "json", env=env, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_all_37_at_two_ranks(io_dir: Path, tmp_path: Path) -> None:
    doc = run_io(2, io_dir, tmp_path / "all.h5", quick=FEWEST)
    names = {r["benchmark"] for r in doc["results"]}
    assert names == {spec.name for spec in IO.values()} and len(names) == 37
    record = load(tmp_path / "all.h5")
    assert record.attrs["status"] == "complete"
    io = record.attrs["io"]
    assert io["directory"] == str(io_dir.resolve())
    fstype = io["file_system"]["fstype"]
    assert fstype == "tmpfs" if str(io_dir).startswith("/dev/shm") else fstype != "unknown"
    assert io["mpiio"] in ("ROMIO", "OMPIO")
    overlapped = set()
    for m in record.measurements:
        spec = IO[m.benchmark.lower()]
        # fixed repetitions: no time-out; sizes 0 and 1 (Open_Close: one row)
        assert m.status == [OK] * (1 if m.benchmark == "Open_Close" else 2), \
            (m.benchmark, m.status)
        assert (m.repetitions == 2).all(), (m.benchmark, m.repetitions)
        t = m.times
        assert np.all(np.isfinite(t)) and np.all(t >= 0)
        if "Read" in m.benchmark:
            assert m.mode == "aggregate" and m.attrs["page_cache"] == "cached"
        if nonblocking(m.benchmark):
            overlapped.add(m.benchmark)
            cpu = m.more_times["t_cpu"][0]
            # IMB-IO's CPU kernel, calibrated to about 10 ms at the start: a load that
            # eases later makes it shorter (1.3 ms seen at load 4), but never near the
            # microseconds of a transfer without it
            assert np.all(cpu > 1e-4)
        if spec.procs == 1:
            assert m.nprocs == 1 and m.idle == 1
    assert overlapped == {name for name in names if nonblocking(name)}  # every I*'s overlap


def test_modes_and_counts(tmp_path: Path) -> None:
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    # IMB's dynamic repetitions, whose start counts this test checks; -iter caps them, and
    # a generous -time keeps IMB's budget per count (2 x -time here) from ending a mode early
    # on a busy machine (a time-out at 2 processes skips 3)
    doc = run_io(3, io_dir, tmp_path / "m.h5", "P_Write_Expl", "S_Read_Indv", "C_Write_Shared",
                 "Open_Close", "-aggregate_mode", "non_aggregate",
                 quick=["-msglog", "0:3", "-time", "10", "-iter", "10,1,5"])
    runs = {(r["benchmark"], r["mode"], r["nprocs"]) for r in doc["results"]}
    # -npmin defaults to 1 (IMB-IO): 1, 2, then all 3; reads have the aggregate mode only.
    assert runs == {("P_Write_Expl", "non-aggregate", n) for n in (1, 2, 3)} | {
        ("C_Write_Shared", "non-aggregate", n) for n in (1, 2, 3)} | {
        ("S_Read_Indv", "aggregate", 1)} | {("Open_Close", "", n) for n in (1, 2, 3)}
    reps = {(r["benchmark"], r["nprocs"]): r["rows"][0]["repetitions"] for r in doc["results"]}
    assert reps[("Open_Close", 3)] <= 5  # msgs_nonaggr of -iter 20,1,5
    assert list(io_dir.iterdir()) == []


@pytest.mark.parametrize("nprocs", [1, 4])
def test_check_clean(nprocs: int, tmp_path: Path) -> None:
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    doc = run_io(nprocs, io_dir, tmp_path / "c.h5", "--check", "P_Write_Indv", "C_Write_Expl",
                 "P_Read_Priv", "C_Read_Shared", "S_Read_Expl", "P_IRead_Expl")
    checked = [row for r in doc["results"] for row in r["rows"] if row["status"] == "ok"]
    assert checked and all(row["defects"] == 0 for row in checked)
    assert list(io_dir.iterdir()) == []


def test_check_finds_injected_defect(tmp_path: Path) -> None:
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    doc = run_io(2, io_dir, tmp_path / "d.h5", "--check", "P_Write_Expl", "C_Read_Indv",
                 env={"BEFF_TEST_CORRUPT": "1"})
    defects = {(r["benchmark"], r["nprocs"]): max(row["defects"] for row in r["rows"]
                                                  if row["status"] == "ok")
               for r in doc["results"]}
    # rank 0 writes one wrong byte, and sees one wrong byte in what it read
    assert defects[("P_Write_Expl", 2)] >= 1 and defects[("C_Read_Indv", 2)] >= 1
    assert list(io_dir.iterdir()) == []


def test_layout_of_a_live_run(tmp_path: Path) -> None:
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    r = mpirun(2, "imb", "io", *QUICK, "--io-dir", str(io_dir), "S_Write_Indv", "P_IRead_Indv",
               "Open_Close", "-npmin", "2", "-o", str(tmp_path / "l.h5"), "--format", "imb")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "MPI-IO part" in text and "# Minimum io portion in bytes:   0" in text
    assert "# Maximum io portion in bytes:   8" in text
    assert "# Function CPU_Exploit obtains an undisturbed" in text
    assert "( 1 additional process waiting in MPI_Barrier)" in text  # S_Write_Indv
    assert "#    MODE: NON-AGGREGATE " in text
    header = ("       #bytes #repetitions t_ovrl[usec] t_pure[usec]  t_CPU[usec]   "
              "overlap[%]")
    assert header in text
    assert " #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]" in text  # Open_Close
    assert "#" + "-" * 51 + "\n# Benchmarking S_Write_Indv " in text
    assert list(io_dir.iterdir()) == []


def test_killed_runs_files_are_removed(tmp_path: Path) -> None:
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = os.uname().nodename.replace(".", "-")
    stale = io_dir / f"beff-io.{host}.{dead.pid}.abcd1234.P_Write_Indv_agg_np2_g0"
    stale.write_bytes(b"left by a killed run")
    other = io_dir / "unrelated.txt"
    other.write_text("keep me")
    r = mpirun(1, "imb", "io", *QUICK, "--io-dir", str(io_dir), "Open_Close", "-o",
               str(tmp_path / "k.h5"))
    assert r.returncode == 0, r.stderr
    assert "removed 1 file left in" in r.stderr
    assert not stale.exists() and other.exists()
    assert load(tmp_path / "k.h5").attrs["io"]["stale_removed"] == [stale.name]
    other.unlink()


@pytest.mark.parametrize("rank", [0, 1])
def test_an_exception_on_a_rank_removes_every_ranks_files(rank: int, tmp_path: Path) -> None:
    """One rank fails once both ranks have their own file of P_Read_Priv. The other rank goes
    on (it may open, and so create again, its file) until MPI_Abort kills it, so the failing
    rank removes the run's files, and once more just before MPI_Abort."""
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    out = tmp_path / "f.h5"
    r = mpirun(2, "imb", "io", *QUICK, "--io-dir", str(io_dir), "-npmin", "2",
               "P_Write_Priv", "P_Read_Priv", "-o", str(out),
               env={"BEFF_TEST_FAIL": f"{rank}:P_Read_Priv/file"}, timeout=120)
    record = assert_failed_without_files(r, rank, io_dir, out)
    assert {m.benchmark for m in record.measurements} == {"P_Write_Priv"}


def test_keep_files_keeps_them(tmp_path: Path) -> None:
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    run_io(2, io_dir, tmp_path / "keep.h5", "P_Write_Priv", "-npmin", "2", "--keep-files")
    kept = sorted(p.name for p in io_dir.iterdir())
    assert len(kept) == 4 and all(n.startswith("beff-io.") for n in kept)  # 2 modes x 2 ranks
    for p in io_dir.iterdir():
        p.unlink()


def test_hints_are_passed_and_recorded(tmp_path: Path) -> None:
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    hints = tmp_path / "hints"
    hints.write_text("# ROMIO hints\ncb_buffer_size 1048576\n")
    run_io(2, io_dir, tmp_path / "h.h5", "C_Write_Indv", "-npmin", "2", "--hints", str(hints),
           "--hint", "romio_cb_write=enable")
    record = load(tmp_path / "h.h5")
    assert record.attrs["io"]["hints_requested"] == {"cb_buffer_size": "1048576",
                                                     "romio_cb_write": "enable"}
    effective = record.measurements[0].attrs["hints"]
    assert isinstance(effective, dict) and effective  # what MPI_File_get_info reports


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_full_file_system_mid_run(tmp_path: Path) -> None:
    """A 2 MiB tmpfs fills up during P_Write_Expl: that benchmark ends with a 'disk full' row,
    its earlier sizes and the next benchmark are kept, and no file is left."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        out = tmp_path / "full.h5"
        r = mpirun(2, "imb", "io", "-msglog", "9:12", "-iter", "1000,4,5", "-iter_policy",
                   "off", "-time", "600",
                   "-npmin", "2", "-aggregate_mode", "aggregate", "--io-dir", str(mnt),
                   "P_Write_Expl", "Open_Close", "-o", str(out),
                   env={"BEFF_TEST_NO_SPACE_CHECK": "1"}, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "disk full" in r.stdout + r.stderr
        record = load(out)
        assert record.attrs["status"] == "complete"
        write, opcl = record.measurements
        assert write.benchmark == "P_Write_Expl" and FAILED in write.status
        assert write.status[0] == OK  # 0 bytes
        assert "disk full" in write.attrs["failure"]
        assert opcl.benchmark == "Open_Close" and opcl.status == [OK]
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)])


def test_drop_cache_is_applied_recorded_and_labelled(io_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "drop.h5"
    run_io(2, io_dir, out, "--drop-cache", "S_Read_Indv", "P_Read_Expl", "C_Read_Shared",
           "P_Write_Indv")
    record = load(out)
    assert record.attrs["io"]["drop_cache"] is True
    labels = {m.benchmark: m.attrs["page_cache"] for m in record.measurements}
    assert labels == {"S_Read_Indv": "dropped", "P_Read_Expl": "dropped",
                      "C_Read_Shared": "dropped", "P_Write_Indv": ""}
    for m in record.measurements:
        assert all(s == OK for s in m.status), (m.benchmark, m.status)
