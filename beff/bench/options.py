"""IMB-MPI1's options, declared once (:class:`beff.core.options.Option`), for the suites the
IMB engine runs. Each IMB-style suite lists the ones its IMB component has (``for_suite``):
a flag the component lacks is then no flag of that suite, refused while parsing, as that IMB
binary refuses it (IMB_NOTES §2). Their TOML table is ``[imb]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from beff.core.errors import UsageError
from beff.core.options import MAX_COUNT, MAX_TIME_S, Option

ITER_POLICIES = ("dynamic", "multiple_np", "auto", "off")
AGGREGATE_MODES = ("aggregate", "non_aggregate", "multi")
DATA_TYPES = ("byte", "char", "int", "float", "double")
RED_DATA_TYPES = ("char", "int", "float", "double")
MAX_MSGLOG = 34  # messages up to 16 GiB (beyond a C int count as blocks: core/counts.py)
# IMB_mem_info.h defaults used by ``-off_cache -1``.
DEFAULT_CACHE_MB = 8.0
DEFAULT_CACHE_LINE = 64


def _msglog(text: str, flag: str) -> dict[str, Any]:
    """``-msglog [min:]max`` (a single value n means 0:n)."""
    parts = text.split(":")
    try:
        if len(parts) == 1:
            lo, hi = 0, int(parts[0])
        elif len(parts) == 2:
            lo, hi = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise UsageError(f"{flag} expects [min:]max with integers, got {text!r}") from None
    if lo > hi >= 0:
        raise UsageError(f"{flag} min must not exceed max, got {text!r}")
    return {"msglog_min": lo, "msglog_max": hi}


def _iter(text: str, flag: str) -> dict[str, Any]:
    """``-iter msgspersample[,overall_vol_MiB[,msgs_nonaggr]][,policy]``."""
    out: dict[str, Any] = {}
    numbers: list[int] = []
    for token in [t for t in text.split(",") if t]:
        if token.lower() in ITER_POLICIES:
            out["iter_policy"] = token.lower()
            continue
        try:
            numbers.append(int(token))
        except ValueError:
            raise UsageError(f"{flag} expects an integer, got {token!r}") from None
    if len(numbers) > 3:
        raise UsageError(f"{flag} takes at most three numbers, got {text!r}")
    out.update(zip(("msgspersample", "overall_vol_mib", "msgs_nonaggr"), numbers,
                   strict=False))
    if not out:
        raise UsageError(f"{flag} expects msgspersample[,overall_vol[,msgs_nonaggr]][,policy]")
    return out


def _off_cache(text: str, flag: str) -> Any:
    """``-off_cache cache_size[,line]`` in MiB, as IMB: a negative size alone means the
    defaults (8 MiB, 64 B lines); a size <= 0 otherwise turns the mode off."""
    parts = text.split(",")
    try:
        if len(parts) > 2:
            raise ValueError
        size = float(parts[0])
        line = int(parts[1]) if len(parts) > 1 else DEFAULT_CACHE_LINE
    except ValueError:
        raise UsageError(f"{flag} expects cache_size[,cache_line_size], got {text!r}") from None
    if line <= 0:
        raise UsageError(f"{flag} line size must be positive, got {text!r}")
    if size < 0 and len(parts) == 1:
        return (DEFAULT_CACHE_MB, DEFAULT_CACHE_LINE)
    return (size, line) if size > 0 else None


def _map(text: str, flag: str) -> Any:
    try:
        p, q = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"{flag} expects PxQ, got {text!r}") from None
    return (p, q)


def _sizes(text: str, flag: str) -> Any:
    """``-msgsize a,b,c``: comma- or whitespace-separated byte counts."""
    sizes: list[int] = []
    for token in text.replace(",", " ").split():
        try:
            sizes.append(int(token))
        except ValueError:
            raise UsageError(f"{flag}: not a non-negative integer: {token!r}") from None
    if not sizes:
        raise UsageError(f"{flag}: no message lengths given")
    return sizes


def _cache(value: Any, name: str) -> Any:
    """off_cache: None, or (MiB > 0, line size in bytes)."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise UsageError(f"{name} expects two numbers, got {value!r}")
    size = OFF_CACHE_SIZE.check(value[0], name)
    line = value[1]
    if isinstance(line, bool) or not isinstance(line, int) or not 1 <= line <= 1 << 20:
        raise UsageError(f"{name}: expected an integer between 1 and 1048576, got {line!r}")
    return (size, line)


