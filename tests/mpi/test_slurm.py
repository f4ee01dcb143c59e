"""beff under a real Slurm: srun (MPICH over PMI-2) at 1 to 4 ranks, sbatch of the batch
script in share/integrations/slurm, and a job killed by its time limit. The tests start their
own one-node Slurm (tests/slurmcluster.py, Debian's slurm-wlm and munge, as root). Where Slurm
is not installed they skip, saying how to install it; in CI (``CI`` set) they fail instead."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from beff.results.archive import load
from tests import slurmcluster
from tests.mpirun import (
    assert_watchdog_fired,
    is_open_mpi_cached,
    mpi_env,
    stop_a_rank_of,
)

pytestmark = [pytest.mark.mpi, pytest.mark.slurm,
              pytest.mark.skipif(is_open_mpi_cached(),
                                 reason="the test Slurm runs MPICH's ranks (srun --mpi=pmi2)")]
ROOT = Path(__file__).resolve().parents[2]
BATCH_SCRIPT = ROOT / "share" / "integrations" / "slurm" / "beff.sbatch"


@pytest.fixture(scope="module", autouse=True)
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[slurmcluster.Slurm]:
    """One Slurm for the module; its SLURM_CONF is in the environment of every test here."""
    why = slurmcluster.missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI runs the Slurm tests: {why}")
        pytest.skip(why)
    with slurmcluster.cluster(tmp_path_factory.mktemp("slurm")) as cluster:
        before = os.environ.get("SLURM_CONF")
        os.environ.update(cluster.env)
        try:
            yield cluster
        finally:
            if before is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = before


def command(nprocs: int, *args: str) -> list[str]:
    return ["srun", "-n", str(nprocs), "--mpi=pmi2", sys.executable, "-m", "beff", *args]


def srun(nprocs: int, *args: str, stdout: int | None = None, timeout: float = 180,
         env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(nprocs, *args),
                          stdout=stdout if stdout is not None else subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, env=mpi_env(env))


def test_srun_run_to_a_file_with_progress_lines(tmp_path: Path) -> None:
    """Plain srun hands ranks pipes and relays whole lines: --progress gives lines on stderr,
    and the data in the file have no colour."""
    out, text = tmp_path / "s.h5", tmp_path / "out.txt"
    with text.open("w") as fh:
        r = srun(2, "imb", "mpi1", "PingPong", "-msglog", "0:4", "-time", "0.1",
                 "--progress", "-o", str(out), stdout=fh.fileno())
    assert r.returncode == 0, r.stderr
    data = text.read_text()
    assert "PingPong" in data and "\x1b[" not in data
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("progress: 1/")]
    rec = load(out)
    assert rec.attrs["status"] == "complete" and rec.attrs["nprocs"] == 2


def test_srun_bad_input_is_one_line_and_exit_2() -> None:
    r = srun(2, "imb", "mpi1", "-msglog", "9:3", timeout=60)
    assert r.returncode == 2
    ours = [ln for ln in r.stderr.splitlines() if not ln.startswith("srun: ")]
    assert len(ours) == 1 and ours[0].startswith("beff: error: "), r.stderr


def test_srun_exception_on_one_rank_aborts_and_keeps_results(tmp_path: Path) -> None:
    out = tmp_path / "abort.h5"
    r = srun(2, "imb", "mpi1", "-msglog", "0:4", "-time", "0.2", "-iter", "20", "PingPong",
             "Sendrecv", "-o", str(out), env={"BEFF_TEST_FAIL": "1:Sendrecv"}, timeout=60)
    assert r.returncode != 0
    assert "beff: error on rank 1: RuntimeError: injected failure" in r.stderr
    record = load(out)
    assert [m.benchmark for m in record.measurements] == ["PingPong"]
    assert record.attrs["status"] == "aborted"


def test_srun_stopped_rank_trips_the_watchdog(tmp_path: Path) -> None:
    out = tmp_path / "stopped.h5"
    cmd = command(2, "imb", "mpi1", "-msglog", "0:12", "-time", "1", "--stall-timeout", "4",
                  "--format", "csv", "-o", str(out), "PingPong", "Sendrecv", "Exchange",
                  "Allreduce", "Alltoall", "Bcast")
    proc, err, waited = stop_a_rank_of(cmd, str(out), ready_line="mpi1,PingPong")
    assert_watchdog_fired(proc, err, waited, 4)
    record = load(out)
    assert record.measurements[0].benchmark == "PingPong"
    assert record.attrs["status"] == "aborted"


def _show(path: Path) -> str:
    r = subprocess.run([sys.executable, "-m", "beff", "show", str(path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_srun_at_1_to_4_ranks_records_the_job_and_its_placement(nprocs: int,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "a.h5"
    r = srun(nprocs, "imb", "mpi1", "Allreduce", "-msglog", "0:2", "-iter", "20",
             "-iter_policy", "off", "-o", str(out))
    assert r.returncode == 0, r.stderr
    record = load(out)
    assert record.attrs["status"] == "complete" and record.attrs["nprocs"] == nprocs
    batch = record.attrs["batch"]
    host = socket.gethostname()
    assert batch["scheduler"] == "slurm" and batch["job_id"].isdigit(), batch
    assert batch["step_id"] == "0" and batch["ntasks"] == str(nprocs), batch
    assert batch["nodelist"] == host and batch["partition"] == "debug", batch
    assert record.attrs["placement"]["hosts"] == [host]
    assert sorted(int(rank["rank"]) for rank in record.ranks) == list(range(nprocs))
    assert f"batch: slurm job {batch['job_id']} step 0 (partition debug, nodelist {host})" \
        in _show(out)


def _wait_until_gone(slurm: slurmcluster.Slurm, job: str, timeout: float) -> str:
    """Wait for ``job`` to leave the queue; its final state (scontrol's JobState)."""
    deadline = time.monotonic() + timeout
    while slurm.run("squeue", "-h", "-j", job).stdout.strip():
        assert time.monotonic() < deadline, slurm.logs()
        time.sleep(1)
    shown = slurm.run("scontrol", "show", "job", job).stdout
    found = re.search(r"JobState=(\S+)", shown)
    assert found, shown
    return found.group(1)


def test_sbatch_of_the_shipped_script_runs_b_eff_and_imb(slurm: slurmcluster.Slurm,
                                                         tmp_path: Path) -> None:
    """share/integrations/slurm/beff.sbatch as a site submits it, made small: one node, two
    tasks, b_eff's quick mode and a few IMB sizes (its variables are the script's own)."""
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "BEFF_RUN_ARGS": "--quick --memory-per-proc 16MiB --time-per-loop 0.01",
           "BEFF_IMB_ARGS": "-msglog 0:4 -iter 50 -iter_policy off"}
    r = slurm.run("sbatch", "--parsable", "--wait", "-N", "1", "-n", "2",
                  "--ntasks-per-node=2", f"--chdir={tmp_path}",
                  f"--output={tmp_path}/slurm-%j.out", "--export=ALL," + ",".join(
                      f"{k}={v}" for k, v in env.items()), str(BATCH_SCRIPT), timeout=240)
    job = r.stdout.strip().split(";")[0]
    log = next(tmp_path.glob("slurm-*.out"), None)
    assert r.returncode == 0, (r.stderr, log.read_text() if log else "no output file")
    for name in (f"beff-{job}.h5", f"imb-{job}.h5"):
        record = load(tmp_path / name)
        assert record.attrs["status"] == "complete", name
        assert record.attrs["batch"]["job_id"] == job and record.attrs["nprocs"] == 2
    assert [m.benchmark for m in load(tmp_path / f"imb-{job}.h5").measurements] == \
        ["PingPong", "Allreduce"]
    shown = _show(tmp_path / f"beff-{job}.h5")
    assert f"batch: slurm job {job} step 0" in shown and "b_effSHORT =" in shown, shown


