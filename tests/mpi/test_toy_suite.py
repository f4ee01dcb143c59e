"""A suite added as a plug-in outside beff (tests/plugin/beff_toy), installed by pip through
its entry points, run under mpiexec in every format.

The toy declares its own ``-iter`` (barriers per sample), which IMB-MPI1 parses as
``msgspersample``; its own text header, record type and summary; its TOML table [toy]; and a
second suite, ``beff toyrun``, with a typer command generated from the same declarations.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from beff.results.archive import load
from tests.mpirun import Runs, beff, beff_lines, mpirun, runs
from tests.plugin import install

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]


site = pytest.fixture(scope="module", name="site")(install.installed)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory, site: Path) -> Runs:
    """The toy in every format, and ``beff toyrun`` with a TOML file: one job
    (tests/mpi/runs_script.py)."""
    directory = tmp_path_factory.mktemp("toy")
    cfg = directory / "toy.toml"
    cfg.write_text("[toyrun]\niter = 5\nsamples = 4\n[toy]\nsamples = 9\n")
    commands = {fmt: ["imb", "toy", "-iter", "7", "-samples", "3", "--format", fmt]
                for fmt in ("imb", "json", "csv", "table")}
    commands["toyrun"] = ["toyrun", "--config", str(cfg), "--samples", "2", "--format", "csv"]
    return runs(2, commands, directory, env=install.env(site))


@pytest.mark.parametrize("fmt", ["imb", "json", "csv", "table"])
def test_toy_runs_in_every_format_and_show_prints_the_same(jobs: Runs, site: Path,
                                                           fmt: str) -> None:
    r = jobs[fmt]
    out = r.out
    assert r.returncode == 0, r.stderr
    shown = beff("show", str(out), "--format", fmt, env=install.env(site))
    assert shown.returncode == 0, shown.stderr
    if fmt != "table":  # a stored table adds the run's header
        assert shown.stdout == r.stdout
    record = load(out)  # its /toy group is read through the toy's declaration (imported here)
    (toy,) = record.results
    assert type(toy).__name__ == "ToyRecord" and toy.iters == 7
    assert toy.seconds.shape == (3, 2) and np.all(toy.seconds > 0)
    assert record.attrs["config"]["options"] == {"iter": 7, "samples": 3}
    assert "msgspersample" not in record.attrs["config"]  # no IMB-MPI1 option in its run
    if fmt == "imb":
        assert r.stdout.startswith("## toy: 7 barriers per sample\n")
        assert r.stdout.endswith("## toy end\n")
    if fmt == "json":
        (entry,) = json.loads(r.stdout)["results"]
        assert entry["suite"] == "toy" and entry["iters"] == 7 and entry["samples"] == 3
    if fmt == "csv":
        assert r.stdout.splitlines()[0] == "sample,t_slowest_us"
        assert len(r.stdout.splitlines()) == 4


def test_the_same_options_as_a_typer_command_and_from_toml(jobs: Runs) -> None:
    """`beff toyrun --samples 2` (the typer option of the toy's one declaration), and the
    [toyrun] table of a TOML file, whose flag still wins."""
    r = jobs["toyrun"]
    out, cfg = r.out, r.out.parent / "toy.toml"
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 3  # header and 2 samples
    record = load(out)
    assert record.attrs["config"]["options"] == {"iter": 5, "samples": 2}
    assert record.attrs["config_sources"]["samples"] == "cli"
    assert record.attrs["config_sources"]["iter"] == f"config:{cfg}"


def test_a_bad_toml_value_is_one_line_on_every_rank(tmp_path: Path, site: Path) -> None:
    """A TOML file is read by rank 0 after MPI_Init: its error still ends every rank with one
    line and exit code 2."""
    cfg = tmp_path / "toy.toml"
    cfg.write_text("[toy]\niter = 'many'\n")
    bad = mpirun(2, "imb", "toy", "--config", str(cfg), env=install.env(site), timeout=60)
    assert bad.returncode == 2 and beff_lines(bad.stderr) == [
        f"beff: error: iter (from {cfg}) expects an integer, got 'many'"]


def test_a_usage_error_inside_a_running_job_ends_every_rank(tmp_path: Path, site: Path) -> None:
    """A plug-in's UsageError on one rank after validation, while the other ranks measure:
    not a hang and not that rank's exit alone, but the whole job ended (MPI_Abort) with its
    line and code 2 (runtime.run_job)."""
    out = tmp_path / "t.h5"
    r = mpirun(2, "imb", "toy", "-iter", "5", "-samples", "3", "-o", str(out),
               env={**install.env(site), "BEFF_TOY_REFUSE": "1"}, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "beff: error on rank 1: toy: rank 1 refuses inside the job" in r.stderr
    assert "Traceback" not in r.stderr and "rank 1 aborts the job" in r.stderr


def test_the_toy_is_unknown_without_the_plugin_and_beff_never_names_it(site: Path) -> None:
    r = beff("imb", "toy", env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and "unknown IMB suite 'toy'" in r.stderr
    listed = beff("list", env=install.env(site))
    assert listed.returncode == 0 and "Toy suite (a test plug-in)" in listed.stdout
    named = [p for p in (ROOT / "beff").rglob("*.py") if "toy" in p.read_text().lower()]
    assert named == []
