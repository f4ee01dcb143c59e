"""``beff imb SUITE [IMB flags]``: IMB's command line, parsed by IMB's rules (beff.bench.args)
before anything heavy is imported; typer is not involved (``beff imb`` takes IMB's flags)."""

from __future__ import annotations

import sys

from beff.core.errors import UsageError

IMB_HELP_TEMPLATE = """usage: mpiexec -n P beff imb SUITE [IMB flags] [benchmark names]

SUITE: {suites}. IMB's own flags, as in IMB 2021.11:
  -msglog [min:]max   -msglen FILE   -msgsize a,b,c   -npmin N   -multi 0|1   -map PxQ
  -iter n[,vol_MiB[,nonaggr]]   -iter_policy dynamic|multiple_np|auto|off   -time SECS
  -mem GB   -off_cache size[,line]   -input FILE   -include a,b   -exclude a,b
  -thread_level single|funneled|serialized|multiple   -sync on|off   -root_shift on|off
  -zero_size on|off   -warm_up on|off   -msg_pause on|off   -window_size N
  -data_type byte|char|int|float|double   -red_data_type char|int|float|double
  -aggregate_mode aggregate|non_aggregate|multi (ext, rma, io: the modes to run; default both)
  (mt runs under -thread_level multiple always, with -threads N, else OMP_NUM_THREADS, threads
  per rank; its own flags below)
beff's own (as in `beff run` and `beff io`):
{shared}io only (IMB-IO):
  --io-dir PATH (where the files go; default the current directory; each run's own names)
  --keep-files (leave the files; default: deleted before and after each benchmark)
  --drop-cache (posix_fadvise DONTNEED on a read benchmark's file after writing it)
  --hint key=value (repeatable)   --hints FILE (key=value or "key value" per line)
  The nonblocking I* benchmarks run IMB-IO's 10 ms CPU kernel per transfer: about -time
  seconds per size (-time 1 for a first look).
"""


def imb_help() -> str:
    """`beff imb --help`: IMB's flags, then beff's own from their declarations."""
    import textwrap

    from beff.core.config import RULES

    names = {int: " N", float: " SECS", str: " PATH"}
    lines = []
    for key, rule in RULES.items():
        if rule.family != "common" or not rule.flags or key == "thread_level":
            continue
        value = "" if rule.kind is bool else (
            " table|imb|json|csv" if key == "format" else
            " " + "|".join(rule.choices) if rule.choices else names.get(rule.kind, ""))
        lines.append(textwrap.fill(f"{' / '.join(rule.flags)}{value}: {rule.help}", width=92,
                                   initial_indent="  ", subsequent_indent="      "))
    from beff.core import suite as suites

    known = [s for s in suites.suites() if s.command.startswith("beff imb ")]
    own = []
    for s in known:
        for o in s.options:
            own.append(textwrap.fill(f"{' / '.join(o.flags) or o.key}: {o.help} (default "
                                     f"{o.default})", width=92, initial_indent="  ",
                                     subsequent_indent="      "))
        if s.options:
            own.insert(len(own) - len(s.options), f"{s.name} only (its own meanings):")
    return IMB_HELP_TEMPLATE.format(shared="\n".join(lines) + "\n",
                                    suites=", ".join(s.name for s in known)) \
        + ("\n".join(own) + "\n" if own else "")



def imb_main(argv: list[str]) -> None:
    """``beff imb SUITE [IMB flags] [names]``: parse IMB's flags, then run the suite."""
    if argv and argv[0] in ("-h", "--help", "-help"):
        sys.stdout.write(imb_help())
        return
    from beff.bench import args as imb_args
    from beff.core import suite as suites

    known = [s for s in suites.suites() if s.command.startswith("beff imb ")]
    if not argv:
        raise UsageError(f"beff imb needs a suite: {', '.join(s.name for s in known)} (see "
                         "`beff imb --help`)")
    suite, rest = argv[0].lower(), argv[1:]
    if any(a in ("-h", "--help", "-help") for a in rest):
        sys.stdout.write(imb_help())
        return
    if "-list" in rest:  # IMB's habit: the suite's benchmarks
        from beff.cli.app import list_cmd

        list_cmd(suite)
        return
    chosen = next((s for s in known if s.name == suite), None)
    if chosen is None:
        raise UsageError(f"unknown IMB suite {argv[0]!r} (known: "
                         f"{', '.join(s.name for s in known)})")
    imb_args.check_suite(suite, rest)
    overrides = imb_args.parse(rest, chosen)
    if chosen.benchmarks:
        from beff.bench.registry import resolve  # the kernels (numpy): after the flags

        resolve(suite, overrides.get("benchmarks", []), overrides.get("include", []),
                overrides.get("exclude", []))
    overrides["argv"] = ["imb", suite, *rest]
    from beff import runner  # h5py, numpy: parse first

    runner.run(suite, overrides)
