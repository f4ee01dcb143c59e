"""One option declaration in a plug-in outside beff gives its suites everything (no MPI):
an IMB-style flag (``beff imb toy -samples``), a typer option (``beff toyrun --samples``),
a TOML key in each suite's table, help text in `-help`, `--help` and `beff list`, and one
rule that checks every value, whichever way it came."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beff.core import suite as suites
from beff.core.config import build_config
from beff.core.errors import UsageError
from tests.mpirun import beff, beff_lines
from tests.plugin import install

site = pytest.fixture(scope="module", name="site")(install.installed)


def test_installing_the_plugin_lists_its_suites(site: Path) -> None:
    """The wheel's entry points (group beff.suites) are what beff finds."""
    listed = beff("list", env=install.env(site))
    assert listed.returncode == 0, listed.stderr
    text = " ".join(listed.stdout.split())
    assert "toy: Toy suite (a test plug-in); run with `beff imb toy`" in text
    assert "-samples: samples per run (default 3)" in text
    assert "run with `beff toyrun` --iter: barriers per sample (default 4)" in text
    assert "--samples: samples per run (default 3)" in text
    assert "toy" not in beff("list", env={"PYTHONPATH": None}).stdout


def test_help_comes_from_the_declaration(site: Path) -> None:
    imb = beff("imb", "toy", "-help", env=install.env(site))
    assert imb.returncode == 0 and "  -samples N: samples per run (default 3)\n" in imb.stdout
    assert "--samples" not in imb.stdout  # IMB's style in `beff imb`
    typed = beff("toyrun", "--help", env={**install.env(site), "COLUMNS": "200"})
    assert typed.returncode == 0, typed.stderr
    assert re.search(r"--samples N +Samples per run \(default 3\)\.", typed.stdout)
    assert "--check" not in typed.stdout  # a shared option the suite declares unused


@pytest.mark.parametrize(("argv", "line"), [
    (["imb", "toy", "-samples", "0"], "-samples must be between 1 and 1000, got 0"),
    (["imb", "toy", "-samples", "many"], "-samples expects an integer, got 'many'"),
    (["toyrun", "--samples", "1001"], "--samples must be between 1 and 1000, got 1001"),
    (["imb", "toy", "--samples", "2"], "unknown option '--samples' (see `beff imb toy -help`)"),
    (["imb", "toy", "-msglog", "3"], "-msglog is not an option of beff imb toy (it is one of "
                                     "beff imb mpi1, nbc, mpi4, ext, rma, p2p, io"),
    (["imb", "toy", "--format", "sum"], "--format: toy results come as table|imb|json|csv, "
                                        "not 'sum'"),
])
def test_the_rule_checks_every_flag_before_mpi(site: Path, argv: list[str], line: str) -> None:
    """Refused while parsing, before MPI_Init: one line, exit code 2."""
    r = beff(*argv, env=install.env(site))
    assert r.returncode == 2 and len(beff_lines(r.stderr)) == 1, r.stderr
    assert beff_lines(r.stderr)[0].startswith("beff: error: " + line), r.stderr


def test_toml_keys_in_each_suites_table(site: Path, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[toy]\nsamples = 2\n[toyrun]\nsamples = 5\niter = 9\n")
    toy = build_config({}, str(path), suites.get("toy"))
    run = build_config({}, str(path), suites.get("toyrun"))
    assert (toy.options.samples, toy.options.iter) == (2, 4)
    assert (run.options.samples, run.options.iter) == (5, 9)
    path.write_text("[toy]\nsamples = 0\n")
    with pytest.raises(UsageError, match=re.escape(
            f"samples (from {path}) must be between 1 and 1000, got 0")):
        build_config({}, str(path), suites.get("toyrun"))  # another suite's table: checked
