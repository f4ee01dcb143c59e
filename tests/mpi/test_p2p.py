"""IMB-MPI1 point-to-point under real MPI at 1, 2, 3 and 4 ranks. The runs whose output is
all a test checks share one job per process count (tests/mpi/runs_script.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from beff.results import stats
from beff.results.archive import load
from tests.mpirun import (
    Jobs,
    beff,
    launch_prefix,
    mpi_env,
    mpirun,
    on_a_pty,
)

pytestmark = pytest.mark.mpi
# Fixed repetitions: no time budget to run out on a loaded node.
QUICK = ["-msglog", "0:4", "-iter", "50", "-iter_policy", "off", "-time", "600"]
PT2PT = ["PingPong", "PingPing", "Sendrecv", "Exchange"]
# The runs that only need their output checked: one job per process count, and one for the
# runs with rank 0's corrupted messages (tests/mpi/runs_script.py).
JOBS: list[tuple[int, dict[str, list[str]], dict[str, str | None] | None]] = [
    (1, {"no pair": ["PingPong", "Sendrecv"], "nothing": ["PingPong", "PingPing"]}, None),
    (2, {"pt2pt-2": PT2PT, "json": ["PingPong", "--format", "json"],
         "csv": ["PingPong", "--format", "csv"],
         "off cache": ["PingPong", "Sendrecv", "Exchange", "-off_cache", "1,64", "--check"]},
     None),
    (3, {"pt2pt-3": PT2PT,
         "opt in": ["Uniband", "Biband", "PingPongAnySource", "PingPingAnySource",
                    "PingPongSpecificSource", "PingPingSpecificSource", "-window_size", "4",
                    "--format", "imb"]}, None),
    (4, {"pt2pt-4": PT2PT,
         "imb": ["-msglog", "0:16", "-npmin", "2", *PT2PT, "--format", "imb"],
         "multi": ["-multi", "1", "PingPong", "Sendrecv", "--format", "imb"],
         "map": ["-map", "2x2", "PingPong", "--format", "imb"]}, None),
    (2, {"bands corrupt": ["-window_size", "4", "--check", "Uniband", "Biband"],
         "check corrupt": ["PingPong", "Sendrecv", "--check"]}, {"BEFF_TEST_CORRUPT": "1"}),
]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    return Jobs(tmp_path_factory.mktemp, "p2p", [
        (nprocs, {name: ["imb", "mpi1", *QUICK, *args] for name, args in commands.items()}, env)
        for nprocs, commands, env in JOBS])


def done(jobs: Jobs, name: str) -> tuple[str, Path]:
    r = jobs.ok(name)
    return r.stdout, r.out


@pytest.mark.parametrize("nprocs", [2, 3, 4])
def test_point_to_point_set(nprocs: int, jobs: Jobs) -> None:
    _, path = done(jobs, f"pt2pt-{nprocs}")
    record = load(path)
    got = {(m.benchmark, m.nprocs): m for m in record.measurements}
    counts = [2, nprocs] if nprocs > 2 else [2]
    expected = {("PingPong", 2), ("PingPing", 2)} | {
        (n, c) for n in ("Sendrecv", "Exchange") for c in counts}
    assert set(got) == expected
    for (_, np_), m in got.items():
        s = stats.summarize(m)
        assert list(m.sizes) == [0, 1, 2, 4, 8, 16]
        assert np.all(np.isfinite(s.t_max)) and np.all(s.t_min > 0)
        # each rank's time is its raw batch times over the repetitions, scaled
        raw = np.nansum(m.samples, axis=2) / m.repetitions[:, None] * m.time_scale
        np.testing.assert_allclose(m.times, raw, rtol=1e-12)
        assert np.all(s.mbytes_per_sec[1:] > 0)
        assert m.times.shape == (6, np_)
        assert m.idle == nprocs - np_
        assert (m.samples[np.isfinite(m.samples)] > 0).all()
        assert (m.batch_iters.sum(axis=2)[:, 0] == m.repetitions).all()
    assert record.attrs["status"] == "complete"
    assert record.attrs["nprocs"] == nprocs
    assert len(record.ranks) == nprocs
    assert record.attrs["overhead"]["wtime"] > 0


def test_one_rank_has_no_pair(jobs: Jobs) -> None:
    _, path = done(jobs, "no pair")
    record = load(path)
    assert [(m.benchmark, m.nprocs) for m in record.measurements] == [("Sendrecv", 1)]


def test_one_rank_says_why_nothing_was_measured(jobs: Jobs) -> None:
    r = jobs["nothing"]
    assert r.returncode == 0, r.stderr
    assert ("nothing was measured on 1 process: PingPong needs 2, PingPing needs 2; run with "
            "more ranks") in " ".join(r.stderr.split())
    assert load(r.out).measurements == []


def test_check_finds_a_corrupted_message_in_the_bandwidth_benchmarks(jobs: Jobs) -> None:
    _, out = done(jobs, "bands corrupt")
    got = {m.benchmark: m for m in load(out).measurements}
    assert set(got) == {"Uniband", "Biband"}
    for m in got.values():
        assert m.checked and m.defects is not None
        assert int(m.defects[0]) == 0 and (m.defects[1:] > 0).all(), (m.benchmark, m.defects)


def test_opt_in_benchmarks_and_message_rate(jobs: Jobs) -> None:
    stdout, path = done(jobs, "opt in")
    record = load(path)
    by = {(m.benchmark, m.nprocs) for m in record.measurements}
    assert ("Uniband", 2) in by and ("Biband", 2) in by and ("Uniband", 3) not in by
    assert "Msg/sec" in stdout
    uni = next(m for m in record.measurements if m.benchmark == "Uniband")
    s = stats.summarize(uni)
    assert s.msg_per_sec[1] == pytest.approx(4 / (s.t_max[1] * 1e-6), rel=1e-9)


def test_imb_format_from_issue_acceptance(jobs: Jobs) -> None:
    stdout, path = done(jobs, "imb")
    assert stdout.count("# Benchmarking PingPong \n# #processes = 2 \n"
                        "# ( 2 additional processes waiting in MPI_Barrier)") == 1
    assert "# Benchmarking Exchange \n# #processes = 4 \n" in stdout
    assert stdout.rstrip().endswith("# All processes entering MPI_Finalize")
    assert "       #bytes #repetitions      t[usec]   Mbytes/sec" in stdout
    assert "        65536" in stdout
    r = beff("show", str(path), "--format", "imb")  # the same file renders without MPI
    assert r.returncode == 0 and "# Benchmarking Sendrecv" in r.stdout


def test_multi_and_map(jobs: Jobs) -> None:
    stdout, path = done(jobs, "multi")
    assert "# Benchmarking Multi-PingPong \n# ( 2 groups of 2 processes each running " \
           "simultaneous ) \n# Group  0:     0    1\n# \n# Group  1:     2    3\n" in stdout
    record = load(path)
    pp = next(m for m in record.measurements if m.benchmark == "PingPong")
    assert pp.ngroups == 2 and sorted(pp.group.tolist()) == [0, 0, 1, 1]
    stdout, path = done(jobs, "map")
    assert "# ( 2 additional processes waiting in MPI_Barrier)" in stdout
    pp = load(path).measurements[0]
    # -map 2x2 transposes the rank order: the pair is world ranks 0 and 2.
    assert pp.world_ranks.tolist() == [0, 2]


def test_json_and_csv_outputs_are_clean(jobs: Jobs) -> None:
    stdout, _ = done(jobs, "json")
    doc = json.loads(stdout)  # nothing but JSON on stdout
    rows = doc["results"][0]["rows"]
    assert rows[0]["bytes"] == 0 and rows[-1]["bytes"] == 16
    assert doc["units"]["bandwidth"].startswith("MB/s")
    stdout, _ = done(jobs, "csv")
    lines = stdout.strip().splitlines()
    assert lines[0].startswith("suite,benchmark,nprocs") and len(lines) == 7


def test_off_cache_and_check_mode(jobs: Jobs) -> None:
    _, path = done(jobs, "off cache")
    for m in load(path).measurements:
        assert m.checked and m.defects is not None and int(m.defects.sum()) == 0


def test_check_mode_reports_injected_corruption(jobs: Jobs) -> None:
    _, out = done(jobs, "check corrupt")
    for m in load(out).measurements:
        assert m.defects is not None and int(m.defects[1:].min()) > 0


def test_info_reports_library_timer_and_placement() -> None:
    r = mpirun(3, "info", timeout=60)
    assert r.returncode == 0, r.stderr
    assert "MPI library" in r.stdout and ("MPICH" in r.stdout or "Open MPI" in r.stdout)
    assert "MPI.Wtick" in r.stdout and "thread level single" in r.stdout
    assert "3 ranks on 1 node(s)" in r.stdout
    oversubscribed = 3 > (os.cpu_count() or 1)
    assert ("warning: oversubscribed" in r.stdout) == oversubscribed
    assert ("oversubscribed: no" in r.stdout) == (not oversubscribed)
    assert "timed loops: jit backend" in r.stdout
    assert "mpi4py" in r.stdout and "h5py" in r.stdout and "numpy" in r.stdout


def test_thread_level_and_toml_config_are_recorded(tmp_path: Path) -> None:
    toml = tmp_path / "beff.toml"
    toml.write_text("time = 0.7\nmsglog_max = 3\n")
    out = tmp_path / "cfg.h5"
    r = mpirun(2, "imb", "mpi1", "-thread_level", "multiple", "--config", str(toml),
               "-iter", "20", "-iter_policy", "off", "PingPong", "-o", str(out), timeout=60)
    assert r.returncode == 0, r.stderr
    record = load(out)
    assert record.attrs["mpi"]["thread_level"] == "multiple"
    assert record.attrs["config"]["options"]["time"] == 0.7
    assert record.attrs["config_sources"]["time"] == f"config:{toml}"
    assert record.attrs["config_sources"]["msgspersample"] == "cli"
    assert list(record.measurements[0].sizes) == [0, 1, 2, 4, 8]


UNSET_YIELD: dict[str, str | None] = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": None,
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": None,
    "OMPI_MCA_mpi_yield_when_idle": None,
}


@pytest.mark.parametrize("opt_out", [False, True])
def test_beff_sets_the_yield_variables_itself_when_oversubscribed(tmp_path: Path,
                                                                   opt_out: bool) -> None:
    """Without the test harness's presets: 4 ranks on this machine's cores."""
    out = tmp_path / "y.h5"
    env = dict(UNSET_YIELD, BEFF_NO_YIELD="1" if opt_out else None)
    r = mpirun(4, "imb", "mpi1", *QUICK, "PingPong", "-o", str(out), env=env, timeout=180)
    assert r.returncode == 0, r.stderr
    applied = load(out).attrs["yield_settings"]
    expected = {} if opt_out or 4 <= (os.cpu_count() or 1) else dict.fromkeys(UNSET_YIELD, "1")
    assert applied == expected


def test_table_output_to_a_pipe_has_no_colour_and_progress_can_be_forced(tmp_path: Path) -> None:
    """stdout is a pipe here: no escape codes in the data (Open MPI hands ranks a pty);
    --progress forces progress on stderr under mpiexec, as plain lines since stderr is no
    terminal; an ASCII-only terminal works."""
    out = tmp_path / "p.h5"
    r = mpirun(2, "imb", "mpi1", *QUICK, "PingPong", "Sendrecv", "--progress", "-o", str(out),
               env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0, r.stderr
    assert "\x1b[" not in r.stdout and "PingPong" in r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("progress: ")]
    assert lines and lines[0].startswith("progress: 1/") and " np=2 " in lines[0]
    assert "\x1b[" not in r.stderr
    shown = beff("show", str(out), env={"PYTHONIOENCODING": "ascii"})
    assert shown.returncode == 0 and "Traceback" not in shown.stderr


def test_from_a_terminal_mpiexec_shows_the_live_bar_by_default(tmp_path: Path) -> None:
    """mpiexec's stdout and stderr are a terminal: the ranks get pipes (hydra) or a pty
    (Open MPI), and rank 0 draws the bar and colours all the same."""
    cmd = [*launch_prefix(2), sys.executable, "-m", "beff", "imb", "mpi1", *QUICK,
           "PingPong", "Sendrecv", "-o", str(tmp_path / "t.h5")]
    code, text = on_a_pty(cmd, mpi_env({"TERM": "xterm-256color"}))
    assert code == 0, text
    assert "━" in text and "\x1b[" in text and "MPI1 Sendrecv" in text
    assert "progress: " not in text  # a live bar, not the lines of a log


def test_two_runs_started_together_in_one_directory_keep_both(tmp_path: Path) -> None:
    cmd = [*launch_prefix(1), sys.executable, "-m", "beff", "imb", "mpi1", *QUICK,
           "PingPong", "Sendrecv", "--format", "csv"]
    jobs = [subprocess.Popen(cmd, cwd=tmp_path, env=mpi_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for job in jobs:
        _, err = job.communicate(timeout=120)
        assert job.returncode == 0, err
    files = sorted(tmp_path.glob("beff-*.h5"))
    assert len(files) == 2
    ids = {load(f).attrs["run_id"] for f in files}
    assert len(ids) == 2
    for f in files:
        assert [m.benchmark for m in load(f).measurements] == ["Sendrecv"]
