"""IMB-MT's own flags, in its syntax, checked the same from a flag and from TOML ([mt]).

``-count 1,2,4,8`` (element counts), ``-repeat``, ``-warmup``, ``-window_size``, ``-barrier
on|off|special``, ``-datatype int|char``, ``-stride``, ``-check`` (IMB's words for on and off),
``-malloc_align``, ``-malloc_algo serial|continuous|parallel``, and beff's ``-threads`` (the
threads per rank; 0: from ``OMP_NUM_THREADS``, as IMB-MT's OpenMP reads it).
"""

from __future__ import annotations

import os
from typing import Any

from beff.bench.options import switch
from beff.core.errors import UsageError
from beff.core.suite import Option

DEFAULT_COUNT = "1,2,4,8"
MAX_COUNT = 1 << 28  # elements per message (1 GiB of MPI_INT)
MAX_THREADS = 256
TRUE = ("on", "yes", "true", "enable", "1")  # IMB's args_parser, any case of these
FALSE = ("off", "no", "false", "disable", "0")
TYPE_SIZES = {"int": 4, "char": 1}


def check_count(value: Any, where: str) -> str:
    """``-count a,b,c``: element counts, 0 to MAX_COUNT, in the order given; stored as
    "a,b,c"."""
    what = f"element counts such as 1,2,4,8 (0 to {MAX_COUNT})"
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, list):
        value = ",".join(map(str, value))
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where} expects {what}, got {value!r}")
    counts = []
    for token in value.split(","):
        try:
            count = int(token.strip())
        except ValueError:
            raise UsageError(f"{where} expects {what}, got {value!r}") from None
        if not 0 <= count <= MAX_COUNT:
            raise UsageError(f"{where} expects {what}, got {value!r}")
        counts.append(count)
    return ",".join(map(str, counts))


def parse_count(value: str) -> list[int]:
    """The element counts of a checked ``-count``."""
    return [int(v) for v in value.split(",")]


check_switch = switch(TRUE, FALSE)


def threads_from_env(env: dict[str, str] | None = None) -> tuple[int, str]:
    """(threads per rank, where the number came from) as IMB-MT's OpenMP finds it: the first
    number of ``OMP_NUM_THREADS`` ("4" or "4,2"), else the CPUs this process may run on."""
    env = dict(os.environ) if env is None else env
    text = env.get("OMP_NUM_THREADS", "").strip()
    if text:
        first = text.split(",")[0].strip()
        if not first.isdigit() or not 1 <= int(first) <= MAX_THREADS:
            raise UsageError(f"OMP_NUM_THREADS={text!r}: expected a number of threads from 1 "
                             f"to {MAX_THREADS} (or give -threads N)")
        return int(first), "OMP_NUM_THREADS"
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_THREADS)), "the CPUs available (OMP_NUM_THREADS unset)"


OPTIONS = (
    Option("count", str, DEFAULT_COUNT, "element counts of the messages, comma-separated "
           "(bytes = count x sizeof(-datatype) x threads, as IMB-MT prints them)",
           flags=("-count",), convert=check_count),
    Option("repeat", int, 1000, "timed iterations per count", flags=("-repeat",), lo=1,
           hi=(1 << 31) - 1),
    Option("warmup", int, 100, "untimed iterations before them", flags=("-warmup",), lo=0,
           hi=(1 << 31) - 1),
    Option("window_size", int, 64, "messages in flight per iteration of UniBandMT and "
           "BiBandMT", flags=("-window_size",), lo=1, hi=1 << 20),
    Option("barrier", str, "on", "how threads and ranks meet between measurements: "
           "MPI_Barrier (on), zero-byte MPI_Sendrecv rounds (special) or not at all (off)",
           flags=("-barrier",), choices=("on", "off", "special")),
    Option("datatype", str, "int", "element type: MPI_INT or MPI_CHAR", flags=("-datatype",),
           choices=tuple(TYPE_SIZES)),
    Option("stride", int, 0, "distance of the partner rank (0: half the ranks)",
           flags=("-stride",), lo=0, hi=1 << 30),
    Option("check", bool, False, "verify received data (MPI_INT only)",
           flags=("-check", "--check"), convert=check_switch),
    Option("malloc_align", int, 64, "alignment of each thread's buffers in bytes",
           flags=("-malloc_align",), lo=1, hi=1 << 21),
    Option("malloc_algo", str, "serial", "buffers allocated one per thread by the main "
           "thread (serial), as one block (continuous), or by each thread (parallel)",
           flags=("-malloc_algo",), choices=("serial", "continuous", "parallel")),
    Option("threads", int, 0, "threads per rank (beff's own; 0: OMP_NUM_THREADS, else the "
           "CPUs available, as IMB-MT's OpenMP)", flags=("-threads",), lo=0, hi=MAX_THREADS),
)
