"""Every rank parses ``beff run``, ``io``, ``map`` with the launch parser (argparse, from the
options' declarations), and typer renders their help: the two must reach the same verdict on
the same command line, the same values or both a usage error, or a rank could start MPI that
typer would have refused. Here both parse one corpus of good and bad lines, with no MPI."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from beff.cli import options as O
from beff.core import suite as suites
from beff.core.errors import UsageError

LINES = {
    "beff": [
        [], ["--quick"], ["--quick", "--seed", "7", "--methods", "sendrecv,alltoallv"],
        ["--memory-per-proc", "1MiB", "--time-per-loop", "0.01"], ["--time-per-loop", "x"],
        ["--seed", "-3"], ["--format", "json"], ["--format", "JSON"], ["--format", "imb"],
        ["--no-progress"], ["--progress", "--no-progress"], ["-o", "r.h5", "--force"],
        ["--output=r.h5"], ["--bogus"], ["--quick", "extra"], ["--seed"], ["--no-quick"],
        ["--timeout", "0"], ["--timeout", "30", "--stall-timeout", "5"],
        ["--thread-level", "multiple"], ["--thread-level", "many"], ["--methods", "nope"],
        ["--seed", "1", "--seed", "2"], ["--memory-per-proc", "12Q"],
    ],
    "beffio": [
        ["--quick", "-T", "1"], ["-T", "0"], ["--hint", "a=b", "--hint", "c=d"],
        ["--hint", "novalue"], ["--rewrite", "--noshared", "--dir", "."], ["--dir"],
        ["--quick", "--check", "--format", "sum"], ["--total-memory", "4GiB"],
    ],
    "map": [
        ["--size", "16KiB", "--window", "2", "--rounds", "3"], ["--size", "0"],
        ["--all-ranks"], ["--window", "x"], ["--rounds", "-1"], ["--size", "1MiB", "-o",
                                                                    "m.h5"],
    ],
}


def typer_verdict(suite: suites.Suite, argv: list[str]) -> dict[str, Any] | str:
    got: dict[str, Any] = {}
    app = typer.Typer()
    app.command()(O.typer_command(suite, lambda s, o: got.update(o)))
    try:
        app(args=argv, standalone_mode=False)
    except UsageError:
        return "error"
    except Exception as exc:  # click's usage errors (typer's own copy of click)
        if getattr(exc, "exit_code", None) != 2:
            raise
        return "error"
    got.pop("argv")
    return got


def launch_verdict(suite: suites.Suite, argv: list[str]) -> dict[str, Any] | str:
    try:
        return O.parse_suite_command(suite, argv)
    except UsageError:
        return "error"


@pytest.mark.parametrize("name,argv", [(n, a) for n, lines in LINES.items() for a in lines])
def test_launch_parser_agrees_with_typer(name: str, argv: list[str]) -> None:
    suite = suites.get(name)
    assert launch_verdict(suite, argv) == typer_verdict(suite, argv)


def test_the_corpus_holds_both_verdicts() -> None:
    """The control: the corpus has lines both parsers take and lines both refuse."""
    verdicts = [launch_verdict(suites.get(n), a) for n, lines in LINES.items() for a in lines]
    assert "error" in verdicts and any(v not in ("error", {}) for v in verdicts)
