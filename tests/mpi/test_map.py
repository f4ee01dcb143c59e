"""``beff map`` under mpiexec on this one host (``--all-ranks`` or ``--per-node``): every
format and ``beff show`` of its file, random shifts from a stored seed, the mapped ranks, one
oversubscribed node's note and outliers only when asked for, and a stopped rank tripping the
watchdog (bad input: tests/mpi/test_bad_input.py)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from beff.netmap.outliers import BANDWIDTH
from beff.netmap.record import MapRecord
from beff.netmap.schedule import choose_shifts
from beff.netmap.view import finding_text
from beff.results.archive import load
from tests.mpirun import (
    Jobs,
    Ran,
    beff,
    is_open_mpi_cached,
    kill_group,
    launcher,
    mpi_env,
    only_waits,
    process_state,
    rank_pids,
)

pytestmark = pytest.mark.mpi
# Tiny samples, the fewest: a few seconds a run on a loaded 2-core machine.
QUICK = ["--size", "16KiB", "--window", "2", "--rounds", "5", "--repetitions", "3",
         "--time", "5"]


# The runs of this module but the stopped one: one job per process count
# (tests/mpi/runs_script.py). The 2-rank runs take --size and --window from a TOML file.
JOBS: dict[int, dict[str, list[str]]] = {
    2: {fmt: ["--all-ranks", *QUICK[4:], "--config", "{dir}/map.toml", "--format", fmt,
              *(["--backend", "python"] if fmt == "csv" else [])]  # without numba too
        for fmt in ("table", "json", "csv")},
    4: {"shifts": ["--all-ranks", *QUICK, "--shifts", "2", "--seed", "7", "--format", "csv"],
        "per node": ["--per-node", "2", *QUICK, "--format", "json"],
        "quiet": ["--all-ranks", *QUICK],
        "asked": ["--all-ranks", *QUICK, "--outliers", "both", "--threshold", "0",
                  "--min-ratio", "1"]},
}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Jobs:
    return Jobs(tmp_path_factory.mktemp, "map", [
        (nprocs, {name: ["map", *args] for name, args in commands.items()}, None)
        for nprocs, commands in JOBS.items()],
        files={"map.toml": '[map]\nsize = "16KiB"\nwindow = 2\n'})


def ran(jobs: Jobs, name: str) -> Ran:
    return jobs.ok(name)


def record_of(path: Path) -> MapRecord:
    rec = load(path).result("map")
    assert isinstance(rec, MapRecord)
    return rec


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_every_format_and_show_prints_the_same(jobs: Jobs, fmt: str) -> None:
    r = ran(jobs, fmt)
    out, python = r.out, fmt == "csv"
    shown = beff("show", str(out), "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    if fmt != "table":  # a stored table adds the run's header
        assert shown.stdout == r.stdout
    rec = record_of(out)
    assert (rec.nmapped, rec.per_node, rec.size, rec.window) == (2, 0, 16384, 2)
    assert list(rec.shifts) == [1] and rec.complete and rec.repetitions >= 3
    assert rec.send_time.shape == (1, 2, rec.repetitions)
    assert np.all(rec.recv_time > 0) and np.all(rec.latency_time > 0)
    assert rec.recv_bw is not None and np.isnan(rec.recv_bw[0, 0])
    assert rec.recv_bw[0, 1] > 0 and rec.recv_bw[1, 0] > 0
    assert rec.rule and "better half" in rec.rule
    attrs = load(out).attrs
    assert attrs["overhead"]["backend"] == ("python" if python else "jit")  # the same job
    assert attrs["config"]["options"]["size"] == 16384
    assert attrs["config_sources"]["size"].startswith("config:")
    assert attrs["derived"]["nmapped"] == 2 and attrs["derived"]["repetitions"] >= 3
    if fmt == "json":
        entry = json.loads(r.stdout)["results"][0]
        assert entry["suite"] == "map" and entry["nmapped"] == 2
        assert entry["figures"]["within nodes"]["pairs"] == 2
        assert len(entry["matrices"]["recv_MBps"]) == 2 and entry["rule"] == rec.rule
        assert entry["named_nodes"] == [] or all(isinstance(n, str) for n in
                                                 entry["named_nodes"])
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        assert [(row["sender"], row["receiver"]) for row in rows] == [("0", "1"), ("1", "0")]
        assert all(float(row["recv_MBps"]) > 0 and int(row["samples"]) == rec.repetitions
                   for row in rows)
    if fmt == "table":
        assert "beff map: 2 of 2 ranks mapped (every rank)" in r.stdout
        assert "worst pairs by receive bandwidth" in r.stdout
        # one node: the pairs judge no link, and no outlier is looked for (--outliers auto)
        assert "note: pair figures here do not judge links" in r.stdout
        assert "outliers: none looked for" in r.stdout


def test_random_shifts_come_from_the_stored_seed(jobs: Jobs) -> None:
    r = ran(jobs, "shifts")
    out = r.out
    rec = record_of(out)
    assert rec.seed == 7 and list(rec.shifts) == choose_shifts(4, 2, 7)
    assert rec.send_time.shape == (2, 4, rec.repetitions) and rec.complete
    assert rec.recv_bw is not None
    measured = np.isfinite(rec.recv_bw)
    expected = np.zeros((4, 4), dtype=bool)
    for k in rec.shifts:
        for s in range(4):
            expected[s, (s + k) % 4] = True
    assert (measured == expected).all()  # only the pairs of the measured shifts
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 2 * 4
    assert rec.send_sum is not None and rec.node_send_sum is not None
    assert np.allclose(rec.node_send_sum, [rec.send_sum.sum()])  # one node: every rank


def test_per_node_maps_the_first_ranks_of_each_node(jobs: Jobs) -> None:
    r = ran(jobs, "per node")
    out = r.out
    rec = record_of(out)
    assert (rec.nprocs, rec.nmapped, rec.per_node) == (4, 2, 2)
    assert list(rec.world_rank) == [0, 1]  # the other two waited
    entry = json.loads(r.stdout)["results"][0]
    assert [row["rank"] for row in entry["ranks"]] == [0, 1]


def test_one_oversubscribed_node_names_outliers_only_when_asked(jobs: Jobs) -> None:
    """4 ranks on this one node (2 cores: oversubscribed): the table and the warnings say
    that the pair figures judge no link, and nothing is named; --outliers both names them
    (any rank below the better half's median, at --threshold 0 --min-ratio 1), each with
    the figure the matrices show: a link its cell, a node the best cell of its row or
    column."""
    r = ran(jobs, "quiet")
    quiet = r.out
    note = "pair figures here do not judge links: every mapped rank is on one node"
    run = load(quiet)
    assert run.attrs["placement"]["nodes"] == 1
    assert f"note: {note}" in r.stdout and "outliers: none looked for" in r.stdout
    if run.attrs["placement"]["oversubscribed"]:
        assert "the job is oversubscribed (more ranks than cores on a node)" in r.stdout
    assert "no outliers are named (--outliers both names them anyway)" in r.stderr
    assert any(w.startswith(note) for w in run.attrs["warnings"])
    rec = record_of(quiet)
    assert rec.outlier_figures == "none" and rec.outliers == []
    assert run.attrs["derived"]["outliers"] == "none"
    shown = beff("show", str(quiet), "--format", "json")
    entry = json.loads(shown.stdout)["results"][0]
    assert entry["links_judged"] is False and entry["outliers"] == []
    assert entry["placement_note"].startswith(note)

    r = ran(jobs, "asked")
    asked = r.out
    rec = record_of(asked)
    found = rec.findings()
    assert rec.outlier_figures == "both" and found, r.stdout
    assert f"note: {note}" in r.stdout
    assert "tell that, not slow links" in r.stdout
    assert rec.recv_bw is not None and rec.latency is not None
    for f in found:
        assert f"  {finding_text(f, rec)}" in r.stdout
        matrix = rec.recv_bw if f.figure == BANDWIDTH else rec.latency
        if f.kind == "link":
            assert f.value == matrix[f.rank, f.peer], f
            continue
        side = matrix[f.rank] if f.side != "receive" else matrix[:, f.rank]
        cells = side[np.isfinite(side)]
        best = cells.max() if f.figure == BANDWIDTH else cells.min()
        if f.side == "both":  # the worse of its row and its column is shown
            col = matrix[:, f.rank][np.isfinite(matrix[:, f.rank])]
            assert f.value in (best, col.max() if f.figure == BANDWIDTH else col.min()), f
        else:
            assert f.value == best, f


def test_a_stopped_rank_trips_the_watchdog(tmp_path: Path) -> None:
    """Rank 1 stops in the calibration (a test hook): rank 0 waits for it in the first
    sample's barrier until --stall-timeout, prints its stacks and ends the job (exit 3)."""
    out = tmp_path / "stopped.h5"
    cmd = [launcher(), "-n", "2", sys.executable, "-m", "beff", "map", "--all-ranks", *QUICK,
           "--stall-timeout", "3", "-o", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=mpi_env({"BEFF_TEST_STOP": "1:calibration"}),
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline and \
                process_state(rank_pids(str(out)).get(1, 0)) != "T":
            time.sleep(0.05)
        only_waits(str(out))
        _, err = proc.communicate(timeout=120)
    finally:
        kill_group(proc)  # whatever is left (nothing, when the watchdog ended the job)
    assert "beff: test hook: rank stops at calibration" in err, err
    assert "beff: watchdog on rank 0: beff map's calibration made no progress for 3 s" in err
    assert "most recent call first" in err  # the stacks
    assert proc.returncode == 3 or (is_open_mpi_cached() and proc.returncode != 0), err


def test_a_placement_it_cannot_map_is_refused_before_any_loop_is_compiled(
        tmp_path: Path) -> None:
    """One rank per node on one node maps nothing: with an empty loop cache (a first run)
    the refusal is still the one line, and nothing was compiled for it (the check comes
    before the timed-loop backend is readied)."""
    cache = tmp_path / "cache"
    proc = subprocess.run([launcher(), "-n", "2", sys.executable, "-m", "beff", "map", *QUICK,
                           "-o", str(tmp_path / "m.h5")], capture_output=True, text=True,
                          timeout=120, env=mpi_env({"BEFF_CACHE_DIR": str(cache),
                                                    "BEFF_COMPILE_NOTICE_S": "0"}))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("beff: error: beff map needs at least 2 "
                                                   "ranks to map, got 1"), proc.stderr
    assert not list(cache.rglob("*.obj")) and not (tmp_path / "m.h5").exists()