# ReFrame's checks before the time-limit test: they run while the time-limited job waits
# for its limit (it starts with the module).
def test_reframe_checks_on_the_slurm_partition(slurm: slurmcluster.Slurm,
                                               tmp_path: Path) -> None:
    """share/integrations/reframe on its slurm partition: ReFrame submits each check with
    sbatch to the test Slurm (which has no accounting, hence its squeue scheduler), srun
    starts beff, and the perflog holds the figures beff show gives for the kept files, whose
    batch job is recorded."""
    from tests.integrations import test_reframe

    proc = test_reframe.run_checks(tmp_path, "slurm", {"BEFF_RFM_SLURM_SCHEDULER": "squeue"})
    test_reframe.assert_every_check_passed(proc, tmp_path)
    docs = test_reframe.assert_perflogs_hold_beff_show_figures(proc, tmp_path, "slurm")
    for doc in docs:
        batch = doc["run"]["batch"]
        assert batch["scheduler"] == "slurm" and batch["job_id"].isdigit(), batch


@pytest.fixture(scope="module", autouse=True)
def time_limited(slurm: slurmcluster.Slurm, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[str, Path]:
    """A job submitted as the module starts, so that the minute and more Slurm takes to end
    it by its time limit overlaps the other tests (it sleeps meanwhile): sbatch --time=1 of a
    run that needs some 120 s (IMB-P2P sleeping 10 s before and after each size)."""
    where = tmp_path_factory.mktemp("time-limited")
    script = where / "long.sbatch"
    script.write_text(f"#!/bin/bash\nsrun --mpi=pmi2 {sys.executable} -m beff imb p2p "
                      "-pause 10000000 -msgsz 1 -iter 10 -o long.h5\n")
    r = slurm.run("sbatch", "--parsable", "--time=1", "-n", "2", f"--chdir={where}",
                  f"--output={where}/slurm.out", str(script))
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().split(";")[0], where


def test_a_job_past_its_time_limit_keeps_every_finished_result(
        slurm: slurmcluster.Slurm, time_limited: tuple[str, Path]) -> None:
    """The time-limited job (the fixture): Slurm ends it between 60 and 90 s after it
    started with SIGTERM (and SIGKILL KillWait=5 s later): the file is marked aborted, every
    benchmark that finished before is in it, and a second job measures the rest."""
    job, tmp_path = time_limited
    assert _wait_until_gone(slurm, job, timeout=150) == "TIMEOUT"
    text = (tmp_path / "slurm.out").read_text()
    assert "DUE TO TIME LIMIT" in text, text
    assert "beff: terminated (SIGTERM): the job ends, results so far are kept" in text, text
    assert "--resume long.h5)" in text, text  # the line says how to measure the rest
    record = load(tmp_path / "long.h5")
    assert record.attrs["status"] == "aborted", record.attrs
    finished = [m.benchmark for m in record.measurements]
    assert finished == ["PingPong", "PingPing", "Unirandom", "Birandom", "Corandom",
                        "SendRecv_Replace", "Stencil2D", "Stencil3D"][:len(finished)]
    assert 2 <= len(finished) <= 5, finished  # 20 s each, killed after 60 to 90 s
    assert all(s == "ok" for m in record.measurements for s in m.status)
    # The rest, in a job of its own without the pauses (a changed setting: --force)
    again = srun(2, "imb", "p2p", "-pause", "0", "-msgsz", "1", "-iter", "10", "--resume",
                 str(tmp_path / "long.h5"), "--force", timeout=120)
    assert again.returncode == 0, again.stderr
    record = load(tmp_path / "long.h5")
    assert [m.benchmark for m in record.measurements][:len(finished)] == finished
    assert len(record.measurements) == 8 and record.attrs["status"] == "complete"
    launches = record.attrs["launches"]
    assert [launch["status"] for launch in launches] == ["aborted", "complete"]
    assert launches[0]["batch"]["job_id"] == job != launches[1]["batch"]["job_id"]
