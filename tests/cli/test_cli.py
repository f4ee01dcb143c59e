"""The CLI without mpirun, and bad input under mpirun (exit 2 on every rank, quickly)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.mpirun import beff, mpirun

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden-schema-v1.h5"


def test_help_version_and_list_work_without_mpi() -> None:
    r = beff("--help")
    assert r.returncode == 0 and "show" in r.stdout and "imb" in r.stdout
    r = beff("--version")
    assert r.returncode == 0 and r.stdout.startswith("beff ")
    r = beff("list")
    assert r.returncode == 0
    assert "PingPong" in r.stdout and "opt-in" in r.stdout and "default" in r.stdout


def test_describe_says_what_is_timed() -> None:
    r = beff("describe", "pingpong")
    assert r.returncode == 0
    assert "half round trip" in r.stdout or "/ 2" in r.stdout
    assert beff("describe", "NoSuchThing").returncode == 2


@pytest.mark.parametrize("fmt,needle", [
    ("table", "PingPong"), ("imb", "# Benchmarking PingPong"), ("json", '"benchmark": "PingPong"'),
    ("csv", "mpi1,PingPong,2,1,all,0,1000"),
])
def test_show_renders_a_stored_file(fmt: str, needle: str) -> None:
    r = beff("show", str(GOLDEN), "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert needle in r.stdout


def test_show_tells_hosts_and_intra_inter_labels() -> None:
    r = beff("show", str(GOLDEN))
    assert "hostA" in r.stdout and "hostB" in r.stdout and "intra-node" in r.stdout


def test_show_rejects_a_missing_file(tmp_path: Path) -> None:
    r = beff("show", str(tmp_path / "nope.h5"))
    assert r.returncode == 2 and "Traceback" not in r.stderr


BAD_INPUT = [
    (["-msglog", "9:3"], "-msglog"),
    (["NoSuchBenchmark"], "unknown benchmark"),
    (["-npmin", "0"], "-npmin"),
    (["-iter", "abc"], "-iter"),
    (["-off_cache", "x"], "-off_cache"),
    (["-msglen", "/nonexistent/lengths.txt"], "-msglen"),
    (["-o", "/nonexistent-dir/out.h5"], "output directory"),
    (["-time", "-1"], "-time"),
    (["-map", "4x4"], "-map"),
    (["-input", "/nonexistent/select.txt"], "-input"),
]


@pytest.mark.mpi
@pytest.mark.parametrize("args,needle", BAD_INPUT, ids=[a[0][0] for a in BAD_INPUT])
@pytest.mark.parametrize("nprocs", [2, 3])
def test_bad_input_exits_2_on_every_rank_quickly(nprocs: int, args: list[str], needle: str,
                                                  tmp_path: Path) -> None:
    start = time.monotonic()
    r = mpirun(nprocs, "imb", "mpi1", *args, "PingPong", timeout=30, cwd=tmp_path)
    elapsed = time.monotonic() - start
    assert r.returncode == 2, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("beff: error:")]
    assert len(errors) == 1, r.stderr  # rank 0 alone prints, exactly one line
    assert needle in errors[0]
    assert "Traceback" not in r.stderr
    assert elapsed < 5.0
    assert not list(tmp_path.glob("*.h5"))


@pytest.mark.mpi
def test_bad_input_at_one_rank() -> None:
    r = mpirun(1, "imb", "mpi1", "-msglog", "9:3", timeout=30)
    assert r.returncode == 2 and r.stderr.count("beff: error:") == 1


def test_bad_input_without_mpirun() -> None:
    r = beff("imb", "mpi1", "-iter", "abc")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_compare_two_files_without_mpi(tmp_path: Path) -> None:
    r = beff("compare", str(GOLDEN), str(GOLDEN))
    assert r.returncode == 0, r.stderr
    assert "PingPong" in r.stdout and "1.000" in r.stdout
    assert "geometric mean of B/A over 6 sizes: 1.000" in r.stdout
    r = beff("compare", str(GOLDEN), str(tmp_path / "missing.h5"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
