"""The commands that start MPI and are typer commands for their help (``beff run``, ``io``,
``map``, a plug-in's ``beff NAME``, ``info``, ``prepare``): every rank parses them here, with
argparse from the options' declarations (:func:`beff.cli.options.parse_launch`), so that no
rank loads typer or rich to read its command line, and every rank reaches the same verdict
before MPI_Init. ``--help`` is typer's (:mod:`beff.cli.app`)."""

from __future__ import annotations

import sys

# Commands of the typer app that are not a suite's (a suite named so gets no command)
RESERVED = ("list", "describe", "show", "compare", "import", "report", "plot", "info", "imb",
            "prepare")
HELP = ("-h", "--help")


def launch(args: list[str]) -> bool:
    """Run ``args`` if they name a command that starts MPI (else False: typer's)."""
    if not args or any(a in HELP for a in args[1:]):
        return False
    name, rest = args[0], args[1:]
    from beff.cli import options as O
    from beff.core import runtime
    from beff.core import suite as suites

    if name == "info":
        from beff.cli.info import run_info
        from beff.core.options import SHARED_BY_KEY

        level = O.parse_launch("beff info", [SHARED_BY_KEY["thread_level"]], rest)
        runtime.run_job(level.get("thread_level", "single"), lambda MPI: None, run_info)
        return True
    if name == "prepare":
        from beff.cli.prepare import check, run_prepare

        chosen = check(O.parse_launch("beff prepare", [], rest, names="names").get("names", []))
        runtime.run_job("single", lambda MPI: chosen, run_prepare)
        return True
    if name in RESERVED:
        return False
    suite = suites.by_command(f"beff {name}")
    if suite is None:
        return False
    overrides = O.parse_suite_command(suite, rest)
    overrides["argv"] = sys.argv[1:]
    from beff import runner  # h5py, numpy: after the flags

    runner.run(suite.name, overrides)
    return True
