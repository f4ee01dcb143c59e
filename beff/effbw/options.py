"""b_eff's options (``beff run``), declared once; their TOML table is ``[b_eff]``."""

from __future__ import annotations

from beff.core.config import parse_size
from beff.core.options import Option

# The three methods of b_eff 3.6, then two opt-in ones that never enter the official b_eff.
METHODS = ("sendrecv", "alltoallv", "nonblocking", "irecv-send", "isend-recv")


def _size(text: str, flag: str) -> int:
    return parse_size(text, flag)


OPTIONS = (
    Option("memory_per_proc", int, None, "memory per process (e.g. 512MiB, 2G); Lmax = "
           "memory/128. Default: the node's physical memory / ranks on it",
           flags=("--memory-per-proc",), lo=1 << 20, hi=1 << 50, optional=True, mib=True,
           text=_size, table="b_eff", metavar="SIZE"),
    Option("quick", bool, False, "b_eff's SHORT mode: 2 repetitions, 0.05 s per loop, 6 "
           "random patterns", flags=("--quick",), table="b_eff"),
    Option("time_per_loop", float, None, "seconds per (length, method) summed over all "
           "patterns (default 0.5; 0.05 with --quick)", flags=("--time-per-loop",), lo=1e-6,
           hi=3600.0, optional=True, table="b_eff", metavar="SECS"),
    Option("seed", int, None, "seed of the random patterns (default: the time in seconds, "
           "as b_eff 3.6)", flags=("--seed",), lo=0, hi=(1 << 32) - 1, optional=True,
           table="b_eff", metavar="N"),
    Option("methods", list, ["sendrecv", "alltoallv", "nonblocking"], "comma-separated: "
           "sendrecv, alltoallv, nonblocking (b_eff 3.6, the default) and the opt-in "
           "irecv-send, isend-recv", flags=("--methods",), choices=METHODS, table="b_eff",
           metavar="a,b"),
    Option("extra_methods_in_beff", bool, False, "let the opt-in methods enter the b_eff "
           "figure (they never do otherwise)", flags=("--extra-methods-in-beff",),
           table="b_eff"),
)
