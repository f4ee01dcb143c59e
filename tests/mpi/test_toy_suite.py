"""A suite added as one folder outside beff (tests/toy), run under mpiexec in every format.

The toy declares its own ``-iter`` (barriers per sample), which IMB-MPI1 parses as
``msgspersample``; its own text header, record type and summary; its TOML table [toy].
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from beff.results.archive import load
from tests.mpirun import beff, beff_lines, mpirun
from tests.toy import suite as _toy_suite  # noqa: F401  (registers the toy in this process)

pytestmark = pytest.mark.mpi
ROOT = Path(__file__).resolve().parents[2]
ENV = {"BEFF_PLUGINS": "tests.toy.suite",
       "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("fmt", ["imb", "json", "csv", "table"])
def test_toy_runs_in_every_format_and_show_prints_the_same(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "toy.h5"
    r = mpirun(2, "imb", "toy", "-iter", "7", "-samples", "3", "-o", str(out), "--format", fmt,
               env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    shown = beff("show", str(out), "--format", fmt, env=ENV)
    assert shown.returncode == 0, shown.stderr
    if fmt != "table":  # a stored table adds the run's header
        assert shown.stdout == r.stdout
    record = load(out)  # its /toy group is read through the toy's declaration (imported here)
    (toy,) = record.results
    assert type(toy).__name__ == "ToyRecord" and toy.iters == 7
    assert toy.seconds.shape == (3, 2) and np.all(toy.seconds > 0)
    assert record.attrs["config"]["options"] == {"iter": 7, "samples": 3}
    assert record.attrs["config"]["msgspersample"] == 1000  # IMB-MPI1's -iter untouched
    if fmt == "imb":
        assert r.stdout.startswith("## toy: 7 barriers per sample\n")
        assert r.stdout.endswith("## toy end\n")
    if fmt == "json":
        (entry,) = json.loads(r.stdout)["results"]
        assert entry["suite"] == "toy" and entry["iters"] == 7 and entry["samples"] == 3
    if fmt == "csv":
        assert r.stdout.splitlines()[0] == "sample,t_slowest_us"
        assert len(r.stdout.splitlines()) == 4


def test_toy_options_from_toml_and_their_rules(tmp_path: Path) -> None:
    cfg = tmp_path / "toy.toml"
    cfg.write_text("[toy]\niter = 5\nsamples = 2\n")
    out = tmp_path / "t.h5"
    r = mpirun(2, "imb", "toy", "--config", str(cfg), "-o", str(out), "--format", "csv",
               env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 3  # header and 2 samples
    bad = mpirun(2, "imb", "toy", "-iter", "0", env=ENV, timeout=60)
    assert bad.returncode == 2 and beff_lines(bad.stderr) == [
        "beff: error: -iter must be between 1 and 1000000, got 0"]
    cfg.write_text("[toy]\niter = 'many'\n")
    bad = mpirun(2, "imb", "toy", "--config", str(cfg), env=ENV, timeout=60)
    assert bad.returncode == 2 and "iter (from" in bad.stderr and "expects an integer" in \
        bad.stderr and len(beff_lines(bad.stderr)) == 1


def test_a_format_the_suite_does_not_render_is_refused(tmp_path: Path) -> None:
    r = mpirun(2, "imb", "toy", "--format", "sum", env=ENV, timeout=60)
    assert r.returncode == 2
    assert beff_lines(r.stderr) == ["beff: error: --format: toy results come as "
                                    "table|imb|json|csv, not 'sum'"]
    cfg = tmp_path / "f.toml"
    cfg.write_text('format = "sum"\n')
    r = mpirun(2, "imb", "toy", "--config", str(cfg), "-o", str(tmp_path / "x.h5"),
               env=ENV, timeout=60)
    assert r.returncode == 2 and "toy results come as table|imb|json|csv, not 'sum'" in \
        r.stderr
    assert not (tmp_path / "x.h5").exists()


def test_the_toy_is_unknown_without_the_plugin_and_beff_never_names_it() -> None:
    r = mpirun(1, "imb", "toy", env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.returncode == 2 and "unknown IMB suite 'toy'" in r.stderr
    listed = beff("list", env=ENV)
    assert listed.returncode == 0 and "Toy suite (a test plug-in)" in listed.stdout
    named = [p for p in (ROOT / "beff").rglob("*.py") if "toy" in p.read_text().lower()]
    assert named == []
