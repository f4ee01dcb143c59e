"""``beff imb SUITE [IMB flags]``: IMB's command line, parsed by the suite's own parser
(generated from its options' declarations, :mod:`beff.cli.options`) before anything heavy is
imported; typer is not involved (``beff imb`` takes IMB's flags)."""

from __future__ import annotations

import sys

from beff.core.errors import UsageError

HELP = ("-h", "--help", "-help")


def imb_help() -> str:
    """`beff imb --help`: the suites, and IMB-MPI1's flags with beff's own."""
    from beff.cli.options import imb_help as suite_help
    from beff.core import suite as suites

    known = [s for s in suites.suites() if s.command.startswith("beff imb ")]
    head = ("usage: mpiexec -n P beff imb SUITE [flags] [benchmark names]\n\n"
            f"SUITE: {', '.join(s.name for s in known)}. Each takes its IMB component's flags"
            " (as in IMB 2021.11) and beff's own; `beff imb SUITE -help` lists them.\n\n")
    return head + suite_help(suites.get("mpi1"))


def imb_main(argv: list[str]) -> None:
    """``beff imb SUITE [IMB flags] [names]``: parse IMB's flags, then run the suite."""
    if argv and argv[0] in HELP:
        sys.stdout.write(imb_help())
        return
    from beff.cli.options import imb_help as suite_help
    from beff.cli.options import parse_imb
    from beff.core import suite as suites

    def known() -> str:
        return ", ".join(s.name for s in suites.suites() if s.command.startswith("beff imb "))

    if not argv:
        raise UsageError(f"beff imb needs a suite: {known()} (see `beff imb --help`)")
    suite, rest = argv[0].lower(), argv[1:]
    chosen = suites.named(suite)  # beff's own: no other distribution's entry points read
    if chosen is None or not chosen.command.startswith("beff imb "):
        raise UsageError(f"unknown IMB suite {argv[0]!r} (known: {known()})")
    if any(a in HELP for a in rest):
        sys.stdout.write(suite_help(chosen))
        return
    if "-list" in rest:  # IMB's habit: the suite's benchmarks
        from beff.cli.app import list_cmd

        list_cmd(suite)
        return
    overrides = parse_imb(chosen, rest)
    if chosen.benchmarks:
        from beff.bench.registry import resolve  # the kernels (numpy): after the flags

        resolve(suite, overrides.get("benchmarks", []), overrides.get("include", []),
                overrides.get("exclude", []))
    overrides["argv"] = ["imb", suite, *rest]
    from beff import runner  # h5py, numpy: parse first

    runner.run(suite, overrides)