OFF_CACHE_SIZE = Option("off_cache", float, None, "", lo=1e-9, hi=1 << 20)

# Benchmark selection: every IMB-style suite with a benchmark list has these.
NAMES = (
    Option("benchmarks", list, [], "benchmark names (case-insensitive; default: the "
           "suite's default list)", positional=True, table="imb", metavar="NAME"),
    Option("include", list, [], "further benchmarks, run first", flags=("-include",),
           words=True, table="imb", metavar="a,b"),
    Option("exclude", list, [], "benchmarks left out", flags=("-exclude",), words=True,
           table="imb", metavar="a,b"),
    Option("input_file", str, None, "file of benchmark names, one per line",
           flags=("-input",), optional=True, table="imb", metavar="FILE"),
)

IMB = (
    Option("msglog", str, None, "message lengths 0, 2^min .. 2^max", flags=("-msglog",),
           text=_msglog, sets=(("msglog_min", "min"), ("msglog_max", "max")),
           metavar="[min:]max"),
    Option("msglog_min", int, 0, "smallest message length, as log2", toml_only=True, lo=0,
           hi=MAX_MSGLOG, table="imb"),
    Option("msglog_max", int, 22, "largest message length, as log2", toml_only=True, lo=0,
           hi=MAX_MSGLOG, table="imb"),
    Option("msglen_file", str, None, "file of message lengths, one per line (k, m suffixes)",
           flags=("-msglen",), optional=True, table="imb", metavar="FILE"),
    Option("msglen", list, None, "message lengths in bytes", flags=("-msgsize",),
           optional=True, item=int, lo=0, hi=1 << MAX_MSGLOG, text=_sizes, table="imb",
           metavar="a,b,c"),
    Option("zero_size", bool, True, "measure the 0-byte message", flags=("-zero_size",),
           table="imb"),
    Option("iter", str, None, "repetitions: msgspersample[,overall_vol_MiB[,msgs_nonaggr]]"
           "[,policy]", flags=("-iter",), text=_iter,
           sets=(("msgspersample", "msgspersample"), ("overall_vol_mib", "overall_vol"),
                 ("msgs_nonaggr", "msgs_nonaggr"), ("iter_policy", "policy")),
           metavar="n[,vol_MiB[,nonaggr]]"),
    Option("msgspersample", int, 1000, "repetitions per sample", toml_only=True, lo=1,
           hi=MAX_COUNT, table="imb"),
    Option("overall_vol_mib", int, 40, "MiB moved per sample at most", toml_only=True, lo=1,
           hi=1 << 20, table="imb"),
    Option("msgs_nonaggr", int, 100, "repetitions in non-aggregate mode", toml_only=True, lo=1,
           hi=MAX_COUNT, table="imb"),
    Option("iter_policy", str, "dynamic", "how repetitions are chosen",
           flags=("-iter_policy",), choices=ITER_POLICIES, table="imb"),
    Option("time", float, 10.0, "seconds per message size at most (calibration)",
           flags=("-time",), lo=1e-6, hi=MAX_TIME_S, table="imb", metavar="SECS"),
    Option("mem_gb", float, 1.0, "GB of buffers per process at most", flags=("-mem",),
           lo=1e-6, hi=1e6, table="imb", metavar="GB"),
    Option("warm_up", bool, True, "untimed warm-up before each size", flags=("-warm_up",),
           table="imb"),
    Option("npmin", int, None, "smallest process count", flags=("-npmin",), lo=1,
           hi=1 << 31, optional=True, table="imb", metavar="N"),
    Option("multi", int, None, "all groups at once (0: report the slowest, 1: every group)",
           flags=("-multi",), lo=0, hi=1, optional=True, table="imb", metavar="0|1"),
    Option("map", tuple, None, "process grid PxQ", flags=("-map",), lo=1, hi=1 << 31,
           optional=True, item=int, text=_map, table="imb", metavar="PxQ"),
    Option("off_cache", tuple, None, "buffers out of the cache: cache_size[,line] in MiB",
           flags=("-off_cache",), optional=True, item=float, text=_off_cache,
           convert=_cache, table="imb", metavar="size[,line]"),
    Option("sync", bool, True, "MPI_Barrier before each repetition", flags=("-sync",),
           table="imb"),
    Option("root_shift", bool, False, "move the root of rooted collectives",
           flags=("-root_shift",), table="imb"),
    Option("window_size", int, 256, "messages in flight in Uniband and Biband",
           flags=("-window_size",), lo=1, hi=1 << 20, table="imb", metavar="N"),
    Option("data_type", str, "byte", "data type of the messages", flags=("-data_type",),
           choices=DATA_TYPES, table="imb"),
    Option("red_data_type", str, "float", "data type of reductions",
           flags=("-red_data_type",), choices=RED_DATA_TYPES, table="imb"),
    Option("msg_pause", bool, False, "pause between message sizes", flags=("-msg_pause",),
           table="imb"),
    Option("aggregate_mode", str, "multi", "modes to run: aggregate, non_aggregate or "
           "multi (both)", flags=("-aggregate_mode",), choices=AGGREGATE_MODES, table="imb"),
)
# IMB-MPI1's own: beff's tail latencies (not IMB's flags; beff.bench.iterations)
PER_ITERATION = (
    Option("per_iteration", bool, False, "also record single iterations' times (p50, p90, "
           "p99 and max per size)", flags=("--per-iteration",), table="imb"),
    Option("per_iteration_max", int, 10000, "single iterations kept per size and rank at "
           "most (more are subsampled evenly)", flags=("--per-iteration-max",), lo=1,
           hi=100000, table="imb", metavar="N"),
)
# How collectives start (beff.bench.window): IMB's barrier, or synchronised clocks' windows.
START_POLICIES = ("barrier", "window")
START_POLICY = (
    Option("start_policy", str, "barrier", "how each collective call starts: after a "
           "barrier (IMB) or at a common time on synchronised clocks (window)",
           flags=("--sync",), choices=START_POLICIES, table="imb"),
)
BY_KEY = {o.key: o for o in (*NAMES, *IMB, *PER_ITERATION, *START_POLICY)}


def switch(true: tuple[str, ...], false: tuple[str, ...]) -> Callable[[Any, str], bool]:
    """The converter of a flag that takes an IMB component's words for on and off (any
    case), listed in an error as that component's help lists them."""

    def check(value: Any, where: str) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in true:
            return True
        if text in false:
            return False
        raise UsageError(f"{where} expects one of {'|'.join(true + false)}, got {value!r}")

    return check


def for_suite(*, without: tuple[str, ...] = ()) -> tuple[Option, ...]:
    """The benchmark names and IMB-MPI1's options; the keys ``without`` (the flags that
    suite's IMB component lacks) keep their defaults and cannot be set."""
    return tuple(replace(o, fixed=True) if o.key in without else o for o in (*NAMES, *IMB))


def check_together(values: dict[str, Any], given: set[str]) -> None:
    """IMB's rules that tie values together (from flags and TOML alike)."""
    lo, hi = values.get("msglog_min"), values.get("msglog_max")
    if lo is not None and hi is not None and lo > hi:
        raise UsageError(f"msglog_min ({lo}) must not exceed msglog_max ({hi})")
    if values.get("msglen_file") is not None and values.get("msglen") is not None:
        raise UsageError("-msglen and -msgsize cannot be combined")
